// Images the benches make and read: the converter tests' image helpers (MozJPEG, photo-like pixels) bundled for
// Node, the large photo the image benches host, and 24-bit BMPs (which sharp's libvips cannot load).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import sharp from "sharp";
import { onAbort, projectRoot } from "./bench-run.mjs";

const wasmAsModule = {
  name: "wasm-as-module",
  setup(b) {
    b.onLoad({ filter: /\.wasm$/ }, (args) => ({
      contents: `import { readFileSync } from "node:fs"; export default new WebAssembly.Module(readFileSync(${JSON.stringify(args.path)}));`,
      loader: "js",
    }));
  },
};

/** The converter tests' image helpers (MozJPEG encoder, photo-like pixels), bundled for Node. */
export async function loadImageHelpers() {
  const work = await mkdtemp(join(tmpdir(), "bench-convert-"));
  const removeWork = () => rm(work, { recursive: true, force: true });
  const unregister = onAbort(removeWork);
  try {
    const outfile = join(work, "images.mjs");
    await build({
      entryPoints: [join(projectRoot, "converter/test/images.ts")],
      bundle: true,
      format: "esm",
      platform: "node",
      outfile,
      plugins: [wasmAsModule],
      logLevel: "error",
    });
    return await import(pathToFileURL(outfile).href);
  } finally {
    await removeWork();
    unregister();
  }
}

/** A 4000 × 3000 photo-like JPEG (quality 90, baseline): the 12 MP photo the image benches host. */
export async function largePhotoJpeg() {
  const images = await loadImageHelpers();
  return images.encodeJpeg(images.photoLike(4000, 3000), 4000, 3000, { progressive: false, quality: 90 });
}

/** A 24-bit bottom-up BMP of RGBA pixels. */
export function writeBmp(rgba, width, height) {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const out = Buffer.alloc(54 + stride * height);
  out.write("BM", 0, "latin1");
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(54, 10);
  out.writeUInt32LE(40, 14);
  out.writeInt32LE(width, 18);
  out.writeInt32LE(height, 22);
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(24, 28);
  out.writeUInt32LE(stride * height, 34);
  for (let y = 0; y < height; y++) {
    const row = 54 + (height - 1 - y) * stride;
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      out[row + x * 3] = rgba[i + 2];
      out[row + x * 3 + 1] = rgba[i + 1];
      out[row + x * 3 + 2] = rgba[i];
    }
  }
  return out;
}

/** RGB pixels of a 24-bit BMP written by writeBmp (libvips has no BMP loader in sharp's build). */
export function readBmp(bytes) {
  const width = bytes.readInt32LE(18);
  const height = bytes.readInt32LE(22);
  const stride = Math.ceil((width * 3) / 4) * 4;
  const rgb = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    const row = 54 + (height - 1 - y) * stride;
    for (let x = 0; x < width; x++) {
      rgb[(y * width + x) * 3] = bytes[row + x * 3 + 2];
      rgb[(y * width + x) * 3 + 1] = bytes[row + x * 3 + 1];
      rgb[(y * width + x) * 3 + 2] = bytes[row + x * 3];
    }
  }
  return sharp(rgb, { raw: { width, height, channels: 3 } });
}
