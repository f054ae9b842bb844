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
import { execFile } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  benchFixture,
  call,
  connectInspector,
  countingEntry,
  installWatchdog,
  isMain,
  log,
  machineFacts,
  machineLine,
  num,
  onAbort,
  requireDebianTool,
  run,
  runMain,
  sampleIsolate,
  sampleRss,
  seededRandom,
  spread,
  stats,
  step,
  table,
  times,
  withBenchServer,
  workerdProcesses,
  writeBlock,
} from "./bench-lib.mjs";
import { loadFixture } from "./dev-server.mjs";

export const UPLOAD_BYTES = 95_000_000;
const ROUNDS = 5;
const SAMPLE_MS = 50;
/** The issue's bound for the Worker process's growth during a PUT. */
export const GROWTH_LIMIT_BYTES = 32 * 2 ** 20;

/**
 * Writes `size` bytes: an ISO BMFF `ftyp` box (brand isom, as test/support/media-bytes.ts isoMedia) and
 * one `mdat` box filling the rest with pseudo-random bytes, written in 1 MiB pieces.
 */
async function writeVideo(path, size) {
  const ascii = (text) => Buffer.from(text, "latin1");
  const u32 = (value) => {
    const buffer = Buffer.alloc(4);
    buffer.writeUInt32BE(value);
    return buffer;
  };
  const ftyp = Buffer.concat([u32(24), ascii("ftyp"), ascii("isom"), u32(0), ascii("isom"), ascii("mp41")]);
  const mdatHeader = Buffer.concat([u32(size - ftyp.length), ascii("mdat")]);
  const piece = Buffer.alloc(2 ** 20);
  const rng = seededRandom(95);
  for (let i = 0; i < piece.length; i += 4) piece.writeUInt32LE((rng.next() * 2 ** 32) >>> 0, i);
  const out = createWriteStream(path);
  const write = (chunk) =>
    new Promise((resolve, reject) => out.write(chunk, (error) => (error ? reject(error) : resolve())));
  await write(Buffer.concat([ftyp, mdatHeader]));
  let left = size - ftyp.length - mdatHeader.length;
  while (left > 0) {
    const chunk = piece.subarray(0, Math.min(left, piece.length));
    await write(chunk);
    left -= chunk.length;
  }
  await new Promise((resolve, reject) => out.end((error) => (error ? reject(error) : resolve())));
}

