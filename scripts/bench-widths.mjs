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
import sharp from "sharp";
import { storeAndTokenFixture } from "./lib/bench-fixture.mjs";
import { timedGet } from "./lib/bench-http.mjs";
import { coldBesideSharp, hostPhoto, warmBesidePing } from "./lib/bench-image-reads.mjs";
import { largePhotoJpeg } from "./lib/bench-images.mjs";
import { machineLine, num, spread, stats, table, times } from "./lib/bench-report.mjs";
import { isMain, step } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withBenchServer } from "./lib/bench-server.mjs";

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

/** sharp on the same hosted WebP: decode, resize to the same size, encode at the Worker's settings. */
async function sharpOnce(hosted, width, height) {
  const start = performance.now();
  const out = await sharp(hosted)
    .resize(width, height, { fit: "fill" })
    .webp({ quality: QUALITY, effort: EFFORT })
    .toBuffer();
  return { ms: performance.now() - start, bytes: out.length };
}

/** The first `?width=N` of a freshly hosted photo, per width of COLD_WIDTHS, beside sharp. */
export function measureCold(server, jpeg) {
  return coldBesideSharp(server, jpeg, {
    rounds: COLD_ROUNDS,
    widths: COLD_WIDTHS,
    query: (width) => `width=${width}`,
    warmQuery: "width=320",
    sharpOnce,
    label: "WebP",
  });
}

/** `?width=640` read again and again beside ping, under load and alone. */
export async function measureWarm(server, jpeg) {
  const hosted = await hostPhoto(server, jpeg);
  const rounds = await warmBesidePing(server, `${hosted.file_url}?width=640`, {
    name: "variant",
    rounds: WARM_ROUNDS,
    connections: CONNECTIONS,
    loadSeconds: LOAD_SECONDS,
    warmupSeconds: WARMUP_SECONDS,
    sequential: SEQUENTIAL,
  });
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
  const hosted = await hostPhoto(server, jpeg);
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
  const jpeg = await largePhotoJpeg();
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

/** Part 8 (7 in the run's order): on a store and its token alone (the full bench fixture takes longer to load). */
export const widthsPart = {
  title: "7. responsive widths",
  block: "bench-widths",
  heading: widthsHeading,
  limitMs: 12 * 60_000,
  measure: () => withBenchServer({ fixture: storeAndTokenFixture() }, measureWidths),
  section: widthsSection,
};

if (isMain(import.meta.url)) await runParts([widthsPart], { watchdogMs: 15 * 60_000 });
