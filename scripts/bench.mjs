// `npm run bench`: every benchmark of docs/benchmarks.md in one run, written as one report.
//
//   1. request overhead: three read routes beside a trivial one of the same Worker (bench-requests.mjs)
//   2. conversion: complete through the two Workers beside sharp (libvips), the converter isolate's memory
//      inside workerd per input (and the API isolate's beside it), hostile inputs, two completes at once
//      (bench-convert.mjs; docs/measuring-conversion.md)
//   3. upload streaming: a 95 MB PUT through the Worker beside a plain server, and 1 GB in parts beside the
//      single PUT and the plain server (bench-upload.mjs)
//   4. subscriptions at scale: the endpoint beside raw SQLite (bench-subscriptions.mjs)
//   5. publish: a large product's publish, its latency and D1 statements (bench-publish.mjs)
//   6. latency from far away: round trips per route cold and warm, and reads with every D1 and Durable
//      Object call delayed by 50 ms (bench-latency.mjs; docs/latency.md)
//   7. responsive widths: a cold `?width=N` beside sharp, warm reads beside the trivial route, bytes per
//      width (bench-widths.mjs; docs/responsive-images.md)
//   11. two Workers: product reads alone and while 12 MP JPEGs complete back to back, and a complete against
//      the same conversion run in the API's isolate (bench-two-workers.mjs)
//   12. AVIF and placeholders: bytes at matched quality, cold and warm AVIF, the placeholder's cost, the
//      converter's memory (bench-avif.mjs)
//   13. Idempotency-Key: publish and complete with a key against without, a replay against a read
//      (bench-idempotency.mjs)
//
// Every part can also run alone (`npm run bench:requests`, `bench:convert`, `bench:upload`,
// `bench:subscriptions`, `bench:publish`, `bench:latency`, `bench:widths`, `bench:two-workers`,
// `bench:idempotency`, `bench:avif`), rewriting only its own block. Each part is described once
// (its script's `…Part`: title, time limit, measure, section) and run by the same runner (lib/bench-runner.mjs).
// Each "wrangler dev" below is two processes, the converter Worker's and the API's. Here one `wrangler dev` serves
// parts 1, 3 and 5, one counting Worker (scripts/bench-worker.ts) the statement counts and the upload's
// decomposition, and part 2 starts its own (one for speed, then a fresh one per input, so each memory
// figure is that of a fresh isolate). Everything listens on 127.0.0.1 and lives in throwaway directories.
// Every step has its own time limit and fails with an error naming it (lib/bench-run.mjs `step`); every HTTP
// call and inspector call has a deadline; the watchdog ends the run (stopping every server) past
// RUN_LIMIT_MS. The report is written only when every part succeeded, so all its figures come from one run.
// Not part of `npm test`: about 40 minutes on two cores before parts 12 and 13 joined (part 2 alone 20–30: a fresh
// server per input, each two `wrangler dev`s since the converter has a Worker of its own; part 12 is allowed an
// hour).

import { avifPart } from "./bench-avif.mjs";
import { conversionPart, ISOLATE_BYTES, MEMORY_TARGET_BYTES, SHARP_RATIO_LIMIT } from "./bench-convert.mjs";
import { idempotencyPart } from "./bench-idempotency.mjs";
import { latencyPart } from "./bench-latency.mjs";
import { countPublish, expectedInserts, measurePublish, publishPart } from "./bench-publish.mjs";
import { countRequests, measureRequests, requestsPart } from "./bench-requests.mjs";
import { SQL_RATIO_LIMIT, subscriptionsPart } from "./bench-subscriptions.mjs";
import { readGoals, TWO_WORKER_GOALS, twoWorkersPart } from "./bench-two-workers.mjs";
import { decomposeUpload, GROWTH_LIMIT_BYTES, measureUpload, uploadPart } from "./bench-upload.mjs";
import { widthsPart } from "./bench-widths.mjs";
import { MULTIPART_BYTES, multipartPart } from "./lib/bench-multipart.mjs";
import { machineFacts, machineLine, num, requireDebianTool, spread, stats, table, times } from "./lib/bench-report.mjs";
import { elapsedSeconds, installWatchdog, log, runMain, step } from "./lib/bench-run.mjs";
import { measurePart, writePart } from "./lib/bench-runner.mjs";
import { withBenchStore } from "./lib/bench-server.mjs";

