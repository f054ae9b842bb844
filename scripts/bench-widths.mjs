// Item 7 of `npm run bench`: responsive widths (`{file_url}?width=N`, src/media/widths.ts) through `wrangler dev`.
//
// - cold: the first request of a width (640 and 1280) of a freshly hosted 2560 × 1920 photo: the Worker
//   claims the width from the store's coordinator, reads the hosted WebP from R2, decodes it scaled with
//   libwebp, encodes (quality 80, method 2), stores the result and serves it. Beside sharp (libvips, one
//   thread, cache off) doing the same decode of the same hosted WebP, resize and encode (quality 80,
//   effort 2), paired per round: each round hosts a new photo, so every timed request is a real first one.
// - warm: the same variant read again (from the isolate's memory of widths, src/media/variant-memory.ts),
//   under load (autocannon) and alone, beside GET /_dev/ping, the Worker's trivial route, taking turns
//   within each round as in bench-requests.mjs.
// - bytes: what each configured width of a typical photo weighs beside the hosted 2560-px image.
//
//   npm run bench:widths      this part alone; writes its block at the end of docs/benchmarks.md
import autocannon from "autocannon";
import sharp from "sharp";
import { loadImageHelpers } from "./bench-convert.mjs";
import {
  benchFixture,
  call,
  installWatchdog,
  isMain,
  log,
  machineFacts,
  machineLine,
  num,
  percentile,
  runMain,
  spread,
  stats,
  step,
  table,
  times,
  withBenchServer,
  writeBlock,
} from "./bench-lib.mjs";

const COLD_ROUNDS = 7;
const COLD_WIDTHS = [640, 1280];
const WARM_ROUNDS = 3;
const CONNECTIONS = 10;
const LOAD_SECONDS = 5;
const WARMUP_SECONDS = 2;
const SEQUENTIAL = 150;
/** The bounds the feature was asked to meet. */
export const WIDTH_LIMITS = { coldVsSharp: 1.5, warmThroughputShare: 0.7, warmP50Ratio: 1.5 };
const QUALITY = 80;
const EFFORT = 2;

sharp.concurrency(1);
sharp.cache(false);

/** A 4000 × 3000 photo-like JPEG (the conversion bench's 12 MP input), hosted as a 2560 × 1920 WebP. */
async function photo() {
  const images = await loadImageHelpers();
  return images.encodeJpeg(images.photoLike(4000, 3000), 4000, 3000, { progressive: false, quality: 90 });
}

/** prepare + PUT + complete: the hosted result. */
async function host(server, jpeg) {
  const { body: reservation } = await call(server, "POST", "/media-uploads", {
    body: { filename: "photo.jpg", content_type: "image/jpeg", size: jpeg.length, type: "image" },
    expected: 201,
  });
  const put = await fetch(reservation.upload_request.url, {
    method: "PUT",
    headers: reservation.upload_request.headers,
    body: jpeg,
  });
  if (put.status !== 204) throw new Error(`PUT: ${put.status} ${await put.text()}`);
  const { body } = await call(server, "POST", `/media-uploads/${reservation.id}/complete`, { expected: 201 });
  if (!body.srcset) throw new Error(`not converted: ${JSON.stringify(body)}`);
  return body;
}

