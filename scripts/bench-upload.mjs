// Item 3 of `npm run bench`: streaming a 95 MB upload through the Worker.
//
// Each round sends the same 95 MB file twice with the same curl command: once to a plain Node HTTP
// server on 127.0.0.1 that discards the body (what the loopback, curl and a socket can do), once through
// the real flow against `wrangler dev`: prepare → PUT (curl --data-binary, Content-Type video/mp4, the
// three headers prepare returned) → complete. While the PUT runs, the RSS of both workerd processes of
// `wrangler dev` and the Worker isolate's own memory (through wrangler's inspector) are sampled every
// 50 ms: the Worker streams the body into R2 through a FixedLengthStream, so neither should grow with
// the file. The file starts with an MP4 `ftyp` box, so complete
// sniffs it as a video and hosts it unchanged, in place (no bytes move: docs/uploads.md), which is timed as well.
//
// A second phase, on the counting Worker (scripts/bench-worker.ts), takes the PUT apart: the same file
// read and dropped by the Worker (the runtime's own ceiling), streamed into R2 through a
// FixedLengthStream, and the same behind a JS TransformStream, as the PUT's byte counter did before it
// was removed for what this step measures.
//
// A third phase sends 1 GB in parts (issue 12): prepare answers 8 MiB parts, and curl sends them four at a
// time (as the upload page does) through the Worker's part PUT, then complete assembles and hosts them.
// The same part files go, four at a time, to the plain server, and the whole file in one curl; each round
// also sends the 95 MB file in one PUT through the Worker, so the multipart path's throughput stands next
// to the single PUT's and the plain server's, seconds apart. The Worker's RSS and isolate memory are
// sampled during the parts: streaming keeps them flat however large the file.
//
//   npm run bench:upload     this part alone; rewrites its blocks of docs/benchmarks.md
//   npm run bench:upload -- --multipart-only   only the 1 GB multipart phase; prints it, writes nothing
//     … --multipart-only --bytes=300000000 --rounds=1   the same with another file size and number of rounds
import { join } from "node:path";
import { call } from "./lib/bench-http.mjs";
import { connectInspector, sampleIsolate, sampleRss, workerdProcesses } from "./lib/bench-memory.mjs";
import { MULTIPART_BYTES, MULTIPART_ROUNDS, multipartPart } from "./lib/bench-multipart.mjs";
import { machineLine, num, spread, stats, table, times } from "./lib/bench-report.mjs";
import { isMain, log, step } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withBenchStore } from "./lib/bench-server.mjs";
import { curlPut, mib, SAMPLE_MS, UPLOAD_BYTES, withDirAndSink, writeVideo } from "./lib/bench-upload-files.mjs";

const ROUNDS = 5;
/** The bound for the Worker process's growth during a PUT. */
export const GROWTH_LIMIT_BYTES = 32 * 2 ** 20;

/** One upload through the Worker: prepare, the PUT while sampling memory, complete. */
async function uploadThroughWorker(server, inspector, file) {
  const { body: reservation } = await call(server, "POST", "/media-uploads", {
    body: { filename: "bench.mp4", content_type: "video/mp4", size: UPLOAD_BYTES, type: "image" },
    expected: 201,
  });
  const processes = workerdProcesses(server);
  const sampler = sampleRss(
    processes.map((p) => p.pid),
    SAMPLE_MS,
  );
  await inspector.collectGarbage();
  const isolateSampler = sampleIsolate(inspector, SAMPLE_MS);
  const put = await curlPut(reservation.upload_request.url, file, reservation.upload_request.headers);
  const memory = sampler.stop();
  const isolate = await isolateSampler.stop();
  if (put.status !== 204) throw new Error(`the Worker's PUT answered ${put.status}`);
  const started = performance.now();
  const { body: hosted } = await call(server, "POST", `/media-uploads/${reservation.id}/complete`, { expected: 201 });
  const completeMs = performance.now() - started;
  if (hosted.type !== "video") throw new Error(`complete hosted the upload as ${hosted.type}, not a video`);
  const growth = Object.fromEntries(
    processes.map((p) => [p.role, { growth: memory[p.pid].peak - memory[p.pid].baseline, ...memory[p.pid] }]),
  );
  return { seconds: put.seconds, completeMs, growth, isolate };
}

/** Runs `fn(file, sink)` with the 95 MB file written and the plain server listening; removes both after. */
function withFileAndSink(fn) {
  return withDirAndSink("bench-upload", async (dir, sink) => {
    const file = join(dir, "bench.mp4");
    await writeVideo(file, UPLOAD_BYTES);
    return fn(file, sink);
  });
}