const MINUTE = 60_000;
const RUN_LIMIT_MS = 150 * MINUTE;

installWatchdog(RUN_LIMIT_MS);
// Check the Debian tool before spending minutes on the parts that do not need it.
requireDebianTool("curl", "curl", "the upload bench sends the file with curl");

/** Parts 1, 3 and 5 on one wrangler dev, then their statement counts and the upload's steps on the counting Worker. */
async function sharedServerParts() {
  log("1, 3, 5 on one wrangler dev");
  const { requests, upload, publish } = await step("1, 3, 5 on one wrangler dev", 12 * MINUTE, () =>
    withBenchStore({}, async (server) => {
      log("1. request overhead");
      const requests = await step("1. request overhead", 4 * MINUTE, () => measureRequests(server));
      log("3. upload streaming");
      const upload = await step("3. upload streaming", 4 * MINUTE, () => measureUpload(server));
      log("5. publish");
      const publish = await step("5. publish", 3 * MINUTE, () => measurePublish(server));
      return { requests, upload, publish };
    }),
  );
  // A wrangler dev of its own: its memory is sampled through the inspector, which answers one connection
  // per server (a second one, after part 3's, never sees the Worker's execution context).
  const multipart = await measurePart(multipartPart, undefined, 8 * MINUTE);
  log("statement counts and the upload's steps on the counting Worker");
  const counted = await step("counting Worker", 9 * MINUTE, () =>
    withBenchStore({ counting: true }, async (server) => ({
      requestCounts: await step("1. statement counts", 2 * MINUTE, () => countRequests(server)),
      publishCount: await step("5. statement counts", 2 * MINUTE, () => countPublish(server)),
      streamSteps: await step("3. the upload's steps", 4 * MINUTE, () => decomposeUpload(server)),
    })),
  );
  const inserts = await step("5. expected inserts", MINUTE, () => expectedInserts());
  return {
    requests: { results: requests, counts: counted.requestCounts },
    upload: { result: upload, steps: counted.streamSteps },
    multipart,
    publish: { result: publish, count: counted.publishCount, inserts },
  };
}

await runMain(async () => {
  const facts = await machineFacts();
  log(`machine: ${machineLine(facts)}`);
  const subscriptions = await measurePart(subscriptionsPart, undefined, 8 * MINUTE);
  const conversion = await measurePart(conversionPart, undefined, 55 * MINUTE);
  const { requests, upload, multipart, publish } = await sharedServerParts();
  const latency = await measurePart(latencyPart, undefined, 6 * MINUTE);
  const widths = await measurePart(widthsPart, undefined, 8 * MINUTE);
  const twoWorkers = await measurePart(twoWorkersPart, undefined, 10 * MINUTE);
  const idempotency = await measurePart(idempotencyPart);
  const avif = await measurePart(avifPart);

  const duration = elapsedSeconds();
  // Written only now, every part having succeeded: all figures of docs/benchmarks.md come from this one run.
  for (const [part, result] of [
    [requestsPart, requests],
    [conversionPart, conversion],
    [uploadPart, upload],
    [multipartPart, multipart],
    [subscriptionsPart, subscriptions],
    [publishPart, publish],
    [latencyPart, latency],
    [widthsPart, widths],
    [twoWorkersPart, twoWorkers],
    [idempotencyPart, idempotency],
    [avifPart, avif],
  ]) {
    await writePart(part, result, facts);
  }
  const all = { facts, requests, conversion, upload, multipart, subscriptions, publish, twoWorkers };
  console.log(`\n${summary(all, duration)}\n`);
  log("wrote docs/benchmarks.md");
});

const verdict = (poor) => (poor ? "**poor**: see below" : "within");
const mib = (bytes) => `${num(bytes / 2 ** 20)} MiB`;

/** Part 1's rows: each route's throughput and p50 alone against ping. */
function requestRows(requests) {
  return requests.results
    .filter((r) => !r.route.ceiling)
    .map((r) => [
      "1",
      `${r.route.name}: throughput vs ping; p50 alone vs ping`,
      `${spread(r.throughputShare, (v) => `${Math.round(v * 100)} %`)}; ${spread(r.aloneRatio, times)}`,
      "–",
      "–",
    ]);
}

