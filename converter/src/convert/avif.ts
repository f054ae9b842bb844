import avifFactory from "@jsquash/avif/codec/enc/avif_enc.js";
import avifWasm from "@jsquash/avif/codec/enc/avif_enc.wasm";
import { defaultOptions } from "@jsquash/avif/meta.js";

/**
 * The AVIF encoder: libavif and libaom as @jsquash/avif builds them (WebAssembly, one thread, emscripten's
 * runtime), instantiated from the module wrangler compiles with the Worker.
 *
 * Memory (docs/conversion.md, "AVIF"): the encoder's linear memory grows with the pixels it encodes, whatever
 * they show (measured at speed 8: 20 MB at 640 × 480, 48 MB at 1280 × 960, 50.3 MB at 1280 × 1024 of noise,
 * 69 MB at 1600 × 1200, 93–112 MB at 1920 × 1440, 153–183 MB at 2560 × 1920), and never shrinks. Its cap is
 * emscripten's 2 GiB, so the bound is ours: nothing of more than {@link avifMaxPixels} is handed to it, and a
 * larger size is encoded scaled down to fit (`avifSize`). An isolate holds the instance only between AVIF jobs:
 * a conversion or a WebP width lets go of it first (instances.ts), so it never sits beside a full codec and
 * scratch.
 */

/** Most pixels one AVIF holds: 1280 × 1024, whose encoding takes at most 50.3 MB of the encoder's memory. */
export const avifMaxPixels = 1280 * 1024;
/** libaom's speed (0 slowest … 10): 8 keeps a 1280 × 960 photo under a second and its memory at 48 MB. */
const avifSpeed = 8;
/**
 * Quality (libavif's 0 … 100, quantizer `(100 − q) × 63 / 100`): chosen by measurement so that an AVIF is
 * at least as close to the master (SSIM) as the WebP of the same width at quality 80, in fewer bytes
 * (`npm run bench:avif`).
 */
const avifQuality = 62;

type AvifModule = {
  encode(data: Uint8Array, width: number, height: number, options: typeof defaultOptions): Uint8Array | null;
  HEAPU8: Uint8Array;
};

let instance: Promise<AvifModule> | null = null;

/** The size an AVIF of `width × height` is encoded at: the same, or scaled down to {@link avifMaxPixels}. */
export function avifSize(width: number, height: number): { width: number; height: number } {
  if (width * height <= avifMaxPixels) return { width, height };
  const scale = Math.sqrt(avifMaxPixels / (width * height));
  let [w, h] = [Math.max(1, Math.floor(width * scale)), Math.max(1, Math.floor(height * scale))];
  while (w * h > avifMaxPixels) [w, h] = [w - 1, Math.max(1, Math.round(((w - 1) * height) / width))];
  return { width: w, height: h };
}

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

/**
 * Encodes RGBA pixels (`width × height`, at most {@link avifMaxPixels}) as an AVIF at the service's settings;
 * alpha is kept (an opaque image gets no alpha plane).
 */
export async function encodeAvif(rgba: Uint8Array, width: number, height: number): Promise<Uint8Array> {
  if (width * height > avifMaxPixels) throw new RangeError(`an AVIF holds at most ${avifMaxPixels} pixels`);
  instance ??= createInstance();
  const encoder = await instance;
  const out = encoder.encode(rgba, width, height, { ...defaultOptions, quality: avifQuality, speed: avifSpeed });
  if (!out) throw new Error("the AVIF encoder failed");
  return out; // a copy: the binding copies the file out of the encoder's memory
}

/** Lets go of the encoder: its memory is garbage once no encoding holds it. */
export function releaseAvif(): void {
  instance = null;
}

/** The encoder's linear memory in bytes (0 when none is held): tests and the benchmark read it. */
export async function avifMemoryBytes(): Promise<number> {
  return instance ? (await instance).HEAPU8.length : 0;
}
