import avifFactory from "@jsquash/avif/codec/enc/avif_enc.js";
import avifWasm from "@jsquash/avif/codec/enc/avif_enc.wasm";
import { defaultOptions } from "@jsquash/avif/meta.js";
import { type GridLayout, writeAvifGrid } from "./avif-grid";
import { readEncodedAvif } from "./avif-items";
import { cutTile, gridLayout, isOpaque, keepAlphaPlane } from "./avif-tiles";

/**
 * The AVIF encoder: libavif and libaom as @jsquash/avif builds them (WebAssembly, one thread, emscripten's
 * runtime), instantiated from the module wrangler compiles with the Worker.
 *
 * Memory (docs/conversion.md, "AVIF"): the encoder's linear memory grows with the pixels of one encoding,
 * whatever they show (measured at speed 8: 20 MB at 640 × 480, 48 MB at 1280 × 960, 50.3 MB at 1280 × 1024 of
 * noise, 153–183 MB at 2560 × 1920), and never shrinks. Its cap is emscripten's 2 GiB, so the bound is ours:
 * no encoding is handed more than {@link avifMaxPixels}. A larger picture is an AVIF grid (avif-grid.ts): cut
 * into equal tiles within that budget (avif-tiles.ts), coded one after another by this one instance, so its
 * memory stays at one tile's, and put together as one file at the picture's full size. 4:2:0 asks a grid for
 * an even width and height (MIAF 7.3.11.4.2), so a grid of odd size is coded 4:4:4, whose tiles take half the
 * pixels for the same memory ({@link avif444TilePixels}). An isolate holds the instance only between AVIF jobs:
 * a conversion or a WebP width lets go of it first (instances.ts), so it never sits beside a full codec and
 * scratch.
 *
 * Cost, measured in Node 22 (CPU time of one process on a shared machine; `wrangler dev` is 5–50 % slower),
 * the encoder a fresh instance: 2560 × 1920 (a 2 × 2 grid of 1280 × 960) 1.4 s for a photo, 2.0 s with alpha,
 * 4.9 s of noise, the encoder at 48.2 MB; the largest hosted image, 2560 × 2560 (2 × 3 of 1280 × 854), 1.6 s
 * for a photo, 2.4 s with alpha, 5.9 s of noise, 44.0 MB; the slowest, an odd size of noise (2560 × 2559:
 * 4:4:4, 5 × 2 of 512 × 1280) 9.1 s, 39.5 MB. The most the encoder ever takes is a tile of 1280 × 1024:
 * 50.3 MB. Beside it the job holds the picture's RGBA (where the codec decoded it, not copied: ≤ 26.2 MB), one tile's (≤ 5.2 MB), and
 * the tiles' files and the grid's (each about the AVIF's size: ≤ 10 MB of noise, ~0.1 MB for a photo). The
 * converter isolate's peak in workerd (`npm run bench:avif -- --parts=memory`, after the complete of the JPEG
 * the image came from): 84.3 MiB for a 2560 × 1920 photo (encoder 45.9, codec 29.9, JS 8.5 MiB); 2560 × 2560
 * took 114 MiB while the job still copied the picture's RGBA into JS (25 MiB of it), about 89 MiB without.
 */

/** Most pixels one encoding holds (a tile of a grid, or a whole AVIF): 1280 × 1024, at most 50.3 MB. */
export const avifMaxPixels = 1280 * 1024;
/** Most pixels of a 4:4:4 tile: 640 × 1024, whose encoding took at most 51 MB (928 × 720 of noise: 50.9 MB). */
export const avif444TilePixels = avifMaxPixels / 2;
/** libaom's speed (0 slowest … 10): 8 keeps a 1280 × 960 photo under a second and its memory at 48 MB. */
const avifSpeed = 8;
/**
 * Quality (libavif's 0 … 100, quantizer `(100 − q) × 63 / 100`), by measurement (`npm run bench:avif`, ten real
 * photos at every width): at 66 an AVIF made from the hosted WebP is as close to the master (SSIM) as the WebP of
 * the same width in 22 of 29 width rows, in 14 % fewer bytes; 62 saved 24 % but was as close in only 12. The
 * full-size AVIF cannot be as close as the hosted WebP it is made from at any quality.
 */
