// Part 3b of `npm run bench`: 1 GB in parts (issue 12) through the Worker, beside the plain server (the file whole
// and in the same parts) and the single PUT of part 3 (bench-upload.mjs describes the whole part).
import { mkdir, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { loadFixture } from "../dev-server.mjs";
import { call } from "./bench-http.mjs";
import { connectInspector, sampleIsolate, sampleRss, workerdProcesses } from "./bench-memory.mjs";
import { machineLine, num, spread, stats, table, times } from "./bench-report.mjs";
import { log, run } from "./bench-run.mjs";
import { withBenchStore } from "./bench-server.mjs";
import { curlPut, mib, SAMPLE_MS, UPLOAD_BYTES, withDirAndSink, writeVideo } from "./bench-upload-files.mjs";

/** The file's size and the rounds: 1 GB and 3 in the report; `--multipart-only` may ask for others (`--bytes`, `--rounds`). */
export const MULTIPART_BYTES = 1_000_000_000;
export const MULTIPART_ROUNDS = 3;
/** Parts in flight at once, as the upload page sends them. */
const PARTS_AT_ONCE = 4;

/** A store of its own whose upload limit admits the 1 GB file (the bench store's stops at 200 MB). */
const multipartStore = {
  id: "e4c2a7b1-3f5d-4c8e-9a0b-6d1f2e3c4b57",
  token: "bench-multipart-token-0001",
};

async function loadMultipartStore(server) {
  await loadFixture(server.url, {
    stores: [{ id: multipartStore.id, name: "Bench video store", plan_active: true, upload_limit_bytes: 2e9 }],
    tokens: [{ token: multipartStore.token, store_ids: [multipartStore.id], abilities: ["media:write"] }],
  });
}

/** A JSON call as the multipart store; throws unless the status is `expected`. */
async function storeCall(server, method, path, { body, expected }) {
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${multipartStore.token}`,
      "X-Service-Store": multipartStore.id,
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== expected) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 500)}`);
  return text ? JSON.parse(text) : null;
}

/** Cuts `file` into files of `partSize` bytes in `dir` (coreutils `split`); answers them in part order. */
async function splitIntoParts(file, partSize, dir) {
  const result = await run("split", ["-b", String(partSize), "-d", "-a", "5", file, join(dir, "part-")]);
  if (result.code !== 0) throw new Error(`split failed: ${result.stderr}`);
  return (await readdir(dir))
    .filter((name) => name.startsWith("part-"))
    .sort()
    .map((name) => join(dir, name));
}

/**
 * PUTs each part file with curl, `PARTS_AT_ONCE` at a time, to `urlOf(partNumber)`; answers the wall time
 * from the first request to the last answer, and throws on any status but 204.
 */
async function curlParts(urlOf, partFiles, headers) {
  const queue = partFiles.map((file, index) => ({ file, partNumber: index + 1 }));
  const started = performance.now();
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const put = await curlPut(urlOf(next.partNumber), next.file, headers);
      if (put.status !== 204) {
        throw new Error(
          `part ${next.partNumber} answered ${put.status}${put.stderr ? ` (curl: ${put.stderr.trim()})` : ""}`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: PARTS_AT_ONCE }, worker));
  return { seconds: (performance.now() - started) / 1000 };
}

/** One 1 GB upload through the Worker: prepare, the parts while sampling memory, complete. */
async function multipartThroughWorker(server, inspector, partFiles, partSize, bytes) {
  const reservation = await storeCall(server, "POST", "/media-uploads", {
    body: { filename: "bench-1gb.mp4", content_type: "video/mp4", size: bytes },
    expected: 201,
  });
  if (reservation.multipart?.part_size !== partSize || reservation.multipart.part_count !== partFiles.length) {
    throw new Error(
      `prepare planned ${JSON.stringify(reservation.multipart)}, not ${partFiles.length} parts of ${partSize}`,
    );
  }
  const processes = workerdProcesses(server);
  await inspector.collectGarbage();
  const sampler = sampleRss(
    processes.map((p) => p.pid),
    SAMPLE_MS,
  );
  const isolateSampler = sampleIsolate(inspector, SAMPLE_MS);
  const parts = await curlParts(
    (n) => reservation.multipart.part_url.replace("{part_number}", String(n)),
    partFiles,
    reservation.upload_request.headers,
  );
  const memory = sampler.stop();
  const isolate = await isolateSampler.stop();
  const started = performance.now();
  const hosted = await storeCall(server, "POST", `/media-uploads/${reservation.id}/complete`, { expected: 201 });
  const completeMs = performance.now() - started;
  if (hosted.type !== "video") throw new Error(`complete hosted the upload as ${hosted.type}, not a video`);
  const growth = Object.fromEntries(
    processes.map((p) => [p.role, { growth: memory[p.pid].peak - memory[p.pid].baseline, ...memory[p.pid] }]),
  );
  return { seconds: parts.seconds, completeMs, growth, isolate };
}

