// What an `Idempotency-Key` costs (issue 34, docs/api.md "Idempotency-Key"), through `wrangler dev`:
//
// - publish with a key against without: the bench's cross-sell product (25 cross-sells, no draft: each publish
//   re-saves it), a fresh key per keyed run, keyed and plain runs alternated so drift hits both alike;
// - complete with a key against without: a small private file (`type: file`, hosted in place, no conversion,
//   which would bury a millisecond under hundreds), prepared and PUT before each run (not timed);
// - a replay against a read of the same size: the first publish's key sent again (its answer, the live
//   product, given back) against `GET /products/{id}` of the same product (the same body; READ_CACHE_MS=0,
//   so the read goes to D1 as a replay's claim does).
//
// Each figure is the whole request over loopback, response included. On loopback a D1 trip costs a fraction of
// a millisecond, so the figures say what the key costs in the Worker and local D1, not from far away; the round
// trips it adds are counted in test/http/idempotency.test.ts (docs/latency.md).
//
//   npm run bench:idempotency   this part alone; rewrites its block of docs/benchmarks.md
import { benchIds, productPath } from "./lib/bench-fixture.mjs";
import { call, prepareAndPut } from "./lib/bench-http.mjs";
import { machineLine, num, spread, stats, table } from "./lib/bench-report.mjs";
import { isMain, log, step } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withBenchStore } from "./lib/bench-server.mjs";

const WARMUP = 5;
const RUNS = 60;
const COMPLETE_RUNS = 40;

const publishPath = `/products/${benchIds.crossSellProduct}/publish`;
const keyOf = (what, i) => `bench-${what}-${process.pid}-${i}-${Date.now()}`;

async function timed(fn) {
  const start = performance.now();
  const result = await fn();
  return { ms: performance.now() - start, result };
}

/**
 * A pause between runs, so what a run left running after its answer (`waitUntil`: the kept answer's write, an
 * event's enqueue) ends before the next run is timed, as it does between a client's real requests, instead of
 * landing in the next run's time (local D1 runs one statement at a time).
 */
const GAP_MS = 30;
const gap = () => new Promise((resolve) => setTimeout(resolve, GAP_MS));

/** Alternates plain and keyed runs of `once(key)`; answers both sets of latencies. */
async function alternate(runs, once, what) {
  for (let i = 0; i < WARMUP; i++) {
    await once(null);
    await once(keyOf(`${what}-warm`, i));
  }
  const plain = [];
  const keyed = [];
  for (let i = 0; i < runs; i++) {
    await gap();
    plain.push((await once(null)).ms);
    await gap();
    keyed.push((await once(keyOf(what, i))).ms);
  }
  return { plain: stats(plain), keyed: stats(keyed) };
}

const keyHeader = (key) => (key ? { "Idempotency-Key": key } : {});

async function publishOnce(server, key) {
  return timed(() => call(server, "POST", publishPath, { headers: keyHeader(key) }));
}

/** A small PDF, as a private download: complete hosts it in place. */
const pdf = new TextEncoder().encode("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n");

async function completeOnce(server, key) {
  const id = await prepareAndPut(server, {
    bytes: pdf,
    filename: "bench.pdf",
    contentType: "application/pdf",
    type: "file",
  });
  return timed(() => call(server, "POST", `/media-uploads/${id}/complete`, { expected: 201, headers: keyHeader(key) }));
}

/** A replay of one keyed publish, against a read of the same product (the same bytes). */
async function replayAgainstRead(server) {
  const key = keyOf("replay", 0);
  const first = await call(server, "POST", publishPath, { headers: keyHeader(key) });
  const size = JSON.stringify(first.body).length;
  const replay = () =>
    timed(async () => {
      const answer = await call(server, "POST", publishPath, { headers: keyHeader(key) });
      if (answer.response.headers.get("Idempotent-Replayed") !== "true")
        throw new Error("the publish was not replayed");
      return answer;
    });
  const read = () => timed(() => call(server, "GET", productPath));
  const readSize = JSON.stringify((await read()).result.body).length;
  for (let i = 0; i < WARMUP; i++) {
    await replay();
    await read();
  }
  const replays = [];
  const reads = [];
  for (let i = 0; i < RUNS; i++) {
    await gap();
    replays.push((await replay()).ms);
    await gap();
    reads.push((await read()).ms);
  }
  return { replay: stats(replays), read: stats(reads), size, readSize };
}

