// Item 2 of `npm run bench`: the image conversion (converter/src/convert, run by the converter Worker), its speed
// beside libvips and its memory inside workerd. docs/measuring-conversion.md explains the method and its blind
// spots.
//
// Everything goes through the API Worker's public HTTP API on `wrangler dev` (prepare, PUT, complete; the
// complete asks the converter Worker, a `wrangler dev` of its own, over the CONVERTER service binding) and the
// DevTools inspectors wrangler exposes, one per Worker, so the harness works with whatever the conversion does
// inside:
//
// - speed: per input, `POST /media-uploads/{id}/complete` (the API sniffs the upload and asks the converter,
//   which reads the bytes through the API's callback (streamed from R2), converts, and streams the WebP back
//   for the API to write to R2) beside sharp (libvips, bench-only devDependency,
//   never imported by a Worker) doing decode + resize to the converter's output size + WebP encode at quality
//   80 and effort 2 (libwebp method 2, the converter's setting) on one thread (`sharp.concurrency(1)`,
//   operation cache off), paired per round;
// - memory: per input, one complete on fresh `wrangler dev`s (a fresh converter isolate: the first conversion
//   an isolate runs also creates the codec instances), sampling the converter isolate's Runtime.getHeapUsage
//   every 20 ms (V8 used heap + ArrayBuffer backing stores) and reading every WebAssembly memory's size right
//   after (Runtime.queryObjects; WebAssembly memory never shrinks, so that is each one's high-water mark);
//   the API isolate is sampled the same way at the same time (it should hold no image). Hostile inputs too,
//   and two completes at once on one converter isolate.
//
//   npm run bench:convert                   this part alone; rewrites its block of docs/benchmarks.md
//   npm run bench:convert -- --only=PNG     only the inputs whose name contains the text (no report written)

import sharp from "sharp";
import { prepareInputs } from "./lib/bench-convert-inputs.mjs";
import { bearer, storeAndTokenFixture } from "./lib/bench-fixture.mjs";
import { prepareAndPut } from "./lib/bench-http.mjs";
import { readBmp } from "./lib/bench-images.mjs";
import { connectInspector, sampleIsolate, sampleRss, workerdProcesses } from "./lib/bench-memory.mjs";
import { machineLine, num, spread, stats, table, times } from "./lib/bench-report.mjs";
import { isMain, log, step } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withBenchServer } from "./lib/bench-server.mjs";

const SPEED_RUNS = 3;
const QUALITY = 80;
/** sharp's `effort` is libwebp's `method`; the converter encodes with method 2 (docs/conversion.md). */
const EFFORT = 2;
const SAMPLE_MS = 20;
/** A complete of the memory runs without an answer by then is reported as such (hostile inputs). */
const COMPLETE_TIMEOUT_MS = 45_000;
/** The memory of one Worker isolate. */
export const ISOLATE_BYTES = 128 * 2 ** 20;
/** The issue's bound for the isolate's peak during a conversion. */
export const MEMORY_TARGET_BYTES = 110 * 2 ** 20;
/** The issue's bound: complete through the Worker at most this many times sharp's time. */
export const SHARP_RATIO_LIMIT = 1.5;

/** Limits of the steps of this part (the whole run is bounded by the caller's watchdog too). */
const LIMITS = {
  inputs: 240_000,
  speed: 480_000,
  speedInput: 120_000,
  memoryInput: 300_000,
  // A fresh server per input is two `wrangler dev`s (the converter's, then the API's) after the migrations of
  // three databases: 20–35 s each on two shared cores, for 36 inputs.
  memory: 2_700_000,
  concurrent: 180_000,
};

sharp.concurrency(1);
sharp.cache(false);

// ---------------------------------------------------------------------------------------------
// The API Worker's public HTTP API
// ---------------------------------------------------------------------------------------------

/** prepare + PUT; returns the upload's id. */
const upload = (server, input) =>
  prepareAndPut(server, {
    bytes: input.bytes,
    filename: `bench.${input.kind}`,
    contentType: input.mime,
    name: input.name,
  });