/** One 95 MB single PUT through the Worker (prepare, PUT), for the same round's comparison. */
async function singlePutThroughWorker(server, file) {
  const { body: reservation } = await call(server, "POST", "/media-uploads", {
    body: { filename: "bench.mp4", content_type: "video/mp4", size: UPLOAD_BYTES },
    expected: 201,
  });
  const put = await curlPut(reservation.upload_request.url, file, reservation.upload_request.headers);
  if (put.status !== 204) throw new Error(`the Worker's PUT answered ${put.status}`);
  return put;
}

/** The 1 GB file and its parts as prepare plans them, the 95 MB file beside them, all in `dir`. */
async function writeFiles(server, dir, bytes) {
  const big = join(dir, "bench-1gb.mp4");
  const single = join(dir, "bench.mp4");
  await writeVideo(big, bytes);
  await writeVideo(single, UPLOAD_BYTES);
  // The part size is the API's to choose: ask it once, then cut the file the way it said.
  const plan = (
    await storeCall(server, "POST", "/media-uploads", {
      body: { filename: "plan.mp4", content_type: "video/mp4", size: bytes },
      expected: 201,
    })
  ).multipart;
  const partsDir = join(dir, "parts");
  await mkdir(partsDir);
  const partFiles = await splitIntoParts(big, plan.part_size, partsDir);
  const lastSize = (await stat(partFiles.at(-1))).size;
  log(`  ${num(bytes / 1e9)} GB in ${partFiles.length} parts of ${plan.part_size} bytes (the last ${lastSize})`);
  return { big, single, partFiles, partSize: plan.part_size };
}

/** One round: the file to the plain server whole and in parts, through the Worker in parts, the 95 MB in one PUT. */
async function multipartRound(server, inspector, sink, { big, single, partFiles, partSize }, bytes) {
  const headers = { "Content-Type": "video/mp4" };
  const plainWhole = await curlPut(`${sink.url}/discard`, big, headers);
  const plainParts = await curlParts(() => `${sink.url}/discard`, partFiles, headers);
  const worker = await multipartThroughWorker(server, inspector, partFiles, partSize, bytes);
  const singlePut = await singlePutThroughWorker(server, single);
  return { plainWhole, plainParts, worker, singlePut };
}

/** The figures of the rounds: throughputs, ratios within a round, memory growth, complete's time. */
function multipartFigures(rounds, files, bytes, roundCount) {
  const of = (pick) => stats(rounds.map(pick));
  return {
    bytes,
    rounds: roundCount,
    parts: files.partFiles.length,
    partSize: files.partSize,
    plainWholeMBps: of((r) => bytes / r.plainWhole.seconds / 1e6),
    plainPartsMBps: of((r) => bytes / r.plainParts.seconds / 1e6),
    workerMBps: of((r) => bytes / r.worker.seconds / 1e6),
    singlePutMBps: of((r) => UPLOAD_BYTES / r.singlePut.seconds / 1e6),
    ratioToPlainParts: of((r) => r.worker.seconds / r.plainParts.seconds),
    ratioToPlainWhole: of((r) => r.worker.seconds / r.plainWhole.seconds),
    ratioToSinglePut: of((r) => UPLOAD_BYTES / r.singlePut.seconds / (bytes / r.worker.seconds)),
    workerGrowth: of((r) => r.worker.growth.worker.growth),
    workerBaseline: of((r) => r.worker.growth.worker.baseline),
    workerPeak: of((r) => r.worker.growth.worker.peak),
    proxyGrowth: of((r) => r.worker.growth.proxy.growth),
    isolateGrowth: of((r) => r.worker.isolate.growth),
    isolateBaseline: of((r) => r.worker.isolate.baseline),
    samples: of((r) => r.worker.growth.worker.samples),
    completeMs: of((r) => r.worker.completeMs),
  };
}

/**
 * The multipart phase on `server` (a bench server whose part limit is lifted): per round, the `bytes` file to
 * the plain server whole and in parts, through the Worker in parts (memory sampled), and the 95 MB file in
 * one PUT through the Worker.
 */