async function timedGet(url) {
  const start = performance.now();
  const response = await fetch(url);
  const bytes = Buffer.from(await response.arrayBuffer());
  const ms = performance.now() - start;
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${bytes.toString().slice(0, 300)}`);
  return { ms, bytes };
}

/** sharp on the same hosted WebP: decode, resize to the same size, encode at the Worker's settings. */
async function sharpOnce(hosted, width, height) {
  const start = performance.now();
  const out = await sharp(hosted)
    .resize(width, height, { fit: "fill" })
    .webp({ quality: QUALITY, effort: EFFORT })
    .toBuffer();
  return { ms: performance.now() - start, bytes: out.length };
}

export async function measureCold(server, jpeg) {
  // The isolate's first conversion creates the codec instances: not timed.
  const first = await host(server, jpeg);
  await timedGet(`${first.file_url}?width=320`);
  const rows = new Map(COLD_WIDTHS.map((width) => [width, []]));
  for (let round = 0; round < COLD_ROUNDS; round++) {
    const hosted = await host(server, jpeg);
    const { bytes: hostedBytes } = await timedGet(hosted.file_url);
    for (const width of COLD_WIDTHS) {
      const worker = await timedGet(`${hosted.file_url}?width=${width}`);
      const { width: w, height: h } = await sharp(worker.bytes).metadata();
      if (w !== width) throw new Error(`?width=${width} answered ${w} px wide`);
      const native = await sharpOnce(hostedBytes, w, h);
      rows
        .get(width)
        .push({ worker: worker.ms, sharp: native.ms, height: h, bytes: worker.bytes.length, sharpBytes: native.bytes });
      log(`  cold ${width}: worker ${num(worker.ms)} ms, sharp ${num(native.ms)} ms`);
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

async function load(url, seconds) {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: seconds });
  const answered = result["2xx"];
  if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0 || answered === 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  return { rps: answered / result.duration, p50: result.latency.p50 };
}

async function sequential(url) {
  const samples = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const start = performance.now();
    const response = await fetch(url);
    await response.arrayBuffer();
    samples.push(performance.now() - start);
    if (response.status >= 300) throw new Error(`${url}: ${response.status}`);
  }
  samples.sort((a, b) => a - b);
  return percentile(samples, 50);
}

export async function measureWarm(server, jpeg) {
  const hosted = await host(server, jpeg);
  const routes = [
    { name: "ping", url: `${server.url}/api/v1/_dev/ping` },
    { name: "variant", url: `${hosted.file_url}?width=640` },
  ];
  await timedGet(routes[1].url); // made once; every later read is warm
  for (const route of routes) await load(route.url, WARMUP_SECONDS);
  const rounds = [];
  for (let round = 0; round < WARM_ROUNDS; round++) {
    const figures = {};
    for (let k = 0; k < routes.length; k++) {
      const route = routes[(round + k) % routes.length];
      figures[route.name] = { ...(await load(route.url, LOAD_SECONDS)), alone: await sequential(route.url) };
      log(
        `  warm round ${round + 1} ${route.name}: ${num(figures[route.name].rps)} req/s, alone p50 ${num(figures[route.name].alone)} ms`,
      );
    }
    rounds.push(figures);
  }
  const of = (pick) => stats(rounds.map(pick));
  return {
    pingRps: of((r) => r.ping.rps),
    variantRps: of((r) => r.variant.rps),
    pingP50: of((r) => r.ping.p50),
    variantP50: of((r) => r.variant.p50),
    pingAlone: of((r) => r.ping.alone),
    variantAlone: of((r) => r.variant.alone),
    share: of((r) => r.variant.rps / r.ping.rps),
    loadedP50Ratio: of((r) => r.variant.p50 / Math.max(1, r.ping.p50)),
    aloneP50Ratio: of((r) => r.variant.alone / r.ping.alone),
  };
}

export async function measureBytes(server, jpeg) {
  const hosted = await host(server, jpeg);
  const full = (await timedGet(hosted.file_url)).bytes.length;
  const widths = hosted.srcset
    .split(", ")
    .map((entry) => /\?width=(\d+) /.exec(entry)?.[1])
    .filter(Boolean)
    .map(Number);
  const rows = [];
  for (const width of widths) {
    const bytes = (await timedGet(`${hosted.file_url}?width=${width}`)).bytes.length;
    rows.push({ width, bytes, saved: 1 - bytes / full });
  }
  return { full, width: hosted.width, height: hosted.height, rows };
}

export async function measureWidths(server) {
  const jpeg = await photo();
  const cold = await step("7. cold widths beside sharp", 6 * 60_000, () => measureCold(server, jpeg));
  const warm = await step("7. warm widths beside ping", 3 * 60_000, () => measureWarm(server, jpeg));
  const bytes = await step("7. bytes per width", 2 * 60_000, () => measureBytes(server, jpeg));
  return { cold, warm, bytes };
}

const kib = (bytes) => `${num(bytes / 1024)} KiB`;
const pct = (value) => `${Math.round(value * 100)} %`;

export function widthsSection({ cold, warm, bytes }, facts) {
  return [
    `Measured ${machineLine(facts)}.`,
    "",
    `Method: \`wrangler dev\` on 127.0.0.1; a 4000 × 3000 photo-like JPEG (the conversion bench's 12 MP input) hosted as a ${bytes.width} × ${bytes.height} WebP. **Cold**: the first \`GET {file_url}?width=N\` of a freshly hosted copy (claim from the store's coordinator, read the hosted WebP from R2, libwebp's scaled decode, encode at quality 80 / method 2, store in R2, serve), timed from the client, ${COLD_ROUNDS} rounds each a new upload, after one untimed warm-up; beside sharp (libvips, one thread, cache off) decoding the same hosted WebP, resizing to the same size and encoding at quality 80 / effort 2, paired per round. Bound: at most ${WIDTH_LIMITS.coldVsSharp}× sharp. Figures: median (min–max), ms.`,
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
    `**Warm**: \`?width=640\` of one image read again and again (from the isolate's memory of served widths: no cache, R2 or decode) beside \`GET /api/v1/_dev/ping\`, the Worker's trivial route; autocannon, ${CONNECTIONS} connections, ${LOAD_SECONDS} s per route and round after a ${WARMUP_SECONDS} s warm-up, ${WARM_ROUNDS} rounds taking turns; alone: ${SEQUENTIAL} sequential requests. Bounds: at least ${pct(WIDTH_LIMITS.warmThroughputShare)} of ping's throughput, p50 at most ${WIDTH_LIMITS.warmP50Ratio}× ping's. autocannon's latencies are whole milliseconds.`,
    "",
    table(
      [
        "Route",
        "Req/s",
        "p50 under load",
        "p50 alone",
        "Throughput vs ping",
        "p50 under load vs ping",
        "p50 alone vs ping",
      ],
      [1, 2, 3, 4, 5, 6],
      [
        ["ping (trivial route)", spread(warm.pingRps), spread(warm.pingP50), spread(warm.pingAlone), "1", "1", "1"],
        [
          "`?width=640`, warm",
          spread(warm.variantRps),
          spread(warm.variantP50),
          spread(warm.variantAlone),
          spread(warm.share, pct),
          spread(warm.loadedP50Ratio, times),
          spread(warm.aloneP50Ratio, times),
        ],
      ],
    ),
    "",
    `**Bytes** of each configured width of that photo beside the hosted ${bytes.width}-px image (${kib(bytes.full)}):`,
    "",
    table(
      ["Width", "Bytes", "Saved against the hosted image"],
      [1, 2],
      bytes.rows.map((row) => [String(row.width), kib(row.bytes), pct(row.saved)]),
    ),
  ].join("\n");
}

export const widthsHeading = "## 8. Responsive widths";

/** Only a store and a token: the full bench fixture takes longer to load. */
export function widthsFixture() {
  const { stores, tokens } = benchFixture();
  return { stores, tokens };
}

if (isMain(import.meta.url)) {
  installWatchdog(15 * 60_000);
  await runMain(async () => {
    const facts = await machineFacts();
    const result = await step("7. responsive widths", 12 * 60_000, () =>
      withBenchServer({ fixture: widthsFixture() }, measureWidths),
    );
    await writeBlock("bench-widths", widthsHeading, widthsSection(result, facts));
    log("wrote docs/benchmarks.md (responsive widths)");
  });
}
