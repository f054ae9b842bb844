// Benchmarks the image-conversion pipeline (src/uploads/convert) against native cwebp.
//
// It runs the pipeline's own module code under Node 22: esbuild bundles src/uploads/convert/index.ts with
// `.wasm` imports turned into compiled WebAssembly.Module objects, exactly what wrangler's CompiledWasm rule
// gives the Worker. The figures that decide admission, the linear-memory sizes of each codec instance, are
// properties of the WebAssembly programs (their allocators and the sizes they request), so they are the same
// under Node's V8 as under workerd's. Process RSS is Node's and includes Node itself; it is shown for scale.
//
// Usage: npm run bench:convert
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = new URL("..", import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), "bench-convert-"));

const wasmAsModule = {
  name: "wasm-as-module",
  setup(b) {
    b.onLoad({ filter: /\.wasm$/ }, (args) => ({
      contents: `import { readFileSync } from "node:fs"; export default new WebAssembly.Module(readFileSync(${JSON.stringify(args.path)}));`,
      loader: "js",
    }));
  },
};

async function bundle(entry, name) {
  const outfile = join(work, `${name}.mjs`);
  await build({
    entryPoints: [entry],
    bundle: true,
    format: "esm",
    platform: "node",
    outfile,
    plugins: [wasmAsModule],
    logLevel: "error",
  });
  return import(pathToFileURL(outfile).href);
}

const pipeline = await bundle(join(root, "src/uploads/convert/index.ts"), "pipeline");
const helpers = await bundle(join(root, "test/uploads/convert/images.ts"), "images");
const mb = (n) => (n / 1e6).toFixed(1);

const inputs = [
  {
    name: "12 MP JPEG baseline (4000×3000)",
    kind: "jpeg",
    make: () => helpers.encodeJpeg(helpers.photoLike(4000, 3000), 4000, 3000, { progressive: false, quality: 90 }),
  },
  {
    name: "12 MP JPEG progressive (4000×3000)",
    kind: "jpeg",
    make: () => helpers.encodeJpeg(helpers.photoLike(4000, 3000), 4000, 3000, { progressive: true, quality: 90 }),
  },
  {
    name: "24 MP JPEG baseline (6000×4000)",
    kind: "jpeg",
    make: () => helpers.encodeJpeg(helpers.photoLike(6000, 4000), 6000, 4000, { progressive: false, quality: 90 }),
  },
  {
    name: "24 MP JPEG progressive (6000×4000)",
    kind: "jpeg",
    make: () => helpers.encodeJpeg(helpers.photoLike(6000, 4000), 6000, 4000, { progressive: true, quality: 90 }),
  },
  {
    name: "12 MP PNG RGBA opaque (4000×3000)",
    kind: "png",
    make: () => helpers.writeRgbaPng(helpers.photoLike(4000, 3000), 4000, 3000),
  },
];

const cwebp = spawnSync("cwebp", ["-version"], { encoding: "utf8" });
const cwebpVersion = cwebp.status === 0 ? cwebp.stdout.trim() : null;
let maxRss = process.memoryUsage().rss;
const sampler = setInterval(() => (maxRss = Math.max(maxRss, process.memoryUsage().rss)), 5);

const rows = [];
for (const input of inputs) {
  const bytes = await input.make();
  const file = join(work, `${rows.length}.${input.kind}`);
  writeFileSync(file, bytes);
  const rssBefore = process.memoryUsage().rss;
  maxRss = rssBefore;
  const started = performance.now();
  const out = await pipeline.convertToWebp(bytes, input.kind, { maxEdge: 2560 });
  await new Promise((r) => setTimeout(r, 10));
  const ms = performance.now() - started;
  const memory = await pipeline.codecMemory();
  let native = null;
  if (cwebpVersion) {
    const outFile = `${file}.webp`;
    const t = performance.now();
    execFileSync("cwebp", [
      "-quiet",
      "-q",
      "80",
      "-resize",
      String(out.width),
      String(out.height),
      file,
      "-o",
      outFile,
    ]);
    native = { ms: performance.now() - t, bytes: readFileSync(outFile).length };
  }
  rows.push({ input, bytes: bytes.length, out, ms, memory, rssPeak: maxRss, rssBefore, native });
  console.log(
    `${input.name}: ${mb(bytes.length)} MB → ${out.width}×${out.height} WebP ${(out.bytes.length / 1024).toFixed(0)} KiB in ${ms.toFixed(0)} ms` +
      ` | arena ${mb(memory.arena)} MB, encoder ${mb(memory.encoder)} MB, webp decoder ${mb(memory.webpDecoder)} MB, sum ${mb(memory.arena + memory.encoder + memory.webpDecoder)} MB` +
      ` | RSS peak ${mb(maxRss)} MB (+${mb(maxRss - rssBefore)})` +
      (native
        ? ` | cwebp ${native.ms.toFixed(0)} ms, ${(native.bytes / 1024).toFixed(0)} KiB, time ratio ${(ms / native.ms).toFixed(2)}×`
        : " | cwebp not installed"),
  );
}
clearInterval(sampler);

const machine = `${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, Node ${process.version}`;
console.log(
  `\nMachine: ${machine}; ${new Date().toISOString()}; ${cwebpVersion ? `cwebp ${cwebpVersion}` : "no cwebp"}`,
);
console.log(
  "Memory figures are high-water marks: each codec instance is reused, so they accumulate over the runs above.",
);
