// AVIF and placeholders (`{file_url}?format=avif`, the result's `placeholder`; docs/responsive-images.md) through
// `wrangler dev`, both Workers:
//
// - bytes at matched quality (bench-avif-quality.mjs): real photos hosted, then every width of their srcset (and
//   the full size) read as WebP and as AVIF; each decoded and compared with the master scaled to that size (SSIM
//   on luma, 8 × 8 windows every 4 px, the AVIF scaled back up first where the converter encoded it smaller).
//   Beside the served AVIF, the same encoder in Node at other qualities, from the converter's own source pixels
//   and from the master's: the lowest quality whose SSIM reaches the WebP's, and single settings for all rows.
//   Goal: AVIF at equal or better SSIM with at least 20 % fewer bytes.
// - cold: the first `?width=640&format=avif` and `?width=1280&format=avif` of a freshly hosted 2560 × 1920 photo,
//   beside sharp (libvips + libheif + libaom, one thread, cache off) decoding the same hosted WebP, resizing to
//   the same size and encoding AVIF at the converter's settings (see SHARP_AVIF), paired per round; wall time
//   and CPU time. Goal: at most 1.5× sharp.
// - warm: `?width=640&format=avif` read again and again beside GET /_dev/ping (as bench-widths.mjs does for
//   WebP widths). Goal: at least 70 % of ping's throughput.
// - placeholder: what a complete spends on it: the converter's ThumbHash and colour from a 2560 × 1920 target
//   (converter/src/convert/placeholder.ts) and the API's placeholder_url (src/uploads/placeholder-url.ts), the
//   same code bundled with esbuild and run in this Node process (workerd's timers do not advance while code
//   runs; bench-avif-placeholder.mjs). Goal: at most 2 ms.
// - peak memory of the converter's isolate while it makes AVIFs after a conversion (its inspector: heap and
//   ArrayBuffers sampled, every WebAssembly memory's size after).
//
// Photos: the corpus's (test/fixtures/corpus: pillow/flower.jpg, pillow/hopper.jpg, libjpeg-turbo/testorig.jpg)
// and, when BENCH_PHOTOS names a folder, every JPEG and PNG in it (for example scikit-image's sample photos:
// `apt-get download python3-skimage && dpkg -x python3-skimage_*.deb x`, then
// BENCH_PHOTOS=x/usr/lib/python3/dist-packages/skimage/data).
//
//   npm run bench:avif                    rewrites its block of docs/benchmarks.md, prints it and the figures (JSON)
//   npm run bench:avif -- --parts=bytes   those parts alone (placeholder, memory, bytes, cold, warm); writes nothing
import { readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { measurePlaceholder, placeholderPart } from "./bench-avif-placeholder.mjs";
import {
  assertSameAsServed,
  createQualityProbe,
  luma,
  lumaOf,
  qualityRow,
  qualitySummary,
  qualityTable,
  SERVICE_AVIF,
  sameInputEncodes,
  ssim,
  sweepTable,
} from "./bench-avif-quality.mjs";
import { storeAndTokenFixture } from "./lib/bench-fixture.mjs";
import { hostImage, timedGet } from "./lib/bench-http.mjs";
import { hostPhoto, warmBesidePing } from "./lib/bench-image-reads.mjs";
import { largePhotoJpeg } from "./lib/bench-images.mjs";
import { connectInspector, sampleIsolate, workerdProcesses } from "./lib/bench-memory.mjs";
import { machineLine, num, spread, stats, table, times } from "./lib/bench-report.mjs";
import { isMain, log, projectRoot, step } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withBenchServer } from "./lib/bench-server.mjs";