/**
 * The timed complete; any status is returned (hostile inputs are expected to be refused). With
 * `timeoutMs`, no answer in time is a result too (`timedOut`), not an error: the isolate is then still
 * busy and its server must be thrown away.
 */
async function complete(server, id, { timeoutMs } = {}) {
  const start = performance.now();
  let response;
  let text;
  try {
    response = await fetch(`${server.url}/api/v1/media-uploads/${id}/complete`, {
      method: "POST",
      headers: bearer,
      ...(timeoutMs ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
    });
    text = await response.text();
  } catch (error) {
    if (!timeoutMs || performance.now() - start < timeoutMs) throw error;
    return { status: null, timedOut: true, ms: performance.now() - start, body: null, converted: false };
  }
  const ms = performance.now() - start;
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = { text: text.slice(0, 300) };
  }
  const converted = response.status === 201 && body?.type === "image" && String(body.file_url).endsWith(".webp");
  return { status: response.status, ms, body, converted };
}

/** What a complete did, in a few words for the tables. */
function outcome(result) {
  if (result.converted) return "converted";
  if (result.timedOut) return `no answer within ${Math.round(result.ms / 1000)} s (the isolate was still busy)`;
  const reason = result.body?.error?.message ?? result.body?.message ?? result.body?.detail ?? result.body?.text;
  const type = result.status === 201 ? `hosted as ${result.body?.type}` : `${result.status}`;
  return reason ? `${type}: ${String(reason).slice(0, 160)}` : type;
}

/** The hosted WebP's size, read back through the Worker's media URL. */
async function hostedSize(fileUrl) {
  const response = await fetch(fileUrl);
  if (response.status !== 200) throw new Error(`GET ${fileUrl}: ${response.status}`);
  const bytes = Buffer.from(await response.arrayBuffer());
  const { width, height, format } = await sharp(bytes).metadata();
  if (format !== "webp") throw new Error(`${fileUrl} is ${format}, not WebP`);
  return { width, height, bytes: bytes.length };
}

/**
 * sharp doing what the complete converts: decode, orient, resize to the same size, WebP q80 effort 2.
 * BMP: sharp's libvips cannot load it, so the pixels are read in JS here (inside the timed span).
 */
async function sharpOnce(input, { width, height }) {
  const bytes = input.bytes;
  const start = performance.now();
  const out = await (input.kind === "bmp" ? readBmp(Buffer.from(bytes)) : sharp(bytes))
    .rotate()
    .resize(width, height, { fit: "fill" })
    .webp({ quality: QUALITY, effort: EFFORT })
    .toBuffer();
  return { ms: performance.now() - start, bytes: out.length };
}

// ---------------------------------------------------------------------------------------------
// Speed: complete through the two Workers beside sharp
// ---------------------------------------------------------------------------------------------

/** wrangler dev reloaded the Worker (it sometimes does, seconds after starting, with no file changed). */
class ReloadedError extends Error {}

const reloadedMessage =
  "the Worker was reloaded during the measurement (a fresh isolate mid-way): the figures would mix two isolates";

