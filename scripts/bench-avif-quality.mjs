// The quality side of `npm run bench:avif` (scripts/bench-avif.mjs): for one photo at one width, the AVIF the
// service would make at other qualities, from the source it uses and from the master, and the lowest quality whose
// SSIM reaches the WebP's.
//
// - Same encoder and source: the converter's own code (converter/src/convert: `encodeHostedAvif`, and avif.ts
//   with whatever it does around the encoder, a grid past its pixel budget) bundled for Node with esbuild, with
//   two seams: `encodeAvif` keeps a copy of the pixels it is handed (the hosted WebP decoded by libwebp at the
//   AVIF's size), and the @jsquash/avif encoder it instantiates (the same avif_enc.wasm: libavif + libaom) takes
//   another quality or speed when asked, every other option staying the converter's. That the bytes at the
//   service's settings equal the served AVIF's is checked per row.
// - The master source: the master scaled with lanczos3 to that size, the pixels the SSIM reference is made of,
//   through the same `encodeAvif`: what the AVIF would be if it were not made from a lossy file.
// - SSIM on luma against the master scaled to the row's size (an AVIF encoded smaller scaled back up first).
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import sharp from "sharp";
import { num, table } from "./lib/bench-report.mjs";
import { projectRoot } from "./lib/bench-run.mjs";

/**
 * The converter's settings, read from converter/src/convert/avif.ts, so the bench follows a change of them (it
 * once kept 62 after the converter went to 66). The rows check them: at these settings Node's encode of the
 * converter's pixels must be the served AVIF byte for byte ({@link assertSameAsServed}).
 */
export const SERVICE_AVIF = (() => {
  const source = readFileSync(join(projectRoot, "converter/src/convert/avif.ts"), "utf8");
  const constant = (name) => Number(new RegExp(`^const ${name} = (\\d+);$`, "m").exec(source)?.[1]);
  const settings = { quality: constant("avifQuality"), speed: constant("avifSpeed") };
  if (!Number.isInteger(settings.quality) || !Number.isInteger(settings.speed)) {
    throw new Error("converter/src/convert/avif.ts: no `const avifQuality = N;` or `const avifSpeed = N;`");
  }
  return settings;
})();

/** Throws unless every row's AVIF at {@link SERVICE_AVIF}, encoded here, is the one the service served. */
export function assertSameAsServed(rows) {
  const differing = rows.filter((row) => !row.sameBytesAsServed);
  if (differing.length > 0) {
    throw new Error(
      `at quality ${SERVICE_AVIF.quality}, speed ${SERVICE_AVIF.speed} Node's encode is not the served AVIF in ${differing.length} of ${rows.length} rows (first: ${differing[0].photo} ${differing[0].width} × ${differing[0].height}): the bench's settings are not the converter's`,
    );
  }
}
/** Single production settings tried on every row (hosted source), beside the service's. */
const SWEEP = [...[62, 66, 70, 74, 78, 82].map((quality) => ({ quality, speed: 8 })), { quality: 70, speed: 7 }];

// ---------------------------------------------------------------------------------------------
// SSIM on luma
// ---------------------------------------------------------------------------------------------

export function luma(rgb, pixels) {
  const y = new Float64Array(pixels);
  for (let i = 0; i < pixels; i++) y[i] = 0.299 * rgb[i * 3] + 0.587 * rgb[i * 3 + 1] + 0.114 * rgb[i * 3 + 2];
  return y;
}

/** Mean SSIM of two luma planes over 8 × 8 windows every 4 pixels (Wang et al.'s constants). */
export function ssim(a, b, width, height) {
  const c1 = (0.01 * 255) ** 2;
  const c2 = (0.03 * 255) ** 2;
  const size = Math.min(8, width, height);
  const n = size * size;
  let total = 0;
  let count = 0;
  for (let top = 0; top + size <= height; top += 4)
    for (let left = 0; left + size <= width; left += 4) {
      // One pass: sums and sums of products (scalars: this runs a hundred thousand times a photo).
      let sa = 0;
      let sb = 0;
      let saa = 0;
      let sbb = 0;
      let sab = 0;
      for (let y = top; y < top + size; y++)
        for (let i = y * width + left, end = i + size; i < end; i++) {
          const va = a[i];
          const vb = b[i];
          sa += va;
          sb += vb;
          saa += va * va;
          sbb += vb * vb;
          sab += va * vb;
        }
      const ma = sa / n;
      const mb = sb / n;
      const varA = (saa - sa * ma) / (n - 1);
      const varB = (sbb - sb * mb) / (n - 1);
      const cov = (sab - sa * mb) / (n - 1);
      total += ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (varA + varB + c2));
      count++;
    }
  return total / count;
}