const avifQuality = 66;
/** @jsquash/avif's `subsample`: 1 is 4:2:0, 3 is 4:4:4. */
const subsample = { yuv420: 1, yuv444: 3 } as const;

type AvifModule = {
  encode(data: Uint8Array, width: number, height: number, options: typeof defaultOptions): Uint8Array | null;
  HEAPU8: Uint8Array;
};

let instance: Promise<AvifModule> | null = null;

function createInstance(): Promise<AvifModule> {
  return avifFactory({
    noInitialRun: true,
    // The compiled module is wrangler's: instantiate it here instead of fetching a file.
    instantiateWasm(imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance) => void) {
      const created = new WebAssembly.Instance(avifWasm, imports);
      done(created);
      return created.exports;
    },
  });
}

/** One encoding at the service's settings, of at most {@link avifMaxPixels}. */
async function encodeOnce(rgba: Uint8Array, width: number, height: number, chroma: number): Promise<Uint8Array> {
  instance ??= createInstance();
  const encoder = await instance;
  const options = { ...defaultOptions, quality: avifQuality, speed: avifSpeed, subsample: chroma };
  const out = encoder.encode(rgba, width, height, options);
  if (!out) throw new Error("the AVIF encoder failed");
  return out; // a copy: the binding copies the file out of the encoder's memory
}

/** The grid layout of a picture past the budget: 4:2:0 tiles when its size is even, else 4:4:4 ones. */
export function avifGridLayout(width: number, height: number): { layout: GridLayout; chroma: number } {
  if (width % 2 === 0 && height % 2 === 0)
    return { layout: gridLayout(width, height, avifMaxPixels, 2), chroma: subsample.yuv420 };
  return { layout: gridLayout(width, height, avif444TilePixels, 1), chroma: subsample.yuv444 };
}

/** `rgba` as an AVIF grid: each tile cut, encoded and read back in turn, then one container of them all. */
async function encodeGrid(rgba: Uint8Array, width: number, height: number): Promise<Uint8Array> {
  const { layout, chroma } = avifGridLayout(width, height);
  const withAlpha = !isOpaque(rgba);
  const tile = new Uint8Array(layout.tileWidth * layout.tileHeight * 4);
  const tiles = [];
  for (let row = 0; row < layout.rows; row += 1)
    for (let column = 0; column < layout.columns; column += 1) {
      cutTile(rgba, layout, column, row, tile);
      if (withAlpha && isOpaque(tile)) keepAlphaPlane(tile);
      tiles.push(readEncodedAvif(await encodeOnce(tile, layout.tileWidth, layout.tileHeight, chroma)));
    }
  return writeAvifGrid(layout, tiles);
}

/**
 * Encodes RGBA pixels (`width × height`) as an AVIF at the service's settings, at that size: in one piece
 * within {@link avifMaxPixels}, else as a grid of tiles. Alpha is kept (an opaque image gets no alpha plane).
 */
export async function encodeAvif(rgba: Uint8Array, width: number, height: number): Promise<Uint8Array> {
  if (rgba.length !== width * height * 4)
    throw new RangeError(`${width} × ${height} RGBA is ${width * height * 4} bytes`);
  if (width * height <= avifMaxPixels) return encodeOnce(rgba, width, height, subsample.yuv420);
  return encodeGrid(rgba, width, height);
}

/** Lets go of the encoder: its memory is garbage once no encoding holds it. */
export function releaseAvif(): void {
  instance = null;
}

/** The encoder's linear memory in bytes (0 when none is held): tests and the benchmark read it. */
export async function avifMemoryBytes(): Promise<number> {
  return instance ? (await instance).HEAPU8.length : 0;
}