export async function measureSpeed(server, inputs) {
  const speedInputs = inputs.filter((input) => !input.hostile);
  // The isolate's first complete creates the codec instances (and grows the encoder): not timed.
  const warm = speedInputs.find((input) => input.name.startsWith("12 MP JPEG, baseline")) ?? speedInputs[0];
  await step("warm-up complete", LIMITS.speedInput, async () => complete(server, await upload(server, warm)));
  const results = [];
  for (const input of speedInputs) {
    const result = await step(`speed: ${input.name}`, LIMITS.speedInput, async () => {
      const rounds = [];
      let output = null;
      for (let round = 0; round < SPEED_RUNS; round++) {
        const worker = await complete(server, await upload(server, input));
        if (!worker.converted) return { input, refused: outcome(worker), workerMs: stats([worker.ms]) };
        output ??= await hostedSize(worker.body.file_url);
        const native = await sharpOnce(input, output);
        rounds.push({ worker: worker.ms, sharp: native.ms, sharpBytes: native.bytes });
      }
      return {
        input,
        output,
        workerMs: stats(rounds.map((r) => r.worker)),
        sharpMs: stats(rounds.map((r) => r.sharp)),
        ratio: stats(rounds.map((r) => r.worker / r.sharp)),
        sharpBytes: rounds[0].sharpBytes,
      };
    });
    results.push(result);
    log(
      result.refused
        ? `  ${input.name}: not converted (${result.refused}) in ${num(result.workerMs.median)} ms`
        : `  ${input.name} → ${result.output.width}×${result.output.height}: complete ${spread(result.workerMs)} ms, sharp ${spread(result.sharpMs)} ms, ratio ${spread(result.ratio, times)}`,
    );
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// Memory inside workerd: the converter's isolate, and the API's
// ---------------------------------------------------------------------------------------------

const sum = (values) => values.reduce((a, b) => a + b, 0);

/**
 * Completes `inputs` at once on fresh servers (one fresh converter isolate, one fresh API isolate), sampling
 * both isolates' memory; returns each outcome, the converter's peak (the conversion's) and the API's.
 */
async function completesOnFreshIsolate(inputs) {
  return withBenchServer({ fixture: storeAndTokenFixture() }, async (server) => {
    // The conversion runs in the converter's isolate; the API's sniffs the upload and streams bytes both ways.
    const inspector = await step("connect the converter's inspector", 30_000, () =>
      connectInspector(server, { which: "converter" }),
    );
    const apiInspector = await step("connect the API's inspector", 30_000, () => connectInspector(server)).catch(
      (error) => {
        inspector.close();
        throw error;
      },
    );
    try {
      const ids = [];
      for (const input of inputs) ids.push(await upload(server, input));
      // A full collection in each isolate (queryObjects collects first), so the samples start from live memory.
      const wasmBefore = await inspector.wasmMemories();
      await apiInspector.collectGarbage();
      // The converter's workerd process's RSS from /proc, every 5 ms: it goes on while the isolate is busy.
      const worker = workerdProcesses(server, "converter").find((p) => p.role === "worker");
      const rssSampler = worker ? sampleRss([worker.pid], 5) : null;
      const sampler = sampleIsolate(inspector, SAMPLE_MS);
      const apiSampler = sampleIsolate(apiInspector, SAMPLE_MS);
      const started = performance.now();
      const results = await Promise.all(ids.map((id) => complete(server, id, { timeoutMs: COMPLETE_TIMEOUT_MS })));
      const wallMs = performance.now() - started;
      const rss = rssSampler?.stop()[worker.pid];
      // The API's isolate only streams bytes meanwhile, so it answers even when the converter's does not.
      const apiIsolate = await apiSampler.stop();
      const apiWasm = await apiInspector.wasmMemories();
      const api = { isolate: apiIsolate, wasm: apiWasm, peak: apiIsolate.peak + sum(apiWasm) };
      if (results.some((result) => result.timedOut)) {
        // The converter's isolate is still in the conversion and will not answer: what was seen so far, and
        // the process's RSS, are all there is; the server is stopped (workerd killed) by withBenchServer.
        const isolate = sampler.abandon();
        return {
          results,
          wallMs,
          isolate,
          api,
          rssGrowth: rss ? rss.peak - rss.baseline : null,
          wasm: null,
          wasmBytes: null,
          peak: null,
        };
      }
      const isolate = await sampler.stop();
      const wasm = await inspector.wasmMemories();
      // queryObjects collected all garbage: what is left is what the isolate still holds.
      const afterGc = await inspector.memory();
      if (inspector.reloads() > 0 || apiInspector.reloads() > 0) throw new ReloadedError(reloadedMessage);
      return {
        results,
        wallMs,
        isolate,
        api,
        rssGrowth: rss ? rss.peak - rss.baseline : null,
        wasmBefore,
        wasm,
        wasmBytes: sum(wasm),
        afterGc,
        // JS heap + ArrayBuffers at their sampled peak, plus every WASM memory at its high-water mark.
        peak: isolate.peak + sum(wasm),
      };
    } finally {
      inspector.close();
      apiInspector.close();
    }
  });
}

export async function measureMemory(inputs) {
  const results = [];
  for (const input of inputs) {
    const result = await step(`memory: ${input.name}`, LIMITS.memoryInput, () => onFreshIsolate([input]));
    const [only] = result.results;
    const row = { input, ...result, outcome: outcome(only), completeMs: only.ms };
    results.push(row);
    const seen = `JS heap + buffers ${mib(row.isolate.peak)} (heap ${mib(row.isolate.peakUsed)}, buffers ${mib(row.isolate.peakBuffers)})`;
    const rss = `workerd RSS +${row.rssGrowth === null ? "?" : mib(row.rssGrowth)}`;
    const waits = `${row.isolate.samples} samples, longest unanswered ${num(row.isolate.longestWaitMs)} ms of ${num(row.completeMs)} ms`;
    const api = `API isolate peak ${mib(row.api.peak)} (heap ${mib(row.api.isolate.peakUsed)}, buffers ${mib(row.api.isolate.peakBuffers)}, WASM ${mib(sum(row.api.wasm))})`;
    log(
      row.peak === null
        ? `  ${input.name}: ${row.outcome}; converter before it: ${seen}; ${rss}; WASM memories unreadable (the isolate is busy); ${api}`
        : `  ${input.name}: ${row.outcome.slice(0, 80)}; converter peak ${mib(row.peak)} = ${seen} + WASM ${mib(row.wasmBytes)} [${row.wasm.map(mib).join(", ")}]; after GC: heap + buffers ${mib(row.afterGc)}; ${rss}; ${waits}; ${api}`,
    );
  }
  return results;
}

/** completesOnFreshIsolate, once more on another fresh server if the Worker was reloaded meanwhile. */
async function onFreshIsolate(inputs) {
  try {
    return await completesOnFreshIsolate(inputs);
  } catch (error) {
    if (!(error instanceof ReloadedError)) throw error;
    log("  the Worker was reloaded during the measurement: once more on a fresh server");
    return completesOnFreshIsolate(inputs);
  }
}

/** Two completes of the input with the highest single peak, at once on one isolate. */
export async function measureConcurrent(memory) {
  const heaviest = memory
    .filter((row) => !row.input.hostile && row.outcome === "converted" && row.peak !== null)
    .sort((a, b) => b.peak - a.peak)[0];
  if (!heaviest) return null;
  const result = await step(`two completes at once: ${heaviest.input.name}`, LIMITS.concurrent, () =>
    onFreshIsolate([heaviest.input, heaviest.input]),
  );
  const row = { input: heaviest.input, single: heaviest.peak, ...result, outcomes: result.results.map(outcome) };
  log(
    `  two at once, ${row.input.name}: ${row.outcomes.join(" / ")}; converter peak ${mib(row.peak)} (one alone: ${mib(row.single)}); API isolate peak ${mib(row.api.peak)}; ${num(row.wallMs)} ms for both`,
  );
  return row;
}

/** The whole part: inputs, then speed on one server, then memory on a fresh server per input. */
export async function measureConversion({ only } = {}) {
  const inputs = await step("generate the inputs", LIMITS.inputs, () => prepareInputs({ only }));
  log(`  inputs: ${inputs.map((input) => `${input.name} ${num(input.bytes.length / 1e6)} MB`).join("; ")}`);
  const speed = await step("speed: complete beside sharp", LIMITS.speed, () =>
    withBenchServer({ fixture: storeAndTokenFixture() }, async (server) => {
      // No inspector during the timed completes: with a DevTools client attached the proxy enables the
      // debugger, which may change how V8 runs the code (WebAssembly debugging tiers among others).
      const rows = await measureSpeed(server, inputs);
      // Every input has gone through this one converter isolate: its WASM memories now hold the largest
      // share any sequence of these inputs asks for.
      const inspector = await step("connect the converter's inspector", 30_000, () =>
        connectInspector(server, { which: "converter" }),
      );
      const wasmAfterAll = await inspector.wasmMemories().finally(() => inspector.close());
      return { rows, wasmAfterAll };
    }),
  );
  const memory = await step("memory inside workerd", LIMITS.memory, () => measureMemory(inputs));
  const concurrent = await measureConcurrent(memory);
  return { inputs, speed: speed.rows, wasmAfterAll: speed.wasmAfterAll, memory, concurrent };
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const kib = (bytes) => `${Math.round(bytes / 1024)} KiB`;
const mib = (bytes) => `${num(bytes / 2 ** 20)} MiB`;
const share = (bytes) => `${Math.round((bytes / ISOLATE_BYTES) * 100)} %`;
const cell = (text) => String(text).replaceAll("|", "\\|").replaceAll("\n", " ");

/** The API isolate's highest peak over every complete above: what the split leaves in the API Worker. */
function apiPeakLine(memory, concurrent) {
  const rows = [...memory, ...(concurrent ? [concurrent] : [])];
  if (rows.length === 0) return "";
  const top = rows.reduce((a, b) => (b.api.peak > a.api.peak ? b : a));
  const wasm = Math.max(...rows.map((r) => sum(r.api.wasm)));
  return `API isolate during these completes: peak at most **${mib(top.api.peak)}** (${share(top.api.peak)} of 128 MiB; ${cell(top === concurrent ? "two at once" : top.input.name)}), WebAssembly memories at most ${mib(wasm)}.`;
}

/** Part 2's speed table: per input, complete through the two Workers beside sharp. */
function speedTable(speed) {
  return table(
    ["Input", "File", "Output", "complete (Workers)", "sharp", "Ratio", "Within", "WebP: converter / sharp"],
    [1, 3, 4, 5],
    speed.map((r) =>
      r.refused
        ? [
            cell(r.input.name),
            `${num(r.input.bytes.length / 1e6)} MB`,
            cell(`not converted: ${r.refused}`),
            num(r.workerMs.median),
            "–",
            "–",
            "–",
            "–",
          ]
        : [
            cell(r.input.name),
            `${num(r.input.bytes.length / 1e6)} MB`,
            `${r.output.width}×${r.output.height}`,
            spread(r.workerMs),
            spread(r.sharpMs),
            spread(r.ratio, times),
            r.input.fixedCost ? "–" : r.ratio.median <= SHARP_RATIO_LIMIT ? "yes" : "**no**",
            `${kib(r.output.bytes)} / ${kib(r.sharpBytes)}`,
          ],
    ),
  );
}

/** Part 2's memory table: per input, the converter isolate's peak on a fresh isolate, and the API's. */
function memoryTable(memory) {
  return table(
    [
      "Input",
      "File",
      "Outcome",
      "complete ms",
      "JS heap peak",
      "Buffers peak",
      "Heap + buffers after GC",
      "WASM memories",
      "Peak",
      "Of 128 MiB",
      "≤ 110 MiB",
      "Unanswered (samples)",
      "workerd RSS growth",
      "API isolate peak",
    ],
    [1, 3, 4, 5, 6, 8, 9, 11, 12, 13],
    memory.map((r) => [
      cell(`${r.input.hostile ? "hostile: " : ""}${r.input.name}`),
      `${num(r.input.bytes.length / 1e6)} MB`,
      cell(r.outcome),
      num(r.completeMs),
      mib(r.isolate.peakUsed),
      mib(r.isolate.peakBuffers),
      r.afterGc === undefined ? "–" : mib(r.afterGc),
      r.wasm === null
        ? "unreadable (isolate busy)"
        : `${mib(r.wasmBytes)} (${r.wasm.map((bytes) => num(bytes / 2 ** 20)).join(" + ") || "none"})`,
      r.peak === null ? "unknown" : mib(r.peak),
      r.peak === null ? "–" : share(r.peak),
      r.peak === null ? "**unknown**" : r.peak <= MEMORY_TARGET_BYTES ? "yes" : "**no**",
      `${num(r.isolate.longestWaitMs)} ms (${r.isolate.samples})`,
      r.rssGrowth === null ? "–" : mib(r.rssGrowth),
      mib(r.api.peak),
    ]),
  );
}

/** Two completes at once on one converter isolate, in a sentence. */
function concurrentLine(concurrent) {
  return concurrent
    ? `Two completes at once on one fresh converter isolate (${cell(concurrent.input.name)}, the input with the highest peak above): ${concurrent.outcomes.map(cell).join(" / ")}; peak **${mib(concurrent.peak)}** (${share(concurrent.peak)} of 128 MiB; one alone: ${mib(concurrent.single)}): JS heap ${mib(concurrent.isolate.peakUsed)}, buffers ${mib(concurrent.isolate.peakBuffers)}, WASM ${mib(concurrent.wasmBytes)}; workerd RSS growth ${concurrent.rssGrowth === null ? "–" : mib(concurrent.rssGrowth)}; API isolate peak ${mib(concurrent.api.peak)}; both done in ${num(concurrent.wallMs)} ms.`
    : "Two completes at once: not run (no input converted).";
}

export function convertSection(conversion, facts) {
  const { speed, memory, concurrent, wasmAfterAll } = conversion;
  return [
    `Measured ${machineLine(facts)}; sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips}, libwebp ${sharp.versions.webp ?? "?"}). Method, and what these figures cannot see: [measuring-conversion.md](measuring-conversion.md).`,
    "",
    `Speed: \`POST /media-uploads/{id}/complete\` through the two Workers on \`wrangler dev\`, each a process of its own (the API sniffs the upload and asks the converter over the \`CONVERTER\` service binding; the converter reads the bytes through the API's callback, streamed from R2, converts, and streams the WebP back, which the API writes to R2; HTTP on loopback included) beside sharp in this Node process doing decode + resize to the converter's output size + WebP (quality ${QUALITY}, effort ${EFFORT} = libwebp method ${EFFORT}, the converter's) on one thread (\`sharp.concurrency(1)\`, cache off), from memory. ${SPEED_RUNS} rounds per input after one untimed complete that creates the codec instances; the ratio is taken within each round. Bound: ≤ ${SHARP_RATIO_LIMIT}×. Figures: median (min–max), ms.`,
    "",
    speedTable(speed),
    "",
    `Memory: one complete per input on fresh \`wrangler dev\`s, so the conversion is the converter isolate's first (the codec instances are created by it); the converter's isolate, where the conversion runs, is read through its own inspector: \`Runtime.getHeapUsage\` every ${SAMPLE_MS} ms (V8 used heap + ArrayBuffer backing stores, which do not include WebAssembly memories), and every WebAssembly memory's size right after (\`Runtime.queryObjects\`; they never shrink, so that is their high-water mark). Peak = sampled peak of heap + buffers, plus the WASM memories. "After GC": heap + buffers once the complete is over and all garbage is collected (what of the peak was garbage still counted). The isolate does not answer the inspector while it runs a synchronous step: "unanswered" is the longest wait for one sample, a stretch in which the JS heap was not seen. "workerd RSS growth": the converter's workerd process's resident memory from /proc every 5 ms, highest minus the value before the complete; it is read while the isolate is busy, but counts workerd itself too and only pages touched (the converter binds no storage: R2 and D1 are in the API's process). Bound: ≤ ${mib(MEMORY_TARGET_BYTES)} of ${mib(ISOLATE_BYTES)}. "API isolate peak": the API Worker's isolate through its own inspector at the same time, the same way (heap + buffers sampled, plus its WASM memories after): it sniffs the upload and streams its bytes to the converter and the WebP back into R2, never holding an image whole.`,
    "",
    memoryTable(memory),
    "",
    concurrentLine(concurrent),
    "",
    apiPeakLine(memory, concurrent),
    "",
    `After every speed input went through one converter isolate, its WebAssembly memories held ${mib(sum(wasmAfterAll))} (${wasmAfterAll.map((bytes) => num(bytes / 2 ** 20)).join(" + ")} MiB): the share a long-lived isolate keeps whatever it converts next.`,
  ].join("\n");
}

export const convertHeading = "## 2. Conversion";

/** Part 2; with `only` just the inputs whose name contains it. */
export const conversionPart = {
  title: "2. conversion",
  block: "bench-convert",
  heading: convertHeading,
  limitMs: 58 * 60_000,
  measure: measureConversion,
  section: convertSection,
};

if (isMain(import.meta.url)) {
  const only = process.argv.find((arg) => arg.startsWith("--only="))?.slice("--only=".length);
  // Only some inputs: a section of them is printed, docs/benchmarks.md is left alone.
  await runParts([conversionPart], { watchdogMs: 60 * 60_000, options: { only }, write: !only });
}