const COLD_ROUNDS = 5;
const COLD_WIDTHS = [640, 1280];
const WARM_ROUNDS = 3;
const CONNECTIONS = 10;
const LOAD_SECONDS = 5;
const WARMUP_SECONDS = 2;
/**
 * sharp's AVIF at the converter's settings (converter/src/convert/avif.ts: its libavif quality and libaom speed,
 * 4:2:0, 8 bits, one thread). libvips hands libheif `speed = 9 − effort` and `threads = ` its concurrency (1
 * here: libaom then runs one thread, no row-mt), and libheif maps quality to libaom's cq-level as libavif does.
 * Tune: @jsquash/avif tunes libaom for SSIM at quality ≥ 50; sharp's default ("auto") is libaom's IQ tune with
 * libheif 1.23 and libaom 3.15, another mode (slower, files about twice as large): SHARP_BEFORE, the comparison
 * this bench made first, kept beside it.
 */
const SHARP_AVIF = { quality: SERVICE_AVIF.quality, effort: 1, chromaSubsampling: "4:2:0", bitdepth: 8, tune: "ssim" };
const SHARP_BEFORE = { ...SHARP_AVIF, tune: "auto" };
export const AVIF_GOALS = { bytesSaved: 0.2, coldVsSharp: 1.5, warmThroughputShare: 0.7, placeholderMs: 2 };

sharp.concurrency(1);
sharp.cache(false);

const corpusPhotos = ["pillow/flower.jpg", "pillow/hopper.jpg", "libjpeg-turbo/testorig.jpg"].map((path) =>
  join(projectRoot, "test/fixtures/corpus", path),
);

function photoFiles() {
  const extra = process.env.BENCH_PHOTOS;
  const more = extra
    ? readdirSync(extra)
        .filter((name) => /\.(jpe?g|png)$/i.test(name))
        .map((name) => join(extra, name))
    : [];
  return [...corpusPhotos, ...more];
}

async function measurePhoto(server, probe, file) {
  const bytes = await readFile(file);
  const master = sharp(bytes).rotate();
  const contentType = file.toLowerCase().endsWith(".png") ? "image/png" : "image/jpeg";
  const hosted = await hostImage(server, { bytes, filename: file.split("/").pop(), contentType }, "sources");
  const { bytes: hostedWebp } = await timedGet(hosted.file_url);
  const widths = [
    ...hosted.sources[1].srcset
      .split(", ")
      .map((entry) => /\?width=(\d+) /.exec(entry)?.[1])
      .filter(Boolean)
      .map(Number),
    null,
  ];
  const rows = [];
  for (const width of widths) {
    const w = width ?? hosted.width;
    const h = width === null ? hosted.height : Math.max(1, Math.round((hosted.height * width) / hosted.width));
    const reference = luma(
      await master.clone().removeAlpha().resize(w, h, { fit: "fill", kernel: "lanczos3" }).raw().toBuffer(),
      w * h,
    );
    const webp = await timedGet(width === null ? hosted.file_url : `${hosted.file_url}?width=${width}`);
    const avif = await timedGet(`${hosted.file_url}?${width === null ? "" : `width=${width}&`}format=avif`);
    if (avif.type !== "image/avif") throw new Error(`not an AVIF: ${avif.type}`);
    const encoded = await sharp(avif.bytes).metadata();
    const webpSsim = ssim(reference, await lumaOf(webp.bytes, w, h), w, h);
    const quality = await qualityRow(probe, {
      master,
      hostedWebp,
      servedAvif: avif.bytes,
      webpSsim,
      reference,
      width: w,
      height: h,
    });
    const row = {
      photo: file.split("/").pop(),
      width: w,
      height: h,
      fullSize: width === null,
      webpBytes: webp.bytes.length,
      avifBytes: avif.bytes.length,
      avifEncoded: `${encoded.width} × ${encoded.height}`,
      webpSsim,
      avifSsim: ssim(reference, await lumaOf(avif.bytes, w, h), w, h),
      ...quality,
    };
    rows.push(row);
    const hostedMatch = row.matchedHosted ? `q${row.matchedHosted.quality} ${row.matchedHosted.bytes} B` : "none";
    const masterMatch = row.matchedMaster ? `q${row.matchedMaster.quality} ${row.matchedMaster.bytes} B` : "none";
    log(
      `  ${row.photo} ${w}: WebP ${row.webpBytes} B ${webpSsim.toFixed(4)}, AVIF ${row.avifBytes} B ${row.avifSsim.toFixed(4)} (same in Node: ${row.sameBytesAsServed}), from master ${row.master.ssim.toFixed(4)}; matched: hosted ${hostedMatch}, master ${masterMatch}`,
    );
  }
  return rows;
}

