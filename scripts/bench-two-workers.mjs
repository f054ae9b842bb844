// Item 11 of `npm run bench`: what the converter's Worker of its own buys the API and what it costs a complete.
//
// 1. Reads while photos complete: the product read (`GET /products/{id}`, the bench fixture's token) one at a
//    time, one every 20 ms (the pause after each answer) for N seconds with nothing else running (quiet), then
//    the same while 12 MP JPEGs (4000 × 3000, photo-like pixels, quality 85) complete back to back (prepare,
//    PUT, complete, again; one at a time) through the two Workers (busy); twice, the phases alternating, the
//    samples of each kind pooled. A conversion runs in the converter's isolate, in a `wrangler dev` process of
//    its own: the API's isolate only waits on the binding, so a read should not wait on a conversion's CPU.
//    Goals: busy max ≤ quiet p99 + 50 ms, busy p99 ≤ 2 × quiet p99. The busy reads are also given by what the
//    completes were doing when each was sent (the PUT streams the file through the API's own isolate).
// 2. Complete through the two Workers against the conversion in-process: on the counting Worker
//    (scripts/bench-worker.ts), per round and the same JPEG, (a) a complete, (b) the conversion of the staged
//    bytes as complete runs it, asked through the CONVERTER binding (the converter reads the bytes from R2
//    through the API's callback and streams the WebP back, which the API writes to R2), (c) the same job run
//    by the converter's own code (`convertStill`) inside the API's isolate, reading and writing R2 the same
//    way, as a complete converted before the converter had a Worker of its own. Each is one HTTP request timed
//    by this process, the staging untimed; the three take turns within a round. (b) − (c) is what the second Worker adds to a conversion (goal
//    ≤ 10 ms); (a) − (c) adds the complete's own work (the coordinator, D1, sniffing, deleting the staged
//    bytes), measured alone by the 64 × 64 JPEG rows. A 12 MP 24-bit BMP (36 MB) shows what streaming the
//    largest file through the binding costs. Wall time, and the CPU time of both `wrangler dev`s' processes.
//
//   npm run bench:two-workers                 this part alone; rewrites its block of docs/benchmarks.md
//   npm run bench:two-workers -- --seconds=N  N seconds per phase of part 1 (default 15; 4 phases)

import { readdirSync, readFileSync } from "node:fs";
import sharp from "sharp";
import { bearer, productPath } from "./lib/bench-fixture.mjs";
import { prepareAndPut } from "./lib/bench-http.mjs";
import { loadImageHelpers, writeBmp } from "./lib/bench-images.mjs";
import { machineLine, num, percentile, spread, stats, table } from "./lib/bench-report.mjs";
import { descendants, isMain, log, step } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withBenchStore } from "./lib/bench-server.mjs";

const MINUTE = 60_000;
/** The pause after each read's answer. */
const READ_INTERVAL_MS = 20;
const DEFAULT_SECONDS = 15;
/** Quiet and busy phases of part 1, alternated (drift of a shared machine falls on both). */
const READ_ROUNDS = 2;
/** Rounds of part 2, after one untimed round. */
const SPLIT_ROUNDS = 9;
/** The goals of the converter's own Worker (issue 32). */
export const TWO_WORKER_GOALS = { busyMaxOverQuietP99Ms: 50, busyP99OverQuietP99: 2, bindingCostMs: 10 };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The JPEGs: 12 MP photo-like pixels (the tests' generator) at quality 85, and a 64 × 64 one. */
async function photos() {
  const images = await loadImageHelpers();
  const jpeg = async (name, width, height) => ({
    name,
    format: "jpeg",
    mime: "image/jpeg",
    bytes: await sharp(images.photoLike(width, height), { raw: { width, height, channels: 4 } })
      .removeAlpha()
      .jpeg({ quality: 85 })
      .toBuffer(),
  });
  return {
    large: await jpeg("12 MP JPEG, 4000×3000, quality 85", 4000, 3000),
    // The largest file a conversion streams through the binding (bench-convert.mjs's BMP input).
    bmp: {
      name: "12 MP BMP, 24-bit",
      format: "bmp",
      mime: "image/bmp",
      bytes: writeBmp(images.photoLike(4000, 3000), 4000, 3000),
    },
    small: await jpeg("64×64 JPEG (the fixed cost)", 64, 64),
  };
}

/** prepare + PUT of one of {@link photos}; the upload's id. */
const upload = (server, { bytes, format, mime }) =>
  prepareAndPut(server, { bytes, filename: `photo.${format}`, contentType: mime });

/**
 * CPU time in ms that `pids` (and every thread of each) have run, from /proc/<pid>/task/<tid>/schedstat
 * (nanoseconds); a process gone meanwhile counts nothing.
 */
function cpuMs(pids) {
  let ns = 0;
  for (const pid of pids) {
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        // the thread ended meanwhile
      }
    }
  }
  return ns / 1e6;
}