/** An encoded image (or `{ rgba, width, height }` pixels) as luma at `width × height`, scaled up when smaller. */
export async function lumaOf(image, width, height) {
  const input = image.rgba
    ? sharp(image.rgba, { raw: { width: image.width, height: image.height, channels: 4 } })
    : sharp(image);
  const rgb = await input.removeAlpha().resize(width, height, { fit: "fill" }).raw().toBuffer();
  return luma(rgb, width * height);
}

// ---------------------------------------------------------------------------------------------
// The encoder and the converter's source, in Node
// ---------------------------------------------------------------------------------------------

const wasmAsModule = {
  name: "wasm-as-module",
  setup(b) {
    b.onLoad({ filter: /\.wasm$/ }, (args) => ({
      contents: `import { readFileSync } from "node:fs"; export default new WebAssembly.Module(readFileSync(${JSON.stringify(args.path)}));`,
      loader: "js",
    }));
  },
};

const avifEncoderModule = "@jsquash/avif/codec/enc/avif_enc.js";

/**
 * Two seams in the converter's code, nothing else changed: its `./avif` keeps a copy of what `encodeAvif` is
 * handed (the source pixels) before encoding as ever, and the @jsquash encoder it instantiates takes the quality
 * and speed of {@link useSettings} over the converter's own (every other option, and whatever avif.ts does around
 * the encoder, stays the service's).
 */
const converterSeams = {
  name: "converter-seams",
  setup(b) {
    const avifPath = join(projectRoot, "converter/src/convert/avif.ts");
    const seam = (path) => ({ path, namespace: "bench-avif" });
    b.onResolve({ filter: /^\.\/avif$|^bench-avif-seams$/ }, () => seam("avif"));
    b.onResolve({ filter: /^@jsquash\/avif\/codec\/enc\/avif_enc\.js$/ }, (args) =>
      args.namespace === "bench-avif" ? undefined : seam("encoder"),
    );
    b.onLoad({ filter: /^avif$/, namespace: "bench-avif" }, () => ({
      contents: `export * from ${JSON.stringify(avifPath)};
import { encodeAvif as encodeAsEver } from ${JSON.stringify(avifPath)};
export { useSettings } from "bench-avif-encoder";
let kept = null;
export function encodeAvif(...args) {
  kept = args.map((arg) => (arg instanceof Uint8Array ? arg.slice() : arg));
  return encodeAsEver(...args);
}
export function takeKept() { const taken = kept; kept = null; return taken; }
export { encodeAsEver };`,
      resolveDir: projectRoot,
      loader: "js",
    }));
    b.onResolve({ filter: /^bench-avif-encoder$/ }, () => seam("encoder"));
    b.onLoad({ filter: /^encoder$/, namespace: "bench-avif" }, () => ({
      contents: `import factory from ${JSON.stringify(avifEncoderModule)};
let settings = null;
export function useSettings(next) { settings = next; }
export default async function instantiate(options) {
  const module = await factory(options);
  const encode = module.encode.bind(module);
  module.encode = (data, width, height, given) => {
    // The codec says "AVIF result is ok" on console.log at every encode; stdout is the report's.
    const log = console.log;
    console.log = () => {};
    try {
      return encode(data, width, height, settings ? { ...given, ...settings } : given);
    } finally {
      console.log = log;
    }
  };
  return module;
}`,
      resolveDir: projectRoot,
      loader: "js",
    }));
  },
};

/**
 * The converter's AVIF path in Node: `hostedSource(hostedWebp, width, height)` runs its `encodeHostedAvif` at the
 * service's settings and answers the pixels it encoded and the file; `encode(pixels, settings)` runs its
 * `encodeAvif` (a grid past the pixel budget, as served) at other settings.
 */