export async function measureBytes(server) {
  const probe = await createQualityProbe();
  const rows = [];
  for (const file of photoFiles()) rows.push(...(await measurePhoto(server, probe, file)));
  assertSameAsServed(rows);
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Cold and warm
// ---------------------------------------------------------------------------------------------

/** CPU time (ms) the processes' threads have run so far (/proc/<pid>/task/<tid>/schedstat, nanoseconds). */
function cpuMs(pids) {
  let ns = 0;
  for (const pid of pids)
    for (const tid of readdirSync(`/proc/${pid}/task`))
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        // a thread that ended between the listing and the read
      }
  return ns / 1e6;
}

/** sharp decoding the hosted WebP, resizing and encoding AVIF: wall and CPU time (this process's, all threads). */
async function sharpAvif(hostedWebp, width, height, settings) {
  const [start, cpu] = [performance.now(), process.cpuUsage()];
  const out = await sharp(hostedWebp).resize(width, height, { fit: "fill" }).avif(settings).toBuffer();
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - start, cpu: (used.user + used.system) / 1000, bytes: out.length };
}

/**
 * One round at one width: the Worker's first AVIF (wall; its converter's CPU), sharp's at both settings, and
 * the two encoders alone on the converter's pixels.
 */
async function coldRound(server, probe, hosted, hostedBytes, width) {
  const converter = workerdProcesses(server, "converter")
    .filter((p) => p.role === "worker")
    .map((p) => p.pid);
  const cpuBefore = cpuMs(converter);
  const worker = await timedGet(`${hosted.file_url}?width=${width}&format=avif`);
  const workerCpu = cpuMs(converter) - cpuBefore;
  const { width: w, height: h } = await sharp(worker.bytes).metadata();
  const native = await sharpAvif(hostedBytes, w, h, SHARP_AVIF);
  const before = await sharpAvif(hostedBytes, w, h, SHARP_BEFORE);
  const same = await sameInputEncodes(probe, hostedBytes, w, h, SHARP_AVIF);
  log(
    `  cold AVIF ${width}: worker ${num(worker.ms)} ms (converter CPU ${num(workerCpu)}), sharp ${num(native.ms)} ms (CPU ${num(native.cpu)}), sharp tune auto ${num(before.ms)} ms; same pixels: WASM CPU ${num(same.wasm.cpu)} ${same.wasm.bytes} B, sharp CPU ${num(same.native.cpu)} ${same.native.bytes} B`,
  );
  return { worker, workerCpu, height: h, native, before, same };
}