/** Every process of the two `wrangler dev`s: wrangler's own and the workerd processes below each. */
function serverPids(server) {
  return [server.child, server.converter].flatMap((child) => [child.pid, ...descendants(child.pid).map((p) => p.pid)]);
}

/**
 * `request()` timed: its wall time from this process, and with `pids` the CPU time those processes ran
 * meanwhile (what the request cost the two Workers, whatever else the machine ran).
 */
async function timed(request, pids) {
  const cpuBefore = pids ? cpuMs(pids) : 0;
  const start = performance.now();
  await request();
  const ms = performance.now() - start;
  return { ms, cpuMs: pids ? cpuMs(pids) - cpuBefore : null };
}

/** The timed complete of an uploaded JPEG ({@link timed}); it must convert. */
async function timedComplete(server, id, pids) {
  let response;
  let text;
  const figures = await timed(async () => {
    response = await fetch(`${server.url}/api/v1/media-uploads/${id}/complete`, { method: "POST", headers: bearer });
    text = await response.text();
  }, pids);
  if (response.status !== 201 || !JSON.parse(text).file_url?.endsWith(".webp")) {
    throw new Error(`complete: ${response.status} ${text.slice(0, 300)}`);
  }
  return figures;
}

// ---------------------------------------------------------------------------------------------
// 1. Reads while photos complete
// ---------------------------------------------------------------------------------------------

/**
 * Product reads one at a time, a pause of READ_INTERVAL_MS after each, until `until` (performance.now()); each
 * sample notes what `during()` said when the read was sent (the step of the completes under way).
 */
async function readUntil(server, until, during = () => "quiet") {
  const samples = [];
  while (performance.now() < until) {
    const step = during();
    const start = performance.now();
    const response = await fetch(`${server.url}/api/v1${productPath}`, { headers: bearer });
    await response.arrayBuffer();
    samples.push({ ms: performance.now() - start, during: step });
    if (response.status !== 200) throw new Error(`GET ${productPath}: ${response.status}`);
    await sleep(READ_INTERVAL_MS);
  }
  return samples;
}

function latencies(samples) {
  const sorted = samples.map((sample) => sample.ms).sort((a, b) => a - b);
  if (sorted.length === 0) return { n: 0, p50: null, p99: null, max: null };
  return { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) };
}

/** While `reading()`, 12 MP JPEGs complete one after another; `step` says which request is under way. */
function completeBackToBack(server, photo, reading) {
  const state = { step: "between", completes: [] };
  const done = (async () => {
    while (reading()) {
      state.step = "prepare + PUT";
      const id = await upload(server, photo);
      state.step = "complete";
      state.completes.push((await timedComplete(server, id)).ms);
      state.step = "between";
    }
  })();
  return { state, done };
}

/**
 * READ_ROUNDS rounds of quiet reads for `seconds`, then the same while 12 MP JPEGs complete back to back;
 * the samples of all quiet phases are pooled, and those of all busy phases.
 */
