// `npm run bench`: every benchmark of docs/benchmarks.md in one run, written as one report.
//
//   1. request overhead: two real routes beside a trivial one of the same Worker (bench-requests.mjs)
//   2. conversion: the WASM pipeline beside native cwebp, memory per stage (bench-convert.mjs)
//   3. upload streaming: a 95 MB PUT through the Worker beside a plain server (bench-upload.mjs)
//   4. subscriptions at scale: the endpoint beside raw SQLite (bench-subscriptions.mjs)
//   5. publish: a large product's publish, its latency and D1 statements (bench-publish.mjs)
//
// Every part can also run alone (`npm run bench:requests`, `bench:convert`, `bench:upload`,
// `bench:subscriptions`, `bench:publish`), rewriting only its own block. Here one `wrangler dev` serves
// parts 1, 2, 3 and 5, and one counting Worker (scripts/bench-worker.ts) the statement counts and the
// upload's decomposition, so the run starts three servers in all. Everything listens on 127.0.0.1 and
// lives in throwaway directories; the watchdog ends the run (stopping every server) past RUN_LIMIT_MS.
// The report is written only when every part succeeded, so all its figures come from one run.
// Not part of `npm test`: about seven minutes on two cores.

import {
  completeThroughWorker,
  convertHeading,
  convertSection,
  ISOLATE_BYTES,
  measureConversion,
  NATIVE_RATIO_LIMIT,
} from "./bench-convert.mjs";
import {
  benchFixture,
  countingEntry,
  elapsedSeconds,
  installWatchdog,
  log,
  machineFacts,
  machineLine,
  num,
  requireDebianTool,
  spread,
  stats,
  table,
  times,
  withBenchServer,
  writeBlock,
} from "./bench-lib.mjs";
import { countPublish, expectedInserts, measurePublish, publishHeading, publishSection } from "./bench-publish.mjs";
import { countRequests, measureRequests, requestsHeading, requestsSection } from "./bench-requests.mjs";
import {
  benchSubscriptions,
  SQL_RATIO_LIMIT,
  subscriptionsHeading,
  subscriptionsSection,
} from "./bench-subscriptions.mjs";
import { decomposeUpload, GROWTH_LIMIT_BYTES, measureUpload, uploadHeading, uploadSection } from "./bench-upload.mjs";

const RUN_LIMIT_MS = 11 * 60_000;
/** Conversion memory is flagged when the codecs and the file leave less than this share to the app's JS heap. */
const ISOLATE_HEADROOM = 0.1;

installWatchdog(RUN_LIMIT_MS);
// Check the Debian tools before spending minutes on the parts that do not need them.
requireDebianTool("cwebp", "webp", "conversion is compared with native cwebp");
requireDebianTool("curl", "curl", "the upload bench sends the file with curl");

const facts = await machineFacts();
log(`machine: ${machineLine(facts)}`);

log("4. subscriptions at scale");
const subscriptions = await benchSubscriptions();

log("2. conversion in Node with the Worker's WASM, beside cwebp");
const conversions = await measureConversion();

log("1, 2, 3, 5 on one wrangler dev");
const { requests, upload, publish } = await withBenchServer({ fixture: benchFixture() }, async (server) => {
  log("1. request overhead");
  const requests = await measureRequests(server);
  log("2. conversion through the Worker");
  await completeThroughWorker(server, conversions);
  log("3. upload streaming");
  const upload = await measureUpload(server);
  log("5. publish");
  const publish = await measurePublish(server);
  return { requests, upload, publish };
});

log("statement counts and the upload's steps on the counting Worker");
const { requestCounts, publishCount, streamSteps } = await withBenchServer(
  { entry: countingEntry, fixture: benchFixture() },
  async (server) => ({
    requestCounts: await countRequests(server),
    publishCount: await countPublish(server),
    streamSteps: await decomposeUpload(server),
  }),
);
const inserts = await expectedInserts();

const duration = elapsedSeconds();
await writeBlock("bench-summary", "## Summary", summary());
await writeBlock("bench-requests", requestsHeading, requestsSection(requests, requestCounts, facts));
await writeBlock("bench-convert", convertHeading, convertSection(conversions, facts));
await writeBlock("bench-upload", uploadHeading, uploadSection(upload, streamSteps, facts));
await writeBlock("bench-subscriptions", subscriptionsHeading, subscriptionsSection(subscriptions, facts));
await writeBlock("bench-publish", publishHeading, publishSection(publish, publishCount, inserts, facts));
console.log(`\n${summary()}\n`);
log("wrote docs/benchmarks.md");