export async function measureCold(server, jpeg) {
  // The isolate's first AVIF creates the encoder: not timed.
  const first = await hostPhoto(server, jpeg, "sources");
  await timedGet(`${first.file_url}?width=320&format=avif`);
  const probe = await createQualityProbe();
  const rows = new Map(COLD_WIDTHS.map((width) => [width, []]));
  for (let round = 0; round < COLD_ROUNDS; round++) {
    const hosted = await hostPhoto(server, jpeg, "sources");
    const { bytes: hostedBytes } = await timedGet(hosted.file_url);
    for (const width of COLD_WIDTHS) rows.get(width).push(await coldRound(server, probe, hosted, hostedBytes, width));
  }
  return COLD_WIDTHS.map((width) => {
    const runs = rows.get(width);
    const of = (pick) => stats(runs.map(pick));
    return {
      width,
      height: runs[0].height,
      worker: of((r) => r.worker.ms),
      workerCpu: of((r) => r.workerCpu),
      sharp: of((r) => r.native.ms),
      sharpCpu: of((r) => r.native.cpu),
      before: of((r) => r.before.ms),
      ratio: of((r) => r.worker.ms / r.native.ms),
      cpuRatio: of((r) => r.workerCpu / r.native.cpu),
      ratioBefore: of((r) => r.worker.ms / r.before.ms),
      wasmCpu: of((r) => r.same.wasm.cpu),
      nativeCpu: of((r) => r.same.native.cpu),
      encoderRatio: of((r) => r.same.wasm.cpu / r.same.native.cpu),
      bytes: runs[0].worker.bytes.length,
      wasmBytes: runs[0].same.wasm.bytes,
      nativeBytes: runs[0].same.native.bytes,
      sharpBytes: runs[0].native.bytes,
      beforeBytes: runs[0].before.bytes,
    };
  });
}

/** `?width=640&format=avif` read again and again beside ping, under load. */
export async function measureWarm(server, jpeg) {
  const hosted = await hostPhoto(server, jpeg, "sources");
  const rounds = await warmBesidePing(server, `${hosted.file_url}?width=640&format=avif`, {
    name: "avif",
    rounds: WARM_ROUNDS,
    connections: CONNECTIONS,
    loadSeconds: LOAD_SECONDS,
    warmupSeconds: WARMUP_SECONDS,
  });
  const of = (pick) => stats(rounds.map(pick));
  return {
    pingRps: of((r) => r.ping.rps),
    avifRps: of((r) => r.avif.rps),
    pingP50: of((r) => r.ping.p50),
    avifP50: of((r) => r.avif.p50),
    share: of((r) => r.avif.rps / r.ping.rps),
  };
}

// ---------------------------------------------------------------------------------------------
// The converter's memory
// ---------------------------------------------------------------------------------------------

export async function measureMemory(server, jpeg) {
  const inspector = await connectInspector(server, { which: "converter" });
  try {
    const steps = [];
    const hosted = await hostPhoto(server, jpeg, "sources");
    steps.push({ what: "after a 12 MP JPEG's complete", wasm: await inspector.wasmMemories() });
    for (const query of ["format=avif", "width=1280&format=avif", "width=640&format=avif"]) {
      await inspector.collectGarbage();
      const sampler = sampleIsolate(inspector, 20);
      await timedGet(`${hosted.file_url}?${query}`);
      const isolate = await sampler.stop();
      const wasm = await inspector.wasmMemories();
      steps.push({ what: `?${query}`, isolate, wasm, peak: isolate.peak + wasm.reduce((a, b) => a + b, 0) });
    }
    return steps;
  } finally {
    inspector.close();
  }
}

const PARTS = ["placeholder", "memory", "bytes", "cold", "warm"];
/** `--parts=bytes,cold` runs those alone (and writes nothing to docs/benchmarks.md). */
const parts =
  process.argv
    .find((arg) => arg.startsWith("--parts="))
    ?.slice(8)
    .split(",") ?? PARTS;