async function measureReads(server, photo, { seconds = DEFAULT_SECONDS } = {}) {
  // Untimed: the read's kept answer, the converter isolate's codec instances.
  await readUntil(server, performance.now() + 1000);
  await timedComplete(server, await upload(server, photo));

  const quietSamples = [];
  const busySamples = [];
  const completes = [];
  for (let round = 0; round < READ_ROUNDS; round++) {
    const quiet = await readUntil(server, performance.now() + seconds * 1000);
    quietSamples.push(...quiet);
    let reading = true;
    const loop = completeBackToBack(server, photo, () => reading);
    let busy;
    try {
      busy = await readUntil(server, performance.now() + seconds * 1000, () => loop.state.step);
    } finally {
      reading = false;
      await loop.done;
    }
    busySamples.push(...busy);
    completes.push(...loop.state.completes);
    const q = latencies(quiet);
    const b = latencies(busy);
    log(
      `  round ${round + 1}: quiet ${q.n} reads, p50 ${num(q.p50)} ms, p99 ${num(q.p99)} ms, max ${num(q.max)} ms; busy ${b.n} reads, p50 ${num(b.p50)} ms, p99 ${num(b.p99)} ms, max ${num(b.max)} ms; ${loop.state.completes.length} completes, ${spread(stats(loop.state.completes))} ms`,
    );
  }
  const result = {
    seconds,
    rounds: READ_ROUNDS,
    quiet: latencies(quietSamples),
    busy: latencies(busySamples),
    // The busy reads by what the completes were doing when each was sent: the conversion runs during
    // "complete" only; "prepare + PUT" streams the 12 MP file through the API's own isolate.
    busyDuring: Object.fromEntries(
      ["complete", "prepare + PUT", "between"].map((step) => [
        step,
        latencies(busySamples.filter((sample) => sample.during === step)),
      ]),
    ),
    completes: stats(completes),
    jpegBytes: photo.bytes.length,
  };
  log(
    `  all: quiet p50 ${num(result.quiet.p50)} p99 ${num(result.quiet.p99)} max ${num(result.quiet.max)} ms; busy p50 ${num(result.busy.p50)} p99 ${num(result.busy.p99)} max ${num(result.busy.max)} ms; during the complete p99 ${num(result.busyDuring.complete.p99)} max ${num(result.busyDuring.complete.max)} ms`,
  );
  return result;
}

// ---------------------------------------------------------------------------------------------
// 2. Complete through the two Workers against the conversion in-process
// ---------------------------------------------------------------------------------------------