export async function createQualityProbe() {
  // A file, not a data: URL: the emscripten runtime resolves its .wasm against import.meta.url.
  const work = await mkdtemp(join(tmpdir(), "bench-avif-"));
  const outfile = join(work, "converter.mjs");
  let converter;
  try {
    await build({
      stdin: {
        contents: `export { encodeHostedAvif } from "./converter/src/convert/index.ts";
export { encodeAsEver, takeKept, useSettings } from "bench-avif-seams";`,
        resolveDir: projectRoot,
        loader: "ts",
      },
      bundle: true,
      format: "esm",
      platform: "node",
      outfile,
      logLevel: "error",
      plugins: [wasmAsModule, converterSeams],
    });
    converter = await import(pathToFileURL(outfile).href);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return {
    async hostedSource(hostedWebp, width, height) {
      converter.useSettings(null);
      const made = await converter.encodeHostedAvif(new Uint8Array(hostedWebp), { width, height });
      const [rgba, encodedWidth, encodedHeight] = converter.takeKept();
      return { rgba, width: encodedWidth, height: encodedHeight, file: Buffer.from(made.bytes) };
    },
    async encode({ rgba, width, height }, { quality, speed }) {
      converter.useSettings({ quality, speed });
      try {
        return Buffer.from(await converter.encodeAsEver(rgba, width, height));
      } finally {
        converter.useSettings(null);
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Per row: the service's settings, the sweep, and matched quality by bisection
// ---------------------------------------------------------------------------------------------

/** `encode()`'s wall and CPU time (this process, every thread) and its output's size. */
async function timed(encode) {
  const [start, cpu] = [performance.now(), process.cpuUsage()];
  const out = await encode();
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - start, cpu: (used.user + used.system) / 1000, bytes: out.length };
}

/**
 * Encoder against encoder on the same input: the pixels the converter hands its encoder for an AVIF of
 * `width × height`, encoded by the same WebAssembly here (V8, as in workerd) and by sharp at `sharpSettings`.
 */
export async function sameInputEncodes(probe, hostedWebp, width, height, sharpSettings) {
  const pixels = await probe.hostedSource(hostedWebp, width, height);
  const raw = { raw: { width: pixels.width, height: pixels.height, channels: 4 } };
  const wasm = await timed(() => probe.encode(pixels, SERVICE_AVIF));
  const native = await timed(() => sharp(pixels.rgba, raw).removeAlpha().avif(sharpSettings).toBuffer());
  return { wasm, native };
}

/**
 * One source's encodings, each made once: `at(settings)` → `{ quality, bytes, ssim, file }`; `matched(target)` →
 * the lowest quality at the service's speed whose SSIM ≥ target, or null when even 100 stays below. Bisection
 * over 0 … 100, narrowed first by the qualities already encoded; it takes SSIM to rise with quality (it does,
 * give or take a step).
 */
function encodings(probe, source, reference, width, height) {
  const seen = new Map();
  const at = async (settings) => {
    const key = `${settings.quality}/${settings.speed}`;
    if (!seen.has(key)) {
      const file = await probe.encode(source, settings);
      const closeness = ssim(reference, await lumaOf(file, width, height), width, height);
      seen.set(key, { ...settings, bytes: file.length, ssim: closeness, file });
    }
    return seen.get(key);
  };
  const matched = async (target) => {
    const speed = SERVICE_AVIF.speed;
    // Qualities below `low` stay under the target; `high` reaches it (101: none known yet).
    let [low, high] = [0, 101];
    for (const known of seen.values())
      if (known.speed === speed) {
        if (known.ssim >= target) high = Math.min(high, known.quality);
        else low = Math.max(low, known.quality + 1);
      }
    while (low < high) {
      const middle = Math.floor((low + high) / 2);
      if ((await at({ quality: middle, speed })).ssim >= target) high = middle;
      else low = middle + 1;
    }
    return high > 100 ? null : at({ quality: high, speed });
  };
  return { at, matched };
}

const plain = ({ quality, bytes, ssim }) => ({ quality, bytes, ssim });

/**
 * A row's quality figures: `master` is the master photo (sharp, upright), `hostedWebp` the hosted file's bytes,
 * `servedAvif` the service's AVIF, `webpSsim` the served WebP's SSIM, `reference` the master's luma at
 * `width × height`.
 */
export async function qualityRow(probe, { master, hostedWebp, servedAvif, webpSsim, reference, width, height }) {
  const hosted = await probe.hostedSource(hostedWebp, width, height);
  const masterPixels = await master
    .clone()
    .ensureAlpha()
    .resize(hosted.width, hosted.height, { fit: "fill", kernel: "lanczos3" })
    .raw()
    .toBuffer();
  const fromMaster = { rgba: new Uint8Array(masterPixels), width: hosted.width, height: hosted.height };
  const fromHosted = encodings(probe, hosted, reference, width, height);
  const fromMasterEncodings = encodings(probe, fromMaster, reference, width, height);
  const service = await fromHosted.at(SERVICE_AVIF);
  const sweep = [];
  for (const settings of SWEEP) sweep.push({ ...settings, ...plain(await fromHosted.at(settings)) });
  const sourceSsim = ssim(reference, await lumaOf(hosted, width, height), width, height);
  // An encoding of the source is no closer to the master than the source itself (at full size the source is the
  // WebP): no quality reaches the target then, and the bisection would only encode near-lossless files to show it.
  const matchedHosted = sourceSsim > webpSsim ? await fromHosted.matched(webpSsim) : null;
  const masterAtService = await fromMasterEncodings.at(SERVICE_AVIF);
  const matchedMaster = await fromMasterEncodings.matched(webpSsim);
  return {
    sameBytesAsServed: Buffer.compare(service.file, servedAvif) === 0,
    sourceSsim,
    master: plain(masterAtService),
    matchedHosted: matchedHosted && plain(matchedHosted),
    matchedMaster: matchedMaster && plain(matchedMaster),
    sweep,
  };
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const kib = (bytes) => `${num(bytes / 1024)} KiB`;
const pct = (value) => `${Math.round(value * 100)} %`;
const saved = (bytes, webpBytes) => 1 - bytes / webpBytes;
const sum = (values) => values.reduce((total, value) => total + value, 0);
const mean = (values) => sum(values) / values.length;
const isFullSize = (row) => row.fullSize;
const meetsGoal = (row, { bytes, ssim }) => ssim >= row.webpSsim && saved(bytes, row.webpBytes) >= 0.2;

function encodedCell({ bytes, ssim }) {
  return `${kib(bytes)} · ${ssim.toFixed(4)}`;
}

function matchedCell(row, matched, sourceSsim) {
  if (!matched)
    return sourceSsim !== undefined && sourceSsim <= row.webpSsim
      ? `— (source ${sourceSsim.toFixed(4)})`
      : "— (not at 100)";
  return `q${matched.quality}: ${kib(matched.bytes)}, ${pct(saved(matched.bytes, row.webpBytes))}`;
}

/** The per-row table: WebP, the service's AVIF, the same from the master, and matched quality from each source. */
export function qualityTable(rows) {
  return table(
    [
      "Photo",
      "Size",
      "WebP",
      `AVIF q${SERVICE_AVIF.quality} (served)`,
      "Source",
      `AVIF q${SERVICE_AVIF.quality} from master`,
      "Matched from hosted",
      "Matched from master",
    ],
    [2, 3, 4, 5, 6, 7],
    rows.map((row) => [
      row.photo,
      `${row.width} × ${row.height}${row.fullSize ? " (full)" : ""}${row.avifEncoded === `${row.width} × ${row.height}` ? "" : ` (AVIF ${row.avifEncoded})`}`,
      encodedCell({ bytes: row.webpBytes, ssim: row.webpSsim }),
      encodedCell({ bytes: row.avifBytes, ssim: row.avifSsim }),
      row.sourceSsim.toFixed(4),
      encodedCell(row.master),
      matchedCell(row, row.matchedHosted, row.sourceSsim),
      matchedCell(row, row.matchedMaster),
    ]),
  );
}

/** Mean SSIM over `rows` of the WebP, the served AVIF and the AVIF from the master; how much of the gap it closes. */
function gapLine(label, rows) {
  if (rows.length === 0) return "";
  const [webp, hosted, master] = [(r) => r.webpSsim, (r) => r.avifSsim, (r) => r.master.ssim].map((pick) =>
    mean(rows.map(pick)),
  );
  const share = webp > hosted ? ` against a gap of ${(webp - hosted).toFixed(4)}` : "";
  return `${label} (${rows.length} rows): WebP ${webp.toFixed(4)}, AVIF from the hosted WebP ${hosted.toFixed(4)}, AVIF from the master ${master.toFixed(4)} (${master >= hosted ? "+" : ""}${(master - hosted).toFixed(4)}${share})`;
}

function matchedLine(label, rows, pick) {
  const reached = rows.filter((row) => pick(row));
  if (reached.length === 0) return `${label}: reached in 0 of ${rows.length} rows.`;
  const webp = sum(reached.map((row) => row.webpBytes));
  const avif = sum(reached.map((row) => pick(row).bytes));
  const qualities = reached.map((row) => pick(row).quality).sort((a, b) => a - b);
  const goal = reached.filter((row) => saved(pick(row).bytes, row.webpBytes) >= 0.2).length;
  return `${label}: reached in ${reached.length} of ${rows.length} rows, at qualities ${qualities[0]}–${qualities.at(-1)} (median ${qualities[Math.floor(qualities.length / 2)]}); those rows ${kib(avif)} against WebP's ${kib(webp)} (${pct(saved(avif, webp))} fewer bytes), ≥ 20 % fewer in ${goal}.`;
}

/** The summary under the table: the service against the goal, where the gap comes from, matched savings. */
export function qualitySummary(rows) {
  const widths = rows.filter((row) => !isFullSize(row));
  const same = rows.filter((row) => row.sameBytesAsServed).length;
  const totals = [sum(rows.map((row) => row.webpBytes)), sum(rows.map((row) => row.avifBytes))];
  return [
    `- Served (quality ${SERVICE_AVIF.quality}): WebP ${kib(totals[0])}, AVIF ${kib(totals[1])} (${pct(saved(totals[1], totals[0]))} fewer bytes); mean SSIM WebP ${mean(rows.map((r) => r.webpSsim)).toFixed(4)}, AVIF ${mean(rows.map((r) => r.avifSsim)).toFixed(4)}. Goal (SSIM ≥ WebP's, ≥ 20 % fewer bytes) met in ${rows.filter((row) => meetsGoal(row, { bytes: row.avifBytes, ssim: row.avifSsim })).length} of ${rows.length} rows.`,
    `- Same encoder, same source: Node's encode of the converter's pixels at the service's settings is the served AVIF byte for byte in ${same} of ${rows.length} rows.`,
    `- Where the SSIM gap comes from (mean SSIM, quality ${SERVICE_AVIF.quality} both): ${[gapLine("widths", widths), gapLine("full size", rows.filter(isFullSize))].filter(Boolean).join("; ")}.`,
    `- ${matchedLine("Matched quality from the hosted WebP (what the service can do)", rows, (row) => row.matchedHosted)}`,
    `- ${matchedLine("Matched quality from the master", rows, (row) => row.matchedMaster)}`,
  ].join("\n");
}

/** One single setting for every row (from the hosted WebP, as served): how many rows it matches, at what bytes. */
export function sweepTable(rows) {
  const widths = rows.filter((row) => !isFullSize(row));
  const settings = rows[0].sweep.map(({ quality, speed }) => ({ quality, speed }));
  const at = (row, i) => row.sweep[i];
  return table(
    [
      "Quality, speed",
      "SSIM ≥ WebP's: widths",
      "all rows",
      "Goal met (widths)",
      "Bytes vs WebP (widths)",
      "Bytes vs WebP (all)",
      "Mean SSIM − WebP's (widths)",
    ],
    [1, 2, 3, 4, 5, 6],
    settings.map(({ quality, speed }, i) => {
      const reach = (set) => set.filter((row) => at(row, i).ssim >= row.webpSsim).length;
      const share = (set) => pct(sum(set.map((row) => at(row, i).bytes)) / sum(set.map((row) => row.webpBytes)));
      return [
        `${quality}, ${speed}`,
        `${reach(widths)} of ${widths.length}`,
        `${reach(rows)} of ${rows.length}`,
        `${widths.filter((row) => meetsGoal(row, at(row, i))).length}`,
        share(widths),
        share(rows),
        mean(widths.map((row) => at(row, i).ssim - row.webpSsim)).toFixed(4),
      ];
    }),
  );
}