export async function measureAvif(server) {
  const jpeg = await largePhotoJpeg();
  const result = { load: [loadavg()[0]] };
  const run = async (part, name, minutes, fn) => {
    if (parts.includes(part)) result[part] = await step(`AVIF: ${name}`, minutes * 60_000, fn);
  };
  await run("placeholder", "placeholder cost", 1, measurePlaceholder);
  await run("memory", "converter memory", 3, () => measureMemory(server, jpeg));
  await run("bytes", "bytes at matched quality", 45, () => measureBytes(server));
  await run("cold", "cold beside sharp", 8, () => measureCold(server, jpeg));
  await run("warm", "warm beside ping", 3, () => measureWarm(server, jpeg));
  result.load.push(loadavg()[0]);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const kib = (bytes) => `${num(bytes / 1024)} KiB`;
const mib = (bytes) => `${num(bytes / 1024 / 1024)} MiB`;
const pct = (value) => `${Math.round(value * 100)} %`;

function bytesPart(rows) {
  const sweep = rows[0].sweep.map(({ quality, speed }) => `${quality}/${speed}`).join(", ");
  return [
    `**Bytes at matched quality**: every width of each photo's srcset and its full size, read as WebP (the converter's: quality 80, method 2; widths re-encoded from the hosted WebP) and as AVIF (libavif + libaom, quality ${SERVICE_AVIF.quality}, speed ${SERVICE_AVIF.speed}, from the hosted WebP decoded at the AVIF's size), SSIM on luma (8 × 8 windows every 4 px) of each against the master scaled to the row's size with lanczos3 (an AVIF encoded smaller scaled back up first). Beside them, in this Node process: the converter's own AVIF code (\`encodeHostedAvif\`, \`encodeAvif\`: the same avif_enc.wasm, a grid past the pixel budget) bundled with esbuild, with two seams: it keeps the pixels it encodes, and its encoder takes another quality or speed when asked. It encodes the converter's pixels (the hosted WebP decoded at the AVIF's size) or the master's (lanczos3 to that size). *Source*: SSIM of the hosted WebP as decoded for the AVIF, the best any AVIF made from it can do. *Matched*: the lowest quality (speed ${SERVICE_AVIF.speed}) whose SSIM ≥ the WebP's, by bisection over 0–100, with its bytes saved against the WebP; "—" when the source itself is no closer than the WebP. Cells: bytes · SSIM.`,
    "",
    qualityTable(rows),
    "",
    qualitySummary(rows),
    "",
    `**One setting for every row** (from the hosted WebP, as served; quality, speed: ${sweep}). Widths apart from full size: at full size the hosted WebP is the WebP served, so no AVIF made from it is closer to the master.`,
    "",
    sweepTable(rows),
  ].join("\n");
}

function coldPart(cold) {
  const size = (row) => `${row.width} × ${row.height}`;
  return [
    `**Cold**: the first \`?width=N&format=avif\` of a freshly hosted 2560 × 1920 photo (timed from the client; ${COLD_ROUNDS} rounds, each a new upload, after one untimed AVIF that creates the encoder) beside sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips}, libheif ${sharp.versions.heif}, libaom ${sharp.versions.aom}) decoding the same hosted WebP, resizing to the same size and encoding AVIF at the converter's settings: quality ${SHARP_AVIF.quality} (libheif's cq-level formula is libavif's), effort ${SHARP_AVIF.effort} (libaom speed 9 − effort = ${SERVICE_AVIF.speed}), 4:2:0, 8 bits, tune ssim (what libavif as @jsquash builds it sets at quality ≥ 50), one thread (\`sharp.concurrency(1)\`: libvips passes libheif threads = 1, so libaom runs without row-mt; the Worker's encoder is a one-thread WebAssembly build, libaom 3.7.0). *Before*: sharp's default tune ("auto", libaom's IQ tune here), what this bench compared against first. Goal ≤ ${AVIF_GOALS.coldVsSharp}× (wall). Median (min–max), ms.`,
    "",
    table(
      ["Width", "Worker", "sharp", "Worker / sharp", "sharp before", "Worker / sharp before"],
      [1, 2, 3, 4, 5],
      cold.map((row) => [
        size(row),
        spread(row.worker),
        spread(row.sharp),
        spread(row.ratio, times),
        spread(row.before),
        spread(row.ratioBefore, times),
      ]),
    ),
    "",
    "CPU time of the same rounds (what a busy machine does not stretch): the converter's workerd process (every thread, /proc schedstat) against sharp's (`process.cpuUsage`); then the two encoders alone on the same input, the pixels the converter hands its encoder (its own code in Node, as in the bytes part): the same avif_enc.wasm in Node's V8 against sharp's native libaom.",
    "",
    table(
      [
        "Width",
        "Converter CPU",
        "sharp CPU",
        "CPU / CPU",
        "Encode only: WASM",
        "sharp",
        "WASM / sharp",
        "Bytes: Worker, sharp, same pixels (WASM, sharp), before",
      ],
      [1, 2, 3, 4, 5, 6, 7],
      cold.map((row) => [
        size(row),
        spread(row.workerCpu),
        spread(row.sharpCpu),
        spread(row.cpuRatio, times),
        spread(row.wasmCpu),
        spread(row.nativeCpu),
        spread(row.encoderRatio, times),
        [row.bytes, row.sharpBytes, row.wasmBytes, row.nativeBytes, row.beforeBytes].map(kib).join(", "),
      ]),
    ),
  ].join("\n");
}

function warmPart(warm) {
  return [
    `**Warm** \`?width=640&format=avif\` beside \`GET /api/v1/_dev/ping\`; autocannon, ${CONNECTIONS} connections, ${LOAD_SECONDS} s per route and round, ${WARM_ROUNDS} rounds. Goal ≥ ${pct(AVIF_GOALS.warmThroughputShare)} of ping's throughput.`,
    "",
    table(
      ["Route", "Req/s", "p50 under load (ms)", "Throughput vs ping"],
      [1, 2, 3],
      [
        ["ping", spread(warm.pingRps), spread(warm.pingP50), "1"],
        ["`?width=640&format=avif`, warm", spread(warm.avifRps), spread(warm.avifP50), spread(warm.share, pct)],
      ],
    ),
  ].join("\n");
}

function memoryPart(memory) {
  return [
    "**Converter isolate memory** (peak = sampled JS heap + ArrayBuffers, plus every WebAssembly memory after):",
    "",
    table(
      ["After", "Peak", "WebAssembly memories"],
      [1],
      memory.map((row) => [row.what, row.peak ? mib(row.peak) : "", row.wasm.map(mib).join(", ")]),
    ),
  ].join("\n");
}

export function avifSection(result, facts) {
  const writers = {
    bytes: bytesPart,
    cold: coldPart,
    warm: warmPart,
    placeholder: placeholderPart,
    memory: memoryPart,
  };
  const [start, end] = result.load.map((value) => value.toFixed(1));
  return [
    `Measured ${machineLine(facts)}. Method: \`wrangler dev\` on 127.0.0.1, both Workers; \`npm run bench:avif\` (photos: the corpus's and, with \`BENCH_PHOTOS\`, scikit-image's samples). The machine is 2 shared vCPUs (1-minute load average ${start} at the start, ${end} at the end): absolute times are this machine's at that load, ratios are paired per round, and the bytes and SSIM do not depend on load.`,
    ...["bytes", "cold", "warm", "placeholder", "memory"]
      .filter((part) => result[part])
      .flatMap((part) => ["", writers[part](result[part])]),
  ].join("\n");
}

/** Part 12: on a store and its token alone (the full bench fixture takes longer to load). */
export const avifPart = {
  title: "12. AVIF and placeholders",
  block: "bench-avif",
  heading: "## 12. AVIF and placeholders",
  limitMs: 65 * 60_000,
  measure: () => withBenchServer({ fixture: storeAndTokenFixture() }, measureAvif),
  section: avifSection,
};

if (isMain(import.meta.url)) {
  // Run alone it prints the figures (JSON) too; a run of some parts only writes nothing.
  const printingFigures = {
    ...avifPart,
    measure: async () => {
      const result = await avifPart.measure();
      console.log(JSON.stringify(result));
      return result;
    },
  };
  await runParts([printingFigures], {
    watchdogMs: 70 * 60_000,
    write: PARTS.every((part) => parts.includes(part)),
  });
}
