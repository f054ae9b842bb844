// Item 2 of `npm run bench`: the Worker's image conversion (src/uploads/convert) against native cwebp.
//
// Two measurements of the same WASM pipeline:
// - in Node 22: esbuild bundles src/uploads/convert/index.ts with `.wasm` imports turned into compiled
//   WebAssembly.Module objects, exactly what wrangler's CompiledWasm rule gives the Worker. This is where
//   the conversion alone is timed and where each codec instance's linear memory is read: those sizes are
//   properties of the WebAssembly programs (their allocators and requests), the same under workerd's V8;
// - through the Worker: prepare, PUT and complete against `wrangler dev`, so the time includes what the
//   isolate really does around the conversion (reading the upload from R2, sniffing, writing the WebP).
// Each run of the pipeline is paired with a run of `cwebp` on the same file at the same quality (80),
// the same encoder effort (method 2) and the same output size, so the ratio is taken seconds apart.
//
//   npm run bench:convert             this part alone; rewrites its block of docs/benchmarks.md
//   npm run bench:convert -- --all    also the 24 MP inputs of docs/conversion.md's limits
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
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
  onAbort,
  projectRoot,
  requireDebianTool,
  sampleIsolate,
  spread,
  stats,
  table,
  times,
  withBenchServer,
  writeBlock,
} from "./bench-lib.mjs";

const RUNS = 5;
const WORKER_RUNS = 3;
const QUALITY = 80;
const MAX_EDGE = 2560;
/** The memory of one Worker isolate. */
export const ISOLATE_BYTES = 128 * 2 ** 20;
/** The issue's bound: the pipeline should be at most this many times slower than native cwebp. */
export const NATIVE_RATIO_LIMIT = 2;

const wasmAsModule = {
  name: "wasm-as-module",
  setup(b) {
    b.onLoad({ filter: /\.wasm$/ }, (args) => ({
      contents: `import { readFileSync } from "node:fs"; export default new WebAssembly.Module(readFileSync(${JSON.stringify(args.path)}));`,
      loader: "js",
    }));
  },
};

async function bundle(work, entry, name) {
  const outfile = join(work, `${name}.mjs`);
  await build({
    entryPoints: [join(projectRoot, entry)],
    bundle: true,
    format: "esm",
    platform: "node",
    outfile,
    plugins: [wasmAsModule],
    logLevel: "error",
  });
  return import(pathToFileURL(outfile).href);
}

/** Generated photo-like inputs (gradients, rings, noise; MozJPEG quality 90), as the tests make them. */
function inputList(all) {
  const jpeg = (w, h, progressive) => (images) =>
    images.encodeJpeg(images.photoLike(w, h), w, h, { progressive, quality: 90 });
  const list = [
    { name: "12 MP JPEG, baseline, 4000×3000", kind: "jpeg", mime: "image/jpeg", make: jpeg(4000, 3000, false) },
    { name: "12 MP JPEG, progressive, 4000×3000", kind: "jpeg", mime: "image/jpeg", make: jpeg(4000, 3000, true) },
    {
      name: "12 MP PNG, RGBA opaque, 4000×3000",
      kind: "png",
      mime: "image/png",
      make: (images) => images.writeRgbaPng(images.photoLike(4000, 3000), 4000, 3000),
    },
  ];
  if (all) {
    list.push(
      { name: "24 MP JPEG, baseline, 6000×4000", kind: "jpeg", mime: "image/jpeg", make: jpeg(6000, 4000, false) },
      { name: "24 MP JPEG, progressive, 6000×4000", kind: "jpeg", mime: "image/jpeg", make: jpeg(6000, 4000, true) },
    );
  }
  return list;
}

function cwebp(file, width, height, outFile) {
  const start = performance.now();
  execFileSync("cwebp", [
    "-quiet",
    ...["-q", String(QUALITY), "-m", "2"],
    ...["-resize", String(width), String(height)],
    file,
    ...["-o", outFile],
  ]);
  return performance.now() - start;
}

/**
 * Prepares the inputs in a throwaway directory and times the pipeline against cwebp on each. Returns
 * the per-input results, with the input bytes that `completeThroughWorker` uploads afterwards.
 */
export async function measureConversion({ all = false } = {}) {
  requireDebianTool("cwebp", "webp", "conversion is compared with native cwebp");
  const work = await mkdtemp(join(tmpdir(), "bench-convert-"));
  const removeWork = () => rm(work, { recursive: true, force: true });
  const unregister = onAbort(removeWork);
  try {
    return await convertInputs(work, all);
  } finally {
    // The bundles are imported and the inputs kept in memory by now: the files are no longer needed.
    await removeWork();
    unregister();
  }
}