/** Stages a photo at a new key (untimed) and times the conversion of it ({@link timed}), `how` = in-process or binding. */
async function timedJob(server, photo, how, pids) {
  const staged = await fetch(`${server.url}/_bench/stage`, { method: "PUT", body: photo.bytes });
  if (staged.status !== 200) throw new Error(`PUT /_bench/stage: ${staged.status} ${await staged.text()}`);
  const { key, size } = await staged.json();
  // MAX_IMAGE_EDGE's default, which the bench servers keep.
  const job = { key, size, format: photo.format, maxEdge: 2560 };
  let response;
  let text;
  const figures = await timed(async () => {
    response = await fetch(`${server.url}/_bench/convert/${how}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(job),
    });
    text = await response.text();
  }, pids);
  if (response.status !== 200 || !JSON.parse(text).converted) {
    throw new Error(`POST /_bench/convert/${how}: ${response.status} ${text.slice(0, 300)}`);
  }
  return figures;
}

const ways = {
  complete: async (server, photo, pids) => timedComplete(server, await upload(server, photo), pids),
  binding: (server, photo, pids) => timedJob(server, photo, "binding", pids),
  "in-process": (server, photo, pids) => timedJob(server, photo, "in-process", pids),
};

/**
 * Per input (12 MP, 64 × 64), SPLIT_ROUNDS rounds of the three ways taking turns, each timed in wall time and
 * in the CPU time of every process of the two `wrangler dev`s; per-round differences.
 */
async function measureSplit(server, { large, bmp, small }) {
  const pids = serverPids(server);
  const rows = [];
  for (const photo of [large, bmp, small]) {
    const { name } = photo;
    // Untimed: both isolates' codec instances.
    for (const way of Object.values(ways)) await way(server, photo);
    const rounds = [];
    for (let round = 0; round < SPLIT_ROUNDS; round++) {
      const names = Object.keys(ways);
      const figures = {};
      for (let k = 0; k < names.length; k++) {
        const way = names[(round + k) % names.length];
        figures[way] = await ways[way](server, photo, pids);
      }
      rounds.push(figures);
    }
    const of = (fn) => stats(rounds.map(fn));
    const figuresOf = (key) => ({
      complete: of((r) => r.complete[key]),
      binding: of((r) => r.binding[key]),
      inProcess: of((r) => r["in-process"][key]),
      bindingCost: of((r) => r.binding[key] - r["in-process"][key]),
      completeCost: of((r) => r.complete[key] - r["in-process"][key]),
    });
    const row = { name, bytes: photo.bytes.length, wall: figuresOf("ms"), cpu: figuresOf("cpuMs") };
    rows.push(row);
    for (const [what, f] of [
      ["wall", row.wall],
      ["CPU", row.cpu],
    ]) {
      log(
        `  ${name}, ${what}: complete ${spread(f.complete)} ms, binding ${spread(f.binding)} ms, in-process ${spread(f.inProcess)} ms; binding − in-process ${spread(f.bindingCost)} ms, complete − in-process ${spread(f.completeCost)} ms`,
      );
    }
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

/** Whether the reads met their goals: busy max and p99 against quiet p99. */
export function readGoals(reads) {
  const maxBound = reads.quiet.p99 + TWO_WORKER_GOALS.busyMaxOverQuietP99Ms;
  const p99Bound = reads.quiet.p99 * TWO_WORKER_GOALS.busyP99OverQuietP99;
  return { maxBound, p99Bound, maxMet: reads.busy.max <= maxBound, p99Met: reads.busy.p99 <= p99Bound };
}

const yes = (met) => (met ? "yes" : "**no**");

export function twoWorkersSection({ reads, split }, facts) {
  const goals = readGoals(reads);
  const large = split[0];
  return [
    `Measured ${machineLine(facts)}.`,
    "",
    `Reads while photos complete: \`GET /api/v1/products/{id}\` (the bench fixture's token; the isolate's kept answer, 0 D1 trips warm) one at a time, a pause of ${READ_INTERVAL_MS} ms after each answer, for ${reads.seconds} s alone (quiet), then for ${reads.seconds} s while 12 MP JPEGs (4000×3000, photo-like pixels, quality 85, ${num(reads.jpegBytes / 1e6)} MB) complete back to back, one at a time (prepare, PUT, complete; the API sniffs, the converter Worker converts in its own \`wrangler dev\` process); ${reads.rounds} rounds of both, alternating, the samples of each kind pooled. After one untimed read second and one untimed complete. The busy reads are then split by what the completes were doing when the read was sent: the complete (the conversion runs), or prepare + PUT (the 12 MP file streams through the API's own isolate). Times in ms, from this process (HTTP on loopback included).`,
    "",
    table(
      ["Phase", "Reads", "p50", "p99", "max", "Completes meanwhile"],
      [1, 2, 3, 4],
      [
        ["quiet", reads.quiet.n, num(reads.quiet.p50), num(reads.quiet.p99), num(reads.quiet.max), "–"],
        [
          "busy",
          reads.busy.n,
          num(reads.busy.p50),
          num(reads.busy.p99),
          num(reads.busy.max),
          `${reads.completes.n}, ${spread(reads.completes)} ms each`,
        ],
        ...Object.entries(reads.busyDuring)
          .filter(([, figures]) => figures.n > 0)
          .map(([during, figures]) => [
            `busy, sent ${during === "between" ? "between two completes" : `during ${during}`}`,
            figures.n,
            num(figures.p50),
            num(figures.p99),
            num(figures.max),
            "",
          ]),
      ],
    ),
    "",
    `Goals: busy max ≤ quiet p99 + ${TWO_WORKER_GOALS.busyMaxOverQuietP99Ms} ms: ${num(reads.busy.max)} ≤ ${num(goals.maxBound)}: ${yes(goals.maxMet)}; busy p99 ≤ ${TWO_WORKER_GOALS.busyP99OverQuietP99} × quiet p99: ${num(reads.busy.p99)} ≤ ${num(goals.p99Bound)}: ${yes(goals.p99Met)}.`,
    "",
    `Complete through the two Workers against the conversion in-process, on the counting Worker (\`scripts/bench-worker.ts\`; its D1 counting is in the complete's time, microseconds): per round, the same JPEG (a) completed (prepare and PUT untimed), (b) staged in R2 (untimed) and converted as complete converts it, through the \`CONVERTER\` binding: the converter reads the bytes from R2 through the API's callback (\`r2Source\`) and streams the WebP back, which the API writes to R2 (\`POST /_bench/convert/binding\`), (c) staged likewise and converted by the converter's own code (\`convertStill\`) inside the API's isolate, reading and writing R2 the same way (\`POST /_bench/convert/in-process\`), as a complete converted before the converter had a Worker of its own. Each is one HTTP request timed here; the three take turns; ${SPLIT_ROUNDS} rounds after one untimed round of each. (b) − (c): what the second Worker adds to a conversion; (a) − (c): that plus the complete's own work (coordinator, D1, sniffing, deleting the staged bytes), which the 64×64 row shows alone. The 12 MP BMP (part 2's 24-bit BMP, ${num(split[1].bytes / 1e6)} MB) is the largest file a conversion streams through the binding. Differences are taken within each round. "wall": the request's time from this process; "CPU": the CPU time every process of the two \`wrangler dev\`s ran during it (wrangler's own, the dev proxies, both Workers' workerd; from /proc/…/task/…/schedstat), which other work on the machine does not add to. Figures: median (min–max), ms.`,
    "",
    table(
      ["Input", "File", "Measure", "(a) complete", "(b) binding", "(c) in-process", "(b) − (c)", "(a) − (c)"],
      [1, 3, 4, 5, 6, 7],
      split.flatMap((r) =>
        [
          ["wall", r.wall],
          ["CPU", r.cpu],
        ].map(([measure, f]) => [
          r.name,
          `${num(r.bytes / 1e6)} MB`,
          measure,
          spread(f.complete),
          spread(f.binding),
          spread(f.inProcess),
          spread(f.bindingCost),
          spread(f.completeCost),
        ]),
      ),
    ),
    "",
    `Goal: a 12 MP complete through the two Workers at most ${TWO_WORKER_GOALS.bindingCostMs} ms over the conversion in-process, for what the second Worker adds: (b) − (c) = ${num(large.wall.bindingCost.median)} ms of wall time: ${yes(large.wall.bindingCost.median <= TWO_WORKER_GOALS.bindingCostMs)} (CPU: ${num(large.cpu.bindingCost.median)} ms more for the two Workers together). The whole complete is ${num(large.wall.completeCost.median)} ms over (c), the complete's own work included (64×64: ${num(split.at(-1).wall.completeCost.median)} ms).`,
  ].join("\n");
}

export const twoWorkersHeading = "## 11. Two Workers: reads while photos complete";

/** Both parts, each on its own servers: the app's own entry for the reads, the counting Worker for the split. */
export async function benchTwoWorkers({ seconds = DEFAULT_SECONDS } = {}) {
  const jpegs = await step("generate the images", 3 * MINUTE, () => photos());
  log(
    `  ${Object.values(jpegs)
      .map((photo) => `${photo.name}: ${num(photo.bytes.length / 1e6)} MB`)
      .join("; ")}`,
  );
  const reads = await step("reads while photos complete", 3 * MINUTE + 2 * READ_ROUNDS * seconds * 1000, () =>
    withBenchStore({}, (server) => measureReads(server, jpegs.large, { seconds })),
  );
  const split = await step("complete against the conversion in-process", 6 * MINUTE, () =>
    withBenchStore({ counting: true }, (server) => measureSplit(server, jpegs)),
  );
  return { reads, split };
}

/** Part 11; `seconds` per phase of its reads. */
export const twoWorkersPart = {
  title: "11. two Workers",
  block: "bench-two-workers",
  heading: twoWorkersHeading,
  limitMs: 13 * MINUTE + 2 * READ_ROUNDS * DEFAULT_SECONDS * 1000,
  measure: benchTwoWorkers,
  section: twoWorkersSection,
};

if (isMain(import.meta.url)) {
  const secondsArg = process.argv.find((arg) => arg.startsWith("--seconds="))?.slice("--seconds=".length);
  const seconds = secondsArg ? Number(secondsArg) : DEFAULT_SECONDS;
  if (!(seconds > 0 && seconds <= 120)) {
    console.error("bench: --seconds= takes a number of seconds from 1 to 120");
    process.exit(2);
  }
  const part = { ...twoWorkersPart, limitMs: 13 * MINUTE + 2 * READ_ROUNDS * seconds * 1000 };
  await runParts([part], { watchdogMs: 14 * MINUTE + 2 * READ_ROUNDS * seconds * 1000, options: { seconds } });
}