/** Part 2's speed rows: complete through the two Workers against sharp, per input. */
function conversionSpeedRows(conversion) {
  return conversion.speed.map((c) =>
    c.refused
      ? [
          "2",
          `${c.input.name}: complete through the two Workers / sharp`,
          `not converted (${c.refused.slice(0, 80)})`,
          `≤ ${SHARP_RATIO_LIMIT}×`,
          "–",
        ]
      : [
          "2",
          `${c.input.name}: complete through the two Workers / sharp (one thread, same size, q80, effort 2)`,
          spread(c.ratio, times),
          c.input.fixedCost ? "– (fixed cost)" : `≤ ${SHARP_RATIO_LIMIT}×`,
          c.input.fixedCost ? "–" : verdict(c.ratio.median > SHARP_RATIO_LIMIT),
        ],
  );
}

/** Part 2's memory rows: the converter isolate's highest peak of the ordinary and the hostile inputs, two at once, the API's. */
function conversionMemoryRows(conversion) {
  const rows = [];
  // The converter isolate's peak in workerd: JS heap + ArrayBuffers sampled every 20 ms, plus the WASM memories.
  const ordinary = conversion.memory.filter((m) => !m.input.hostile);
  const hostile = conversion.memory.filter((m) => m.input.hostile);
  for (const [label, group] of [
    ["inputs above", ordinary],
    ["hostile inputs", hostile],
  ]) {
    const stuck = group.filter((m) => m.peak === null);
    if (stuck.length > 0) {
      rows.push([
        "2",
        `Completes of the ${label} with no answer within 45 s (isolate still busy; peak unknown)`,
        stuck.map((m) => m.input.name).join("; "),
        "none",
        verdict(true),
      ]);
    }
    const measured = group.filter((m) => m.peak !== null);
    if (measured.length === 0) continue;
    const top = measured.reduce((a, b) => (b.peak > a.peak ? b : a));
    rows.push([
      "2",
      `Converter isolate peak in workerd, one complete on a fresh isolate, highest of the ${label} (${top.input.name})`,
      `${mib(top.peak)} (isolate: ${mib(ISOLATE_BYTES)})`,
      `≤ ${mib(MEMORY_TARGET_BYTES)}`,
      verdict(top.peak > MEMORY_TARGET_BYTES),
    ]);
  }
  if (conversion.concurrent) {
    const c = conversion.concurrent;
    rows.push([
      "2",
      `Converter isolate peak in workerd, two completes at once (${c.input.name})`,
      `${mib(c.peak)} (isolate: ${mib(ISOLATE_BYTES)})`,
      `≤ ${mib(MEMORY_TARGET_BYTES)}`,
      verdict(c.peak > MEMORY_TARGET_BYTES),
    ]);
  }
  const apiPeak = Math.max(
    ...conversion.memory.map((m) => m.api.peak),
    ...(conversion.concurrent ? [conversion.concurrent.api.peak] : []),
  );
  rows.push(["2", "API isolate peak in workerd during the completes above (highest)", mib(apiPeak), "–", "–"]);
  return rows;
}

/** Part 3's rows: the 95 MB PUT and the 1 GB in parts, their time and the Worker process's growth. */
function uploadRows({ result: upload }, multipart) {
  return [
    ["3", "95 MB PUT: Worker time / plain server time", spread(upload.ratio, times), "–", "–"],
    [
      "3",
      "Worker process RSS growth during the PUT",
      `${spread(upload.workerGrowth, (b) => num(b / 2 ** 20))} MiB`,
      `≤ ${mib(GROWTH_LIMIT_BYTES)} in every round`,
      verdict(upload.workerGrowth.max > GROWTH_LIMIT_BYTES),
    ],
    [
      "3",
      `${MULTIPART_BYTES / 1e9} GB in parts: Worker MB/s; time / plain server (parts, same round); single PUT MB/s / parts MB/s`,
      `${spread(multipart.workerMBps)} MB/s; ${spread(multipart.ratioToPlainParts, times)}; ${spread(multipart.ratioToSinglePut, times)}`,
      "–",
      "–",
    ],
    [
      "3",
      `Worker process RSS growth during the ${MULTIPART_BYTES / 1e9} GB in parts`,
      `${spread(multipart.workerGrowth, (b) => num(b / 2 ** 20))} MiB`,
      `≤ ${mib(GROWTH_LIMIT_BYTES)} in every round`,
      verdict(multipart.workerGrowth.max > GROWTH_LIMIT_BYTES),
    ],
  ];
}