async function convertInputs(work, all) {
  const pipeline = await bundle(work, "src/uploads/convert/index.ts", "pipeline");
  const images = await bundle(work, "test/uploads/convert/images.ts", "images");
  const inputs = inputList(all);
  for (const [i, input] of inputs.entries()) {
    input.bytes = await input.make(images);
    input.file = join(work, `${i}.${input.kind}`);
    await writeFile(input.file, input.bytes);
  }
  log(`  inputs ready: ${inputs.map((input) => `${input.name} ${num(input.bytes.length / 1e6)} MB`).join("; ")}`);

  // The isolate's first conversion also grows the encoder to its fixed share (warmEncoder, ~0.3 s): a
  // one-off per isolate, kept out of the timed runs.
  await pipeline.convertToWebp(inputs[0].bytes, inputs[0].kind, { maxEdge: MAX_EDGE, quality: QUALITY });

  const results = [];
  for (const input of inputs) {
    const pipelineMs = [];
    const nativeMs = [];
    const ratio = [];
    let out;
    let nativeBytes;
    for (let run = 0; run < RUNS; run++) {
      const start = performance.now();
      out = await pipeline.convertToWebp(input.bytes, input.kind, { maxEdge: MAX_EDGE, quality: QUALITY });
      const ms = performance.now() - start;
      const outFile = `${input.file}.webp`;
      const native = cwebp(input.file, out.width, out.height, outFile);
      nativeBytes = (await readFile(outFile)).length;
      pipelineMs.push(ms);
      nativeMs.push(native);
      ratio.push(ms / native);
    }
    // High-water marks: WebAssembly memory never shrinks, so after the runs each instance's size is the
    // peak of its stage (decode in the arena, encode in the encoder) over every conversion so far.
    const memory = await pipeline.codecMemory();
    const result = {
      input,
      fileBytes: input.bytes.length,
      width: out.width,
      height: out.height,
      outBytes: out.bytes.length,
      nativeBytes,
      pipelineMs: stats(pipelineMs),
      nativeMs: stats(nativeMs),
      ratio: stats(ratio),
      memory,
    };
    results.push(result);
    log(
      `  ${input.name}: pipeline ${spread(result.pipelineMs)} ms, cwebp ${spread(result.nativeMs)} ms, ratio ${spread(result.ratio, times)}; arena ${num(memory.arena / 2 ** 20)} MiB, encoder ${num(memory.encoder / 2 ** 20)} MiB`,
    );
  }
  return results;
}

/** The same inputs through the Worker: prepare, PUT, then the timed complete (which converts). */
export async function completeThroughWorker(server, results) {
  const inspector = await connectInspector(server);
  const once = async (input) => {
    const { body: reservation } = await call(server, "POST", "/media-uploads", {
      body: { filename: `bench.${input.kind}`, content_type: input.mime, size: input.bytes.length, type: "image" },
      expected: 201,
    });
    const put = await fetch(reservation.upload_request.url, {
      method: "PUT",
      headers: reservation.upload_request.headers,
      body: input.bytes,
    });
    if (put.status !== 204) throw new Error(`PUT ${input.name}: ${put.status} ${await put.text()}`);
    await inspector.collectGarbage();
    const sampler = sampleIsolate(inspector, 20);
    const start = performance.now();
    const { body: hosted } = await call(server, "POST", `/media-uploads/${reservation.id}/complete`, { expected: 201 });
    const ms = performance.now() - start;
    const memory = await sampler.stop();
    if (hosted.type !== "image" || !hosted.file_url.endsWith(".webp")) {
      throw new Error(`complete did not convert ${input.name}: ${JSON.stringify(hosted)}`);
    }
    return { ms, peak: memory.peak, growth: memory.growth };
  };
  // The isolate's first complete creates the codec instances and grows the encoder; not timed.
  await once(results[0].input);
  for (const result of results) {
    const runs = [];
    for (let run = 0; run < WORKER_RUNS; run++) runs.push(await once(result.input));
    result.completeMs = stats(runs.map((r) => r.ms));
    result.completeRatio = stats(runs.map((r) => r.ms / result.nativeMs.median));
    result.isolatePeak = stats(runs.map((r) => r.peak));
    result.isolateGrowth = stats(runs.map((r) => r.growth));
    log(
      `  ${result.input.name} through the Worker: complete ${spread(result.completeMs)} ms, JS heap and buffers peak ${mib(result.isolatePeak.max)} (+${mib(result.isolateGrowth.max)})`,
    );
  }
  inspector.close();
}

const kib = (bytes) => `${Math.round(bytes / 1024)} KiB`;
const mib = (bytes) => `${num(bytes / 2 ** 20)} MiB`;