/** Every figure of the section, on one bench server. */
export async function measureIdempotency(server) {
  const publish = await step("publish with and without a key", 300_000, () =>
    alternate(RUNS, (key) => publishOnce(server, key), "publish"),
  );
  log(`  publish: p50 ${num(publish.plain.median)} ms plain, ${num(publish.keyed.median)} ms keyed`);
  const complete = await step("complete with and without a key", 300_000, () =>
    alternate(COMPLETE_RUNS, (key) => completeOnce(server, key), "complete"),
  );
  log(`  complete: p50 ${num(complete.plain.median)} ms plain, ${num(complete.keyed.median)} ms keyed`);
  const replay = await step("a replay against a read", 300_000, () => replayAgainstRead(server));
  log(`  replay: p50 ${num(replay.replay.median)} ms, read ${num(replay.read.median)} ms`);
  return { publish, complete, replay };
}

const delta = (pair) =>
  `${pair.keyed.median - pair.plain.median >= 0 ? "+" : ""}${num(pair.keyed.median - pair.plain.median)} ms`;

/** The section as markdown, for docs/benchmarks.md. */
export function idempotencySection(result, facts) {
  const { publish, complete, replay } = result;
  return [
    `Measured ${machineLine(facts)}.`,
    "",
    `Method: through \`wrangler dev\` over loopback, the whole request with its response; ${WARMUP} warm-up pairs, then plain and keyed runs alternated (${RUNS} each for publish, ${COMPLETE_RUNS} for complete), ${GAP_MS} ms apart so that what a run leaves running after its answer (the kept answer's write, an event's enqueue) is not timed in the next. Publish: the bench's cross-sell product (25 cross-sells, no draft), a fresh key per keyed run. Complete: a ${pdf.byteLength}-byte PDF as \`type: file\` (hosted in place, no conversion), prepared and PUT before each run, not timed. Replay: the first keyed publish's key sent again, against \`GET /products/{id}\` of the same product (${replay.size} and ${replay.readSize} bytes of JSON; \`READ_CACHE_MS=0\`, so the read goes to D1 as the replay's claim does). Goal (issue 34): a key costs at most +1 ms at p50.`,
    "",
    table(
      ["Figure", "without a key, median (min–max)", "with a key", "p50 difference"],
      [1, 2, 3],
      [
        ["Publish", `${spread(publish.plain)} ms`, `${spread(publish.keyed)} ms`, delta(publish)],
        ["Complete", `${spread(complete.plain)} ms`, `${spread(complete.keyed)} ms`, delta(complete)],
        [
          "Replay of a publish, against a read of the same product",
          `read ${spread(replay.read)} ms`,
          `replay ${spread(replay.replay)} ms`,
          `${num(replay.replay.median - replay.read.median)} ms`,
        ],
      ],
    ),
    "",
    "On loopback a D1 round trip is a fraction of a millisecond: these figures are the key's work in the Worker and in local D1. From far away what counts is sequential round trips, and a key adds none (its claim runs beside the route's first read, or within complete's begin, and its answer is kept after the response; [latency.md](latency.md)).",
  ].join("\n");
}

export const idempotencyHeading = "## 13. What an Idempotency-Key costs";

/** Part 13: on the whole bench fixture with the kept answers off (READ_CACHE_MS=0), so every read goes to D1. */
export const idempotencyPart = {
  title: "13. Idempotency-Key",
  block: "bench-idempotency",
  heading: idempotencyHeading,
  limitMs: 19 * 60_000,
  measure: () => withBenchStore({ vars: { READ_CACHE_MS: "0" } }, measureIdempotency),
  section: idempotencySection,
};

if (isMain(import.meta.url)) await runParts([idempotencyPart], { watchdogMs: 20 * 60_000 });