/** Parts 4 and 5: the endpoint against raw SQL over the shapes; the publish's latency and statements. */
function subscriptionAndPublishRows(subscriptions, { result: publish, count: publishCount }) {
  const ratios = subscriptions.rows.map((row) => row.endpoint.p50 / row.sql.p50);
  const over = ratios.filter((ratio) => ratio > SQL_RATIO_LIMIT).length;
  return [
    [
      "4",
      `Endpoint p50 / SQL p50: median over the ${subscriptions.rows.length} shapes (min–max over shapes); the floor is ${num(subscriptions.rows[0].endpoint.p50)} ms`,
      `${spread(stats(ratios), times)}; ${over} shapes over ${SQL_RATIO_LIMIT}×`,
      `≤ ${SQL_RATIO_LIMIT}×`,
      verdict(over > 0),
    ],
    ["5", "Publish latency (50 variants, 100 fields, 20 cross-sells)", `${spread(publish.latency)} ms`, "–", "–"],
    [
      "5",
      "D1 statements per publish request",
      `${publishCount.statements} in ${publishCount.trips.length} round trips (one batch of ${Math.max(...publishCount.trips)})`,
      "–",
      "–",
    ],
  ];
}

/** Part 11's rows: reads while photos complete, and what the binding adds to a 12 MP conversion. */
function twoWorkerRows(twoWorkers) {
  const reads = twoWorkers.reads;
  const goals = readGoals(reads);
  const large = twoWorkers.split[0];
  return [
    [
      "11",
      `Product read while 12 MP JPEGs complete: busy max; busy p99 (quiet p99 ${num(reads.quiet.p99)} ms)`,
      `${num(reads.busy.max)} ms; ${num(reads.busy.p99)} ms`,
      `≤ ${num(goals.maxBound)} ms (quiet p99 + ${TWO_WORKER_GOALS.busyMaxOverQuietP99Ms}); ≤ ${num(goals.p99Bound)} ms (${TWO_WORKER_GOALS.busyP99OverQuietP99} × quiet p99)`,
      verdict(!goals.maxMet || !goals.p99Met),
    ],
    [
      "11",
      "12 MP JPEG: conversion through the binding − in the API's isolate (wall; CPU); complete − in the API's isolate (wall)",
      `${spread(large.wall.bindingCost)} ms; ${spread(large.cpu.bindingCost)} ms; ${spread(large.wall.completeCost)} ms`,
      `≤ ${TWO_WORKER_GOALS.bindingCostMs} ms (the binding's share, wall)`,
      verdict(large.wall.bindingCost.median > TWO_WORKER_GOALS.bindingCostMs),
    ],
  ];
}

/**
 * The ratios of the issue in one table, each with its bound and whether this run met it: printed at the end of
 * a full run, not written to docs/benchmarks.md (a part run alone rewrites only its own section, so a written
 * summary would go stale beside it).
 */
function summary({ facts, requests, conversion, upload, multipart, subscriptions, publish, twoWorkers }, duration) {
  const rows = [
    ...requestRows(requests),
    ...conversionSpeedRows(conversion),
    ...conversionMemoryRows(conversion),
    ...uploadRows(upload, multipart),
    ...subscriptionAndPublishRows(subscriptions, publish),
    ...twoWorkerRows(twoWorkers),
  ];
  return [
    `Last full run: ${machineLine(facts)}; curl ${facts.curl}. The run took ${Math.floor(duration / 60)} min ${Math.round(duration % 60)} s.`,
    "",
    "Figures are medians with their spread (min–max over rounds unless the row says otherwise; the sections below give p95 and p99 too); each ratio is taken within one round, both sides measured seconds apart, then the median of the rounds.",
    "",
    table(["#", "Figure", "Median (spread)", "Bound", "This run"], [2], rows),
  ].join("\n");
}