export function measureUpload(server) {
  return withFileAndSink(async (file, sink) => {
    const inspector = await connectInspector(server);
    // Warm-up: the first PUT also creates the store's coordinator and R2's local files.
    await uploadThroughWorker(server, inspector, file);
    await curlPut(`${sink.url}/discard`, file, { "Content-Type": "video/mp4" });
    const rounds = [];
    for (let round = 0; round < ROUNDS; round++) {
      const plain = await curlPut(`${sink.url}/discard`, file, { "Content-Type": "video/mp4" });
      if (plain.status !== 204) throw new Error(`the plain server answered ${plain.status}`);
      const worker = await uploadThroughWorker(server, inspector, file);
      rounds.push({ plain, worker });
      log(
        `  round ${round + 1}: plain ${num(UPLOAD_BYTES / plain.seconds / 1e6)} MB/s, Worker ${num(UPLOAD_BYTES / worker.seconds / 1e6)} MB/s, Worker RSS +${mib(worker.growth.worker.growth)} MiB, isolate +${mib(worker.isolate.growth)} MiB, proxy +${mib(worker.growth.proxy.growth)} MiB, complete ${num(worker.completeMs)} ms`,
      );
    }
    inspector.close();
    const of = (pick) => stats(rounds.map(pick));
    return {
      isolateGrowth: of((r) => r.worker.isolate.growth),
      isolateBaseline: of((r) => r.worker.isolate.baseline),
      plainMBps: of((r) => UPLOAD_BYTES / r.plain.seconds / 1e6),
      workerMBps: of((r) => UPLOAD_BYTES / r.worker.seconds / 1e6),
      // Within a round: the same file, the same curl, seconds apart.
      ratio: of((r) => r.worker.seconds / r.plain.seconds),
      workerGrowth: of((r) => r.worker.growth.worker.growth),
      proxyGrowth: of((r) => r.worker.growth.proxy.growth),
      workerBaseline: of((r) => r.worker.growth.worker.baseline),
      proxyBaseline: of((r) => r.worker.growth.proxy.baseline),
      samples: of((r) => r.worker.growth.worker.samples),
      completeMs: of((r) => r.worker.completeMs),
    };
  });
}

/** The steps of the PUT one at a time, with the same file and curl command (see the top of the file). */
export const streamSteps = [
  { step: "discard", name: "Worker reads the body and drops it (the runtime's ceiling)" },
  { step: "r2", name: "Worker streams it into R2 through a FixedLengthStream" },
  { step: "r2-transform", name: "the same behind a JS TransformStream (the PUT's former byte counter)" },
];
const DECOMPOSE_ROUNDS = 3;

export function decomposeUpload(countingServer) {
  return withFileAndSink(async (file, sink) => {
    const worker = workerdProcesses(countingServer).find((p) => p.role === "worker");
    const inspector = await connectInspector(countingServer);
    const headers = { "Content-Type": "video/mp4" };
    for (const { step } of streamSteps) await curlPut(`${countingServer.url}/_bench/stream/${step}`, file, headers);
    const rounds = [];
    for (let round = 0; round < DECOMPOSE_ROUNDS; round++) {
      const plain = await curlPut(`${sink.url}/discard`, file, headers);
      const steps = {};
      for (const { step } of streamSteps) {
        await inspector.collectGarbage();
        const sampler = sampleRss([worker.pid], SAMPLE_MS);
        const isolateSampler = sampleIsolate(inspector, SAMPLE_MS);
        const put = await curlPut(`${countingServer.url}/_bench/stream/${step}`, file, headers);
        const memory = sampler.stop()[worker.pid];
        const isolate = await isolateSampler.stop();
        if (put.status !== 204) throw new Error(`stream step ${step} answered ${put.status}`);
        steps[step] = { seconds: put.seconds, growth: memory.peak - memory.baseline, isolate: isolate.growth };
      }
      rounds.push({ plain, steps });
      log(
        `  decomposition round ${round + 1}: ${streamSteps.map(({ step }) => `${step} ${num(UPLOAD_BYTES / steps[step].seconds / 1e6)} MB/s, RSS +${mib(steps[step].growth)} MiB, isolate +${mib(steps[step].isolate)} MiB`).join(", ")}`,
      );
    }
    inspector.close();
    return streamSteps.map(({ step, name }) => ({
      step,
      name,
      mbps: stats(rounds.map((r) => UPLOAD_BYTES / r.steps[step].seconds / 1e6)),
      ratio: stats(rounds.map((r) => r.steps[step].seconds / r.plain.seconds)),
      growth: stats(rounds.map((r) => r.steps[step].growth)),
      isolate: stats(rounds.map((r) => r.steps[step].isolate)),
    }));
  });
}