/** The ratios of the issue in one table, each with its bound and whether this run met it. */
function summary() {
  const verdict = (poor) => (poor ? "**poor**: see below" : "within");
  const mib = (bytes) => `${num(bytes / 2 ** 20)} MiB`;
  const rows = [];
  for (const r of requests.filter((r) => !r.route.ceiling)) {
    rows.push([
      "1",
      `${r.route.name}: throughput vs ping; p50 alone vs ping`,
      `${spread(r.throughputShare, (v) => `${Math.round(v * 100)} %`)}; ${spread(r.aloneRatio, times)}`,
      "–",
      "–",
    ]);
  }
  for (const c of conversions) {
    rows.push([
      "2",
      `${c.input.name}: pipeline / cwebp (in parentheses: complete in the Worker / cwebp)`,
      `${spread(c.ratio, times)} (${num(c.completeRatio.median)}×)`,
      `≤ ${NATIVE_RATIO_LIMIT}×`,
      verdict(c.ratio.median > NATIVE_RATIO_LIMIT),
    ]);
  }
  // Lower bound: what must be live (the codec instances and the file); upper bound: what workerd's
  // isolate reported at its peak (garbage included) plus the instances, which V8's figure leaves out.
  const instances = (c) => c.memory.arena + c.memory.encoder + c.memory.webpDecoder;
  const lower = Math.max(...conversions.map((c) => instances(c) + c.fileBytes));
  const upper = Math.max(...conversions.map((c) => instances(c) + c.isolatePeak.max));
  rows.push([
    "2",
    "Peak conversion memory, largest input: codec instances + the file (lower bound); workerd's reported peak + instances (upper bound)",
    `${mib(lower)}; ${mib(upper)} (isolate: ${mib(ISOLATE_BYTES)})`,
    `≤ ${Math.round((1 - ISOLATE_HEADROOM) * 100)} % of the isolate`,
    verdict(lower > ISOLATE_BYTES * (1 - ISOLATE_HEADROOM)),
  ]);
  rows.push(["3", "95 MB PUT: Worker time / plain server time", spread(upload.ratio, times), "–", "–"]);
  rows.push([
    "3",
    "Worker process RSS growth during the PUT",
    `${spread(upload.workerGrowth, (b) => num(b / 2 ** 20))} MiB`,
    `≤ ${mib(GROWTH_LIMIT_BYTES)} in every round`,
    verdict(upload.workerGrowth.max > GROWTH_LIMIT_BYTES),
  ]);
  const ratios = subscriptions.rows.map((row) => row.endpoint.p50 / row.sql.p50);
  const over = ratios.filter((ratio) => ratio > SQL_RATIO_LIMIT).length;
  rows.push([
    "4",
    `Endpoint p50 / SQL p50: median over the ${subscriptions.rows.length} shapes (min–max over shapes); the floor is ${num(subscriptions.rows[0].endpoint.p50)} ms`,
    `${spread(stats(ratios), times)}; ${over} shapes over ${SQL_RATIO_LIMIT}×`,
    `≤ ${SQL_RATIO_LIMIT}×`,
    verdict(over > 0),
  ]);
  rows.push([
    "5",
    "Publish latency (50 variants, 100 fields, 20 cross-sells)",
    `${spread(publish.latency)} ms`,
    "–",
    "–",
  ]);
  rows.push([
    "5",
    "D1 statements per publish request",
    `${publishCount.statements} in ${publishCount.trips.length} round trips (one batch of ${Math.max(...publishCount.trips)})`,
    "–",
    "–",
  ]);
  return [
    `Last full run: ${machineLine(facts)}; cwebp ${facts.cwebp}; curl ${facts.curl}. The run took ${Math.floor(duration / 60)} min ${Math.round(duration % 60)} s.`,
    "",
    "Figures are medians with their spread (min–max over rounds unless the row says otherwise; the sections below give p95 and p99 too); each ratio is taken within one round, both sides measured seconds apart, then the median of the rounds.",
    "",
    table(["#", "Figure", "Median (spread)", "Bound", "This run"], [2], rows),
  ].join("\n");
}
