// AVIF and placeholders (`{file_url}?format=avif`, the result's `placeholder`; docs/responsive-images.md) through
// `wrangler dev`, both Workers:
//
// - bytes at matched quality: real photos hosted, then every width of their srcset (and the full size) read as
//   WebP and as AVIF; each decoded and compared with the master scaled to that size (SSIM on luma, 8 × 8
//   windows every 4 px, the AVIF scaled back up first where the converter encoded it smaller). Goal: AVIF at
//   equal or better SSIM with at least 20 % fewer bytes.
// - cold: the first `?width=640&format=avif` and `?width=1280&format=avif` of a freshly hosted 2560 × 1920 photo,
//   beside sharp (libvips + libaom, one thread, cache off) decoding the same hosted WebP, resizing to the same
//   size and encoding AVIF at the same settings (quality 62, effort 1 = libaom cpu-used 8), paired per round.
//   Goal: at most 1.5× sharp.
// - warm: `?width=640&format=avif` read again and again beside GET /_dev/ping (as bench-widths.mjs does for
//   WebP widths). Goal: at least 70 % of ping's throughput.
// - placeholder: what a complete spends on it: the converter's ThumbHash and colour from a 2560 × 1920 target
//   (converter/src/convert/placeholder.ts) and the API's placeholder_url (src/uploads/placeholder-url.ts), the
//   same code bundled with esbuild and run in this Node process (workerd's timers do not advance while code
//   runs). Goal: at most 2 ms.
// - peak memory of the converter's isolate while it makes AVIFs after a conversion (its inspector: heap and
//   ArrayBuffers sampled, every WebAssembly memory's size after).
//
// Photos: the corpus's (test/fixtures/corpus: pillow/flower.jpg, pillow/hopper.jpg, libjpeg-turbo/testorig.jpg)
// and, when BENCH_PHOTOS names a folder, every JPEG and PNG in it (for example scikit-image's sample photos:
// `apt-get download python3-skimage && dpkg -x python3-skimage_*.deb x`, then
// BENCH_PHOTOS=x/usr/lib/python3/dist-packages/skimage/data).
//
//   npm run bench:avif        prints its section (markdown) and the figures as JSON at the end
import { readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import autocannon from "autocannon";
import { build } from "esbuild";
import sharp from "sharp";
import { loadImageHelpers } from "./bench-convert.mjs";
import {
  benchFixture,
  call,
  connectInspector,
  installWatchdog,
  isMain,
  log,
  machineFacts,
  machineLine,
  num,
  percentile,
  projectRoot,
  runMain,
  sampleIsolate,
  spread,
  stats,
  step,
  table,
  times,
  withBenchServer,
} from "./bench-lib.mjs";

const COLD_ROUNDS = 5;
const COLD_WIDTHS = [640, 1280];
const WARM_ROUNDS = 3;
const CONNECTIONS = 10;
const LOAD_SECONDS = 5;
const WARMUP_SECONDS = 2;
const PLACEHOLDER_RUNS = 60;
/** The converter's settings (converter/src/convert/avif.ts) and sharp's equivalents. */
const AVIF_QUALITY = 62;
const SHARP_EFFORT = 1; // libaom cpu-used 9 − effort = 8: the converter's speed
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

async function host(server, bytes, filename, contentType) {
  const { body: reservation } = await call(server, "POST", "/media-uploads", {
    body: { filename, content_type: contentType, size: bytes.length, type: "image" },
    expected: 201,
  });
  const put = await fetch(reservation.upload_request.url, {
    method: "PUT",
    headers: reservation.upload_request.headers,
    body: bytes,
  });
  if (put.status !== 204) throw new Error(`PUT: ${put.status} ${await put.text()}`);
  const { body } = await call(server, "POST", `/media-uploads/${reservation.id}/complete`, { expected: 201 });
  if (!body.sources) throw new Error(`not converted: ${JSON.stringify(body)}`);
  return body;
}

async function timedGet(url, init) {
  const start = performance.now();
  const response = await fetch(url, init);
  const bytes = Buffer.from(await response.arrayBuffer());
  const ms = performance.now() - start;
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${bytes.toString().slice(0, 300)}`);
  return { ms, bytes, type: response.headers.get("Content-Type") };
}

// ---------------------------------------------------------------------------------------------
// Quality: SSIM on luma
// ---------------------------------------------------------------------------------------------

function luma(rgb, pixels) {
  const y = new Float64Array(pixels);
  for (let i = 0; i < pixels; i++) y[i] = 0.299 * rgb[i * 3] + 0.587 * rgb[i * 3 + 1] + 0.114 * rgb[i * 3 + 2];
  return y;
}

/** Mean SSIM of two luma planes over 8 × 8 windows every 4 pixels (Wang et al.'s constants). */
export function ssim(a, b, width, height) {
  const [c1, c2] = [(0.01 * 255) ** 2, (0.03 * 255) ** 2];
  let total = 0;
  let count = 0;
  const size = Math.min(8, width, height);
  const n = size * size;
  for (let top = 0; top + size <= height; top += 4)
    for (let left = 0; left + size <= width; left += 4) {
      let [ma, mb] = [0, 0];
      for (let y = top; y < top + size; y++)
        for (let x = left; x < left + size; x++) [ma, mb] = [ma + a[y * width + x], mb + b[y * width + x]];
      [ma, mb] = [ma / n, mb / n];
      let [va, vb, cov] = [0, 0, 0];
      for (let y = top; y < top + size; y++)
        for (let x = left; x < left + size; x++) {
          const [da, db] = [a[y * width + x] - ma, b[y * width + x] - mb];
          [va, vb, cov] = [va + da * da, vb + db * db, cov + da * db];
        }
      [va, vb, cov] = [va / (n - 1), vb / (n - 1), cov / (n - 1)];
      total += ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2));
      count++;
    }
  return total / count;
}

/** A served image decoded to RGB at `width × height` (scaled up when it was encoded smaller), as luma. */
async function lumaOf(bytes, width, height) {
  const rgb = await sharp(bytes).removeAlpha().resize(width, height, { fit: "fill" }).raw().toBuffer();
  return luma(rgb, width * height);
}

async function measurePhoto(server, file) {
  const bytes = await readFile(file);
  const master = sharp(bytes).rotate();
  const contentType = file.toLowerCase().endsWith(".png") ? "image/png" : "image/jpeg";
  const hosted = await host(server, bytes, file.split("/").pop(), contentType);
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
    rows.push({
      photo: file.split("/").pop(),
      width: w,
      height: h,
      webpBytes: webp.bytes.length,
      avifBytes: avif.bytes.length,
      avifEncoded: `${encoded.width} × ${encoded.height}`,
      webpSsim: ssim(reference, await lumaOf(webp.bytes, w, h), w, h),
      avifSsim: ssim(reference, await lumaOf(avif.bytes, w, h), w, h),
    });
    const last = rows.at(-1);
    log(
      `  ${last.photo} ${w}: WebP ${last.webpBytes} B SSIM ${last.webpSsim.toFixed(4)}, AVIF ${last.avifBytes} B SSIM ${last.avifSsim.toFixed(4)}`,
    );
  }
  return rows;
}

export async function measureBytes(server) {
  const rows = [];
  for (const file of photoFiles()) rows.push(...(await measurePhoto(server, file)));
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Cold and warm
// ---------------------------------------------------------------------------------------------

async function bigPhoto() {
  const images = await loadImageHelpers();
  return images.encodeJpeg(images.photoLike(4000, 3000), 4000, 3000, { progressive: false, quality: 90 });
}

async function sharpAvif(hostedWebp, width, height) {
  const start = performance.now();
  const out = await sharp(hostedWebp)
    .resize(width, height, { fit: "fill" })
    .avif({ quality: AVIF_QUALITY, effort: SHARP_EFFORT, chromaSubsampling: "4:2:0" })
    .toBuffer();
  return { ms: performance.now() - start, bytes: out.length };
}

export async function measureCold(server, jpeg) {
  // The isolate's first AVIF creates the encoder: not timed.
  const first = await host(server, jpeg, "photo.jpg", "image/jpeg");
  await timedGet(`${first.file_url}?width=320&format=avif`);
  const rows = new Map(COLD_WIDTHS.map((width) => [width, []]));
  for (let round = 0; round < COLD_ROUNDS; round++) {
    const hosted = await host(server, jpeg, "photo.jpg", "image/jpeg");
    const { bytes: hostedBytes } = await timedGet(hosted.file_url);
    for (const width of COLD_WIDTHS) {
      const worker = await timedGet(`${hosted.file_url}?width=${width}&format=avif`);
      const { width: w, height: h } = await sharp(worker.bytes).metadata();
      const native = await sharpAvif(hostedBytes, w, h);
      rows
        .get(width)
        .push({ worker: worker.ms, sharp: native.ms, height: h, bytes: worker.bytes.length, sharpBytes: native.bytes });
      log(`  cold AVIF ${width}: worker ${num(worker.ms)} ms, sharp ${num(native.ms)} ms`);
    }
  }
  return COLD_WIDTHS.map((width) => {
    const runs = rows.get(width);
    return {
      width,
      height: runs[0].height,
      worker: stats(runs.map((r) => r.worker)),
      sharp: stats(runs.map((r) => r.sharp)),
      ratio: stats(runs.map((r) => r.worker / r.sharp)),
      bytes: runs[0].bytes,
      sharpBytes: runs[0].sharpBytes,
    };
  });
}

async function load(url) {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: LOAD_SECONDS });
  if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0 || result["2xx"] === 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  return { rps: result["2xx"] / result.duration, p50: result.latency.p50 };
}

export async function measureWarm(server, jpeg) {
  const hosted = await host(server, jpeg, "photo.jpg", "image/jpeg");
  const routes = [
    { name: "ping", url: `${server.url}/api/v1/_dev/ping` },
    { name: "avif", url: `${hosted.file_url}?width=640&format=avif` },
  ];
  await timedGet(routes[1].url);
  for (const route of routes) await autocannon({ url: route.url, connections: CONNECTIONS, duration: WARMUP_SECONDS });
  const rounds = [];
  for (let round = 0; round < WARM_ROUNDS; round++) {
    const figures = {};
    for (let k = 0; k < routes.length; k++) {
      const route = routes[(round + k) % routes.length];
      figures[route.name] = await load(route.url);
      log(`  warm round ${round + 1} ${route.name}: ${num(figures[route.name].rps)} req/s`);
    }
    rounds.push(figures);
  }
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
// The placeholder's cost, and the converter's memory
// ---------------------------------------------------------------------------------------------

/** The placeholder code of both Workers, bundled for Node. */
async function placeholderCode() {
  const bundled = await build({
    stdin: {
      contents: `export { placeholderOf } from "./converter/src/convert/placeholder.ts";
export { placeholderUrl } from "./src/uploads/placeholder-url.ts";`,
      resolveDir: projectRoot,
      loader: "ts",
    },
    bundle: true,
    format: "esm",
    platform: "node",
    write: false,
  });
  const code = bundled.outputFiles[0].text;
  return import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
}

export async function measurePlaceholder() {
  const { placeholderOf, placeholderUrl } = await placeholderCode();
  const images = await loadImageHelpers();
  const [width, height] = [2560, 1920];
  const photo = images.photoLike(width, height);
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0, j = 0; i < rgba.length; i += 4, j += photo.length === rgba.length ? 4 : 3) {
    rgba.set(photo.subarray(j, j + 3), i);
    rgba[i + 3] = 255;
  }
  const converter = [];
  const api = [];
  let made;
  for (let run = 0; run < PLACEHOLDER_RUNS + 10; run++) {
    const start = performance.now();
    made = placeholderOf(rgba, width, height);
    const middle = performance.now();
    const url = placeholderUrl(made.placeholder);
    const end = performance.now();
    if (run >= 10) {
      converter.push(middle - start);
      api.push(end - middle);
    }
    if (url.length > 1000) throw new Error(`placeholder_url of ${url.length} characters`);
  }
  const sorted = (values) => [...values].sort((a, b) => a - b);
  return {
    converter: stats(converter),
    api: stats(api),
    total: stats(converter.map((value, i) => value + api[i])),
    p95: percentile(sorted(converter.map((value, i) => value + api[i])), 95),
    urlLength: placeholderUrl(made.placeholder).length,
  };
}

export async function measureMemory(server, jpeg) {
  const inspector = await connectInspector(server, { which: "converter" });
  try {
    const steps = [];
    const hosted = await host(server, jpeg, "photo.jpg", "image/jpeg");
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

export async function measureAvif(server) {
  const jpeg = await bigPhoto();
  const placeholder = await step("AVIF: placeholder cost", 60_000, measurePlaceholder);
  log(`  placeholder: ${JSON.stringify(placeholder)}`);
  const memory = await step("AVIF: converter memory", 3 * 60_000, () => measureMemory(server, jpeg));
  log(`  memory: ${JSON.stringify(memory)}`);
  const bytes = await step("AVIF: bytes at matched quality", 10 * 60_000, () => measureBytes(server));
  const cold = await step("AVIF: cold beside sharp", 6 * 60_000, () => measureCold(server, jpeg));
  const warm = await step("AVIF: warm beside ping", 3 * 60_000, () => measureWarm(server, jpeg));
  return { bytes, cold, warm, placeholder, memory };
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const kib = (bytes) => `${num(bytes / 1024)} KiB`;
const mib = (bytes) => `${num(bytes / 1024 / 1024)} MiB`;
const pct = (value) => `${Math.round(value * 100)} %`;

function bytesTable(rows) {
  const saved = (row) => 1 - row.avifBytes / row.webpBytes;
  const met = rows.filter((row) => row.avifSsim >= row.webpSsim && saved(row) >= AVIF_GOALS.bytesSaved).length;
  const totals = rows.reduce((t, row) => [t[0] + row.webpBytes, t[1] + row.avifBytes], [0, 0]);
  const mean = (pick) => rows.reduce((sum, row) => sum + pick(row), 0) / rows.length;
  return [
    table(
      ["Photo", "Width", "WebP", "SSIM", "AVIF", "SSIM", "AVIF encoded at", "Bytes saved"],
      [1, 2, 3, 4, 5, 7],
      rows.map((row) => [
        row.photo,
        `${row.width} × ${row.height}`,
        kib(row.webpBytes),
        row.webpSsim.toFixed(4),
        kib(row.avifBytes),
        row.avifSsim.toFixed(4),
        row.avifEncoded,
        pct(saved(row)),
      ]),
    ),
    "",
    `All: WebP ${kib(totals[0])}, AVIF ${kib(totals[1])} (${pct(1 - totals[1] / totals[0])} fewer bytes); mean SSIM WebP ${mean((row) => row.webpSsim).toFixed(4)}, AVIF ${mean((row) => row.avifSsim).toFixed(4)}. Rows meeting the goal (AVIF SSIM ≥ WebP's and ≥ ${pct(AVIF_GOALS.bytesSaved)} fewer bytes): ${met} of ${rows.length}.`,
  ].join("\n");
}

export function avifSection({ bytes, cold, warm, placeholder, memory }, facts) {
  return [
    `Measured ${machineLine(facts)}.`,
    "",
    `**Bytes at matched quality** (WebP: the converter's, quality 80, method 2; AVIF: libaom speed 8, quality ${AVIF_QUALITY}, both made from the hosted WebP; SSIM on luma against the master scaled to each size with lanczos3):`,
    "",
    bytesTable(bytes),
    "",
    `**Cold** first \`?width=N&format=avif\` of a freshly hosted 2560 × 1920 photo (from the client, ${COLD_ROUNDS} rounds each a new upload) beside sharp decoding the same hosted WebP, resizing and encoding AVIF at quality ${AVIF_QUALITY}, effort ${SHARP_EFFORT} (libaom cpu-used 8), one thread. Goal ≤ ${AVIF_GOALS.coldVsSharp}×. Median (min–max), ms.`,
    "",
    table(
      ["Width", "Worker, first request", "sharp", "Worker / sharp", "Bytes (Worker)", "Bytes (sharp)"],
      [1, 2, 3, 4, 5],
      cold.map((row) => [
        `${row.width} × ${row.height}`,
        spread(row.worker),
        spread(row.sharp),
        spread(row.ratio, times),
        kib(row.bytes),
        kib(row.sharpBytes),
      ]),
    ),
    "",
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
    "",
    `**Placeholder per complete** (2560 × 1920 target, ${PLACEHOLDER_RUNS} runs after 10 untimed): the converter's ThumbHash and colour ${spread(placeholder.converter)} ms, the API's placeholder_url ${spread(placeholder.api)} ms, together ${spread(placeholder.total)} ms (p95 ${num(placeholder.p95)} ms); placeholder_url ${placeholder.urlLength} characters. Goal ≤ ${AVIF_GOALS.placeholderMs} ms.`,
    "",
    "**Converter isolate memory** (peak = sampled JS heap + ArrayBuffers, plus every WebAssembly memory after):",
    "",
    table(
      ["After", "Peak", "WebAssembly memories"],
      [1],
      memory.map((row) => [row.what, row.peak ? mib(row.peak) : "", row.wasm.map(mib).join(", ")]),
    ),
  ].join("\n");
}

if (isMain(import.meta.url)) {
  installWatchdog(30 * 60_000);
  await runMain(async () => {
    const facts = await machineFacts();
    const { stores, tokens } = benchFixture();
    const result = await step("AVIF and placeholders", 28 * 60_000, () =>
      withBenchServer({ fixture: { stores, tokens } }, measureAvif),
    );
    console.log(`\n## AVIF and placeholders\n\n${avifSection(result, facts)}\n`);
    console.log(JSON.stringify(result));
  });
}