export function uploadSection(result, steps, facts) {
  const mb = mib;
  return [
    `Measured ${machineLine(facts)}; curl ${facts.curl}.`,
    "",
    `Method: one ${num(UPLOAD_BYTES / 1e6)} MB file (${UPLOAD_BYTES.toLocaleString("en")} bytes, an MP4 \`ftyp\` box, then pseudo-random bytes) sent ${ROUNDS} times (after one warm-up) by the same command, \`curl --data-binary @file -X PUT -H "Expect:"\`, to a plain Node HTTP server on 127.0.0.1 that discards the body, and through the Worker's real flow on \`wrangler dev\` (prepare, PUT with the three headers prepare returned, complete; \`--var PUT_LIMIT_PER_MINUTE:1000000000\` and the same for the complete limit, so the limiters never refuse the bench). Time: curl's \`time_total\` of the PUT, until the 204. Memory: VmRSS of each workerd process of \`wrangler dev\`, sampled every ${SAMPLE_MS} ms during the PUT (${Math.round(result.samples.median)} samples per PUT), and the Worker isolate's own memory asked of V8 through \`wrangler dev\`'s inspector (\`Runtime.getHeapUsage\`: used heap + ArrayBuffer backing stores) at the same pace, after a full garbage collection in the isolate; growth = peak during the PUT − value just before it. Figures: median of the ${ROUNDS} rounds (min–max); MiB = 2^20 bytes.`,
    "",
    table(
      ["Figure", "Median (min–max)"],
      [1],
      [
        ["Plain Node server: throughput", `${spread(result.plainMBps)} MB/s`],
        ["Through the Worker: throughput (PUT until its 204)", `${spread(result.workerMBps)} MB/s`],
        ["Time ratio, Worker / plain (same round)", spread(result.ratio, times)],
        [
          "Worker process (workerd running the app, D1, R2, Durable Objects): RSS growth during the PUT",
          `${spread(result.workerGrowth, mb)} MiB (before: ${mb(result.workerBaseline.median)} MiB)`,
        ],
        [
          "The Worker's isolate (V8 heap + ArrayBuffer backing stores, from the inspector): growth during the PUT",
          `${spread(result.isolateGrowth, mb)} MiB (before: ${mb(result.isolateBaseline.median)} MiB)`,
        ],
        [
          "wrangler's dev proxy (the other workerd, forwarding every request): RSS growth during the PUT",
          `${spread(result.proxyGrowth, mb)} MiB (before: ${mb(result.proxyBaseline.median)} MiB)`,
        ],
        ["complete (sniff, then host in place: no bytes copied)", `${spread(result.completeMs)} ms`],
      ],
    ),
    "",
    `Where the time and memory go: the same file and curl command against the counting Worker's stream steps (scripts/bench-worker.ts), ${DECOMPOSE_ROUNDS} rounds, each step's time divided by the plain server's in the same round; growth of the Worker process as above.`,
    "",
    table(
      ["Step", "Throughput MB/s", "Time vs plain", "Worker RSS growth MiB", "Isolate growth MiB"],
      [1, 2, 3, 4],
      steps.map((s) => [s.name, spread(s.mbps), spread(s.ratio, times), spread(s.growth, mib), spread(s.isolate, mib)]),
    ),
  ].join("\n");
}

export const uploadHeading = "## 3. Upload streaming";

/** Part 3: the PUT on the app's own entry, its steps on the counting Worker. */
export const uploadPart = {
  title: "3. upload streaming",
  block: "bench-upload",
  heading: uploadHeading,
  limitMs: 8 * 60_000,
  measure: async () => ({
    result: await step("the PUT beside a plain server", 4 * 60_000, () => withBenchStore({}, measureUpload)),
    steps: await step("the upload's steps", 4 * 60_000, () => withBenchStore({ counting: true }, decomposeUpload)),
  }),
  section: ({ result, steps }, facts) => uploadSection(result, steps, facts),
};

if (isMain(import.meta.url)) {
  const multipartOnly = process.argv.includes("--multipart-only");
  const option = (name) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split("=")[1];
  const bytes = multipartOnly ? Number(option("bytes") ?? MULTIPART_BYTES) : MULTIPART_BYTES;
  const rounds = multipartOnly ? Number(option("rounds") ?? MULTIPART_ROUNDS) : MULTIPART_ROUNDS;
  if (!(bytes >= 5 * 2 ** 20 && bytes <= 2e9) || !(rounds >= 1)) {
    throw new Error("--bytes must be 5 MiB to 2 GB (the bench store's limit) and --rounds at least 1");
  }
  // --multipart-only: that phase alone, printed; otherwise part 3b, then part 3, both written.
  await runParts(multipartOnly ? [multipartPart] : [multipartPart, uploadPart], {
    watchdogMs: (multipartOnly ? 10 : 16) * 60_000,
    options: { bytes, rounds },
    write: !multipartOnly,
  });
}