/** A plain HTTP server that reads and discards any body and answers 204: the reference. */
async function startSink() {
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.statusCode = 204;
      response.end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

/**
 * PUTs the file with curl and returns its status and time. `Expect:` is sent empty because curl would
 * otherwise wait for a `100 Continue` before a body this large; both targets get the same command.
 */
async function curlPut(url, file, headers) {
  const args = ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "-X", "PUT", "--data-binary", `@${file}`];
  args.push("-H", "Expect:");
  for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`);
  args.push(url);
  // execFile answers once curl's output is closed: with several curls at once, a child's `exit` can come
  // before its last output has been read, and the status line would be lost.
  const result = await new Promise((resolve, reject) =>
    execFile("curl", args, { timeout: 180_000 }, (error, stdout, stderr) =>
      error
        ? reject(new Error(`curl failed (${error.code ?? error.signal}): ${stderr || error.message}`))
        : resolve({ stdout, stderr }),
    ),
  );
  const [status, seconds] = result.stdout.trim().split(" ");
  return { status: Number(status), seconds: Number(seconds), stderr: result.stderr };
}

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
async function withFileAndSink(fn) {
  requireDebianTool("curl", "curl", "the upload bench sends the file with curl");
  const dir = await mkdtemp(join(tmpdir(), "bench-upload-"));
  const removeDir = () => rm(dir, { recursive: true, force: true });
  const unregister = onAbort(removeDir);
  const sink = await startSink();
  try {
    const file = join(dir, "bench.mp4");
    await writeVideo(file, UPLOAD_BYTES);
    return await fn(file, sink);
  } finally {
    await sink.close();
    await removeDir();
    unregister();
  }
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

const mib = (bytes) => num(bytes / 2 ** 20);

// ---------------------------------------------------------------------------------------------
// 1 GB in parts (issue 12)
// ---------------------------------------------------------------------------------------------

/** The file's size and the rounds: 1 GB and 3 in the report; `--multipart-only` may ask for others (`--bytes`, `--rounds`). */
export let MULTIPART_BYTES = 1_000_000_000;
let MULTIPART_ROUNDS = 3;
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
async function multipartThroughWorker(server, inspector, partFiles, partSize) {
  const reservation = await storeCall(server, "POST", "/media-uploads", {
    body: { filename: "bench-1gb.mp4", content_type: "video/mp4", size: MULTIPART_BYTES },
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

/**
 * The multipart phase on `server` (a bench server whose part limit is lifted): per round, the 1 GB file to
 * the plain server whole and in parts, through the Worker in parts (memory sampled), and the 95 MB file in
 * one PUT through the Worker.
 */
export async function measureMultipart(server) {
  requireDebianTool("curl", "curl", "the upload bench sends the file with curl");
  const dir = await mkdtemp(join(tmpdir(), "bench-multipart-"));
  const removeDir = () => rm(dir, { recursive: true, force: true });
  const unregister = onAbort(removeDir);
  const sink = await startSink();
  try {
    await loadMultipartStore(server);
    const big = join(dir, "bench-1gb.mp4");
    const single = join(dir, "bench.mp4");
    await writeVideo(big, MULTIPART_BYTES);
    await writeVideo(single, UPLOAD_BYTES);
    // The part size is the API's to choose: ask it once, then cut the file the way it said.
    const plan = (
      await storeCall(server, "POST", "/media-uploads", {
        body: { filename: "plan.mp4", content_type: "video/mp4", size: MULTIPART_BYTES },
        expected: 201,
      })
    ).multipart;
    const partsDir = join(dir, "parts");
    await mkdir(partsDir);
    const partFiles = await splitIntoParts(big, plan.part_size, partsDir);
    const lastSize = (await stat(partFiles.at(-1))).size;
    log(
      `  ${num(MULTIPART_BYTES / 1e9)} GB in ${partFiles.length} parts of ${plan.part_size} bytes (the last ${lastSize})`,
    );
    const inspector = await connectInspector(server);
    const headers = { "Content-Type": "video/mp4" };
    // Warm-up: the store's coordinator, R2's local multipart tables.
    await multipartThroughWorker(server, inspector, partFiles, plan.part_size);
    const rounds = [];
    for (let round = 0; round < MULTIPART_ROUNDS; round++) {
      const plainWhole = await curlPut(`${sink.url}/discard`, big, headers);
      const plainParts = await curlParts(() => `${sink.url}/discard`, partFiles, headers);
      const worker = await multipartThroughWorker(server, inspector, partFiles, plan.part_size);
      const singlePut = await singlePutThroughWorker(server, single);
      rounds.push({ plainWhole, plainParts, worker, singlePut });
      log(
        `  multipart round ${round + 1}: plain whole ${num(MULTIPART_BYTES / plainWhole.seconds / 1e6)} MB/s, plain parts ${num(MULTIPART_BYTES / plainParts.seconds / 1e6)} MB/s, Worker parts ${num(MULTIPART_BYTES / worker.seconds / 1e6)} MB/s, Worker single PUT (95 MB) ${num(UPLOAD_BYTES / singlePut.seconds / 1e6)} MB/s, Worker RSS +${mib(worker.growth.worker.growth)} MiB, isolate +${mib(worker.isolate.growth)} MiB, complete ${num(worker.completeMs)} ms`,
      );
    }
    inspector.close();
    const of = (pick) => stats(rounds.map(pick));
    return {
      parts: partFiles.length,
      partSize: plan.part_size,
      plainWholeMBps: of((r) => MULTIPART_BYTES / r.plainWhole.seconds / 1e6),
      plainPartsMBps: of((r) => MULTIPART_BYTES / r.plainParts.seconds / 1e6),
      workerMBps: of((r) => MULTIPART_BYTES / r.worker.seconds / 1e6),
      singlePutMBps: of((r) => UPLOAD_BYTES / r.singlePut.seconds / 1e6),
      ratioToPlainParts: of((r) => r.worker.seconds / r.plainParts.seconds),
      ratioToPlainWhole: of((r) => r.worker.seconds / r.plainWhole.seconds),
      ratioToSinglePut: of((r) => UPLOAD_BYTES / r.singlePut.seconds / (MULTIPART_BYTES / r.worker.seconds)),
      workerGrowth: of((r) => r.worker.growth.worker.growth),
      workerBaseline: of((r) => r.worker.growth.worker.baseline),
      workerPeak: of((r) => r.worker.growth.worker.peak),
      proxyGrowth: of((r) => r.worker.growth.proxy.growth),
      isolateGrowth: of((r) => r.worker.isolate.growth),
      isolateBaseline: of((r) => r.worker.isolate.baseline),
      samples: of((r) => r.worker.growth.worker.samples),
      completeMs: of((r) => r.worker.completeMs),
    };
  } finally {
    await sink.close();
    await removeDir();
    unregister();
  }
}

/** The lifted part limit of the bench's servers: 120 parts a round from one client would near the 600 a minute. */
export const multipartVars = { PART_LIMIT_PER_MINUTE: "1000000000" };

export function multipartSection(result, facts) {
  return [
    `Measured ${machineLine(facts)}; curl ${facts.curl}.`,
    "",
    `Method: one ${num(MULTIPART_BYTES / 1e9)} GB file (${MULTIPART_BYTES.toLocaleString("en")} bytes, an MP4 \`ftyp\` box, then pseudo-random bytes) cut with \`split\` into the ${result.parts} parts prepare asked for (${result.partSize.toLocaleString("en")} bytes each, the last the rest). Each of ${MULTIPART_ROUNDS} rounds (after one warm-up upload) sends, seconds apart and each part with \`curl --data-binary @part -X PUT -H "Expect:"\`, ${PARTS_AT_ONCE} at a time as the upload page does: the whole file in one curl to a plain Node server on 127.0.0.1 that discards the body; the parts to the same server; the parts through the Worker's real flow on \`wrangler dev\` (prepare, every part PUT with prepare's headers, complete; \`--var PART_LIMIT_PER_MINUTE:1000000000\`, as the other limits, so the limiter never refuses the bench); and the ${num(UPLOAD_BYTES / 1e6)} MB file of part 3 in one PUT through the Worker. Time: from the first part's request to the last part's 204 (curl's \`time_total\` for one PUT). Memory: as in part 3, sampled every ${SAMPLE_MS} ms while the parts go through the Worker (${Math.round(result.samples.median)} samples per upload). Figures: median of the ${MULTIPART_ROUNDS} rounds (min–max).`,
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
          `Worker process (workerd running the app, D1, R2, Durable Objects): RSS growth during the ${num(MULTIPART_BYTES / 1e9)} GB`,
          `${spread(result.workerGrowth, mib)} MiB (before: ${mib(result.workerBaseline.median)} MiB, peak: ${mib(result.workerPeak.median)} MiB)`,
        ],
        [
          `The Worker's isolate (V8 heap + ArrayBuffer backing stores): growth during the ${num(MULTIPART_BYTES / 1e9)} GB`,
          `${spread(result.isolateGrowth, mib)} MiB (before: ${mib(result.isolateBaseline.median)} MiB)`,
        ],
        [
          `wrangler's dev proxy: RSS growth during the ${num(MULTIPART_BYTES / 1e9)} GB`,
          `${spread(result.proxyGrowth, mib)} MiB`,
        ],
        ["complete (assemble the parts, sniff, host in place: no bytes copied)", `${spread(result.completeMs)} ms`],
      ],
    ),
  ].join("\n");
}