export function measureMultipart(server, { bytes = MULTIPART_BYTES, rounds: roundCount = MULTIPART_ROUNDS } = {}) {
  return withDirAndSink("bench-multipart", async (dir, sink) => {
    await loadMultipartStore(server);
    const files = await writeFiles(server, dir, bytes);
    const inspector = await connectInspector(server);
    // Warm-up: the store's coordinator, R2's local multipart tables.
    await multipartThroughWorker(server, inspector, files.partFiles, files.partSize, bytes);
    const rounds = [];
    for (let round = 0; round < roundCount; round++) {
      const r = await multipartRound(server, inspector, sink, files, bytes);
      rounds.push(r);
      log(
        `  multipart round ${round + 1}: plain whole ${num(bytes / r.plainWhole.seconds / 1e6)} MB/s, plain parts ${num(bytes / r.plainParts.seconds / 1e6)} MB/s, Worker parts ${num(bytes / r.worker.seconds / 1e6)} MB/s, Worker single PUT (95 MB) ${num(UPLOAD_BYTES / r.singlePut.seconds / 1e6)} MB/s, Worker RSS +${mib(r.worker.growth.worker.growth)} MiB, isolate +${mib(r.worker.isolate.growth)} MiB, complete ${num(r.worker.completeMs)} ms`,
      );
    }
    inspector.close();
    return multipartFigures(rounds, files, bytes, roundCount);
  });
}

/** The lifted part limit of the bench's servers: 120 parts a round from one client would near the 600 a minute. */
export const multipartVars = { PART_LIMIT_PER_MINUTE: "1000000000" };

export function multipartSection(result, facts) {
  return [
    `Measured ${machineLine(facts)}; curl ${facts.curl}.`,
    "",
    `Method: one ${num(result.bytes / 1e9)} GB file (${result.bytes.toLocaleString("en")} bytes, an MP4 \`ftyp\` box, then pseudo-random bytes) cut with \`split\` into the ${result.parts} parts prepare asked for (${result.partSize.toLocaleString("en")} bytes each, the last the rest). Each of ${result.rounds} rounds (after one warm-up upload) sends, seconds apart and each part with \`curl --data-binary @part -X PUT -H "Expect:"\`, ${PARTS_AT_ONCE} at a time as the upload page does: the whole file in one curl to a plain Node server on 127.0.0.1 that discards the body; the parts to the same server; the parts through the Worker's real flow on \`wrangler dev\` (prepare, every part PUT with prepare's headers, complete; \`--var PART_LIMIT_PER_MINUTE:1000000000\`, as the other limits, so the limiter never refuses the bench); and the ${num(UPLOAD_BYTES / 1e6)} MB file of part 3 in one PUT through the Worker. Time: from the first part's request to the last part's 204 (curl's \`time_total\` for one PUT). Memory: as in part 3, sampled every ${SAMPLE_MS} ms while the parts go through the Worker (${Math.round(result.samples.median)} samples per upload). Figures: median of the ${result.rounds} rounds (min–max).`,
    "",
    table(
      ["Figure", "Median (min–max)"],
      [1],
      [
        ["Plain Node server, the whole file in one curl", `${spread(result.plainWholeMBps)} MB/s`],
        [`Plain Node server, the parts ${PARTS_AT_ONCE} at a time`, `${spread(result.plainPartsMBps)} MB/s`],
        [
          `Through the Worker, the parts ${PARTS_AT_ONCE} at a time (first request to last 204)`,
          `${spread(result.workerMBps)} MB/s`,
        ],
        [
          `Through the Worker, the ${num(UPLOAD_BYTES / 1e6)} MB file in one PUT (same round)`,
          `${spread(result.singlePutMBps)} MB/s`,
        ],
        ["Time ratio, Worker parts / plain parts (same round)", spread(result.ratioToPlainParts, times)],
        ["Time ratio, Worker parts / plain whole file (same round)", spread(result.ratioToPlainWhole, times)],
        [
          "Throughput ratio, single PUT / parts through the Worker (same round)",
          spread(result.ratioToSinglePut, times),
        ],
        [
          `Worker process (workerd running the app, D1, R2, Durable Objects): RSS growth during the ${num(result.bytes / 1e9)} GB`,
          `${spread(result.workerGrowth, mib)} MiB (before: ${mib(result.workerBaseline.median)} MiB, peak: ${mib(result.workerPeak.median)} MiB)`,
        ],
        [
          `The Worker's isolate (V8 heap + ArrayBuffer backing stores): growth during the ${num(result.bytes / 1e9)} GB`,
          `${spread(result.isolateGrowth, mib)} MiB (before: ${mib(result.isolateBaseline.median)} MiB)`,
        ],
        [
          `wrangler's dev proxy: RSS growth during the ${num(result.bytes / 1e9)} GB`,
          `${spread(result.proxyGrowth, mib)} MiB`,
        ],
        ["complete (assemble the parts, sniff, host in place: no bytes copied)", `${spread(result.completeMs)} ms`],
      ],
    ),
  ].join("\n");
}

export const multipartHeading = "## 3b. Multipart upload of 1 GB";

/** Part 3b, on a server of its own: its memory is sampled through the inspector, which answers one connection per server. */
export const multipartPart = {
  title: "3b. multipart upload",
  block: "bench-multipart",
  heading: multipartHeading,
  limitMs: 10 * 60_000,
  measure: (options) => withBenchStore({ vars: multipartVars }, (server) => measureMultipart(server, options)),
  section: multipartSection,
};