export function convertSection(results, facts) {
  const withWorker = results.some((r) => r.completeMs);
  return [
    `Measured ${machineLine(facts)}; ${facts.cwebp ? `cwebp ${facts.cwebp}` : "no cwebp"} (Debian \`webp\`).`,
    "",
    `Method: generated photo-like inputs (gradients, rings, noise; MozJPEG quality 90), scaled to at most ${MAX_EDGE} px and 4.1 MP (docs/conversion.md). Pipeline: \`convertToWebp\` under Node 22 with the Worker's own WASM modules, ${RUNS} runs per input after one untimed conversion that grows the encoder (once per isolate). Native: \`cwebp -q ${QUALITY} -m 2 -resize W H\` on the same file right after each pipeline run (the pipeline encodes at quality ${QUALITY} with method 2; process start included). Ratio: pipeline time / cwebp time within each run${withWorker ? `. Through the Worker: \`POST /media-uploads/{id}/complete\` on \`wrangler dev\` (reads the upload from R2, sniffs, converts, writes the WebP), ${WORKER_RUNS} runs per input after one untimed complete, divided by cwebp's median` : ""}. Figures: median (min–max), ms.`,
    "",
    table(
      [
        "Input",
        "File",
        "Output",
        "Pipeline",
        "cwebp",
        "Ratio",
        ...(withWorker ? ["complete in the Worker", "Ratio to cwebp"] : []),
        "WebP: pipeline / cwebp",
      ],
      withWorker ? [1, 3, 4, 5, 6, 7, 8] : [1, 3, 4, 5, 6],
      results.map((r) => [
        r.input.name,
        `${num(r.fileBytes / 1e6)} MB`,
        `${r.width}×${r.height}`,
        spread(r.pipelineMs),
        spread(r.nativeMs),
        spread(r.ratio, times),
        ...(withWorker ? [spread(r.completeMs), spread(r.completeRatio, times)] : []),
        `${kib(r.outBytes)} / ${kib(r.nativeBytes)}`,
      ]),
    ),
    "",
    `Peak memory per stage, against the ${mib(ISOLATE_BYTES)} isolate: the linear memory of each codec instance after the runs (its high-water mark: WebAssembly memory never shrinks, and the instances live as long as the isolate), plus the file the caller holds. The figures accumulate down the table (the same instances convert every input).${withWorker ? " In workerd: what the Worker's isolate reported during a complete of that input through `wrangler dev`'s inspector (`Runtime.getHeapUsage` every 20 ms: V8's used heap + ArrayBuffer backing stores, which do not include WebAssembly memories), highest value and its growth over the value just before the complete (after a full garbage collection, so it starts from live memory); then that peak plus the codec instances above. The used heap also counts the complete's own garbage not yet collected, so that sum is an upper bound of the isolate's peak where the Sum column is a lower bound; the isolate answers between its tasks, so a peak inside one synchronous step can be missed." : ""}`,
    "",
    table(
      [
        "Input",
        "Decode (libjpeg-turbo arena)",
        "Encode (libwebp encoder)",
        "WebP decoder",
        "File",
        "Sum",
        "Of 128 MiB",
        ...(withWorker ? ["In workerd: JS heap + buffers, peak (growth)", "Peak + instances", "Of 128 MiB"] : []),
      ],
      withWorker ? [1, 2, 3, 4, 5, 6, 7, 8, 9] : [1, 2, 3, 4, 5, 6],
      results.map((r) => {
        const instances = r.memory.arena + r.memory.encoder + r.memory.webpDecoder;
        const sum = instances + r.fileBytes;
        const share = (bytes) => `${Math.round((bytes / ISOLATE_BYTES) * 100)} %`;
        return [
          r.input.name,
          mib(r.memory.arena),
          mib(r.memory.encoder),
          mib(r.memory.webpDecoder),
          mib(r.fileBytes),
          mib(sum),
          share(sum),
          ...(withWorker
            ? [
                `${mib(r.isolatePeak.max)} (+${mib(r.isolateGrowth.max)})`,
                mib(r.isolatePeak.max + instances),
                share(r.isolatePeak.max + instances),
              ]
            : []),
        ];
      }),
    ),
  ].join("\n");
}

export const convertHeading = "## 2. Conversion";

if (isMain(import.meta.url)) {
  installWatchdog(8 * 60_000);
  const all = process.argv.includes("--all");
  const facts = await machineFacts();
  const results = await measureConversion({ all });
  await withBenchServer({ fixture: benchFixture() }, (server) => completeThroughWorker(server, results));
  await writeBlock("bench-convert", convertHeading, convertSection(results, facts));
  log("wrote docs/benchmarks.md (conversion)");
}