export const multipartHeading = "## 3b. Multipart upload of 1 GB";

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

if (isMain(import.meta.url)) {
  const multipartOnly = process.argv.includes("--multipart-only");
  const option = (name) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split("=")[1];
  if (multipartOnly) {
    MULTIPART_BYTES = Number(option("bytes") ?? MULTIPART_BYTES);
    MULTIPART_ROUNDS = Number(option("rounds") ?? MULTIPART_ROUNDS);
    if (!(MULTIPART_BYTES >= 5 * 2 ** 20 && MULTIPART_BYTES <= 2e9) || !(MULTIPART_ROUNDS >= 1)) {
      throw new Error("--bytes must be 5 MiB to 2 GB (the bench store's limit) and --rounds at least 1");
    }
  }
  installWatchdog((multipartOnly ? 10 : 16) * 60_000);
  await runMain(async () => {
    const facts = await machineFacts();
    const multipart = await step("3b. multipart upload", 10 * 60_000, () =>
      withBenchServer({ fixture: benchFixture(), vars: multipartVars }, measureMultipart),
    );
    if (multipartOnly) {
      console.log(`\n${multipartSection(multipart, facts)}\n`);
      return;
    }
    const result = await step("3. upload streaming", 4 * 60_000, () =>
      withBenchServer({ fixture: benchFixture() }, measureUpload),
    );
    const steps = await step("3. the upload's steps", 4 * 60_000, () =>
      withBenchServer({ entry: countingEntry, fixture: benchFixture() }, decomposeUpload),
    );
    await writeBlock("bench-upload", uploadHeading, uploadSection(result, steps, facts));
    await writeBlock("bench-multipart", multipartHeading, multipartSection(multipart, facts));
    log("wrote docs/benchmarks.md (upload streaming, multipart upload)");
  });
}
