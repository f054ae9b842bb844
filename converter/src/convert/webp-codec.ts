import {
  type CodecGifDecoder,
  type CodecLosslessStream,
  type CodecPngDecoder,
  type CodecResizer,
  decodeJpeg,
  type GifDecoderPlan,
  gifDecoder,
  type JpegDecodePlan,
  losslessStream,
  type PngDecoderPlan,
  pngDecoder,
  resizer,
} from "./codec-decoders";
import { instantiateCodec } from "./codec-exports";
import { createEncoder, type WebpEncodeOptions } from "./webp-encode";

/**
 * Our libwebp build (converter/wasm/webp: Debian's libwebp 1.2.4 + codec.c, with libjpeg-turbo's baseline decoder,
 * zlib's inflate and Little CMS, `npm run build:wasm`): decoders and encoder in one linear memory, so the
 * pipeline decodes, resizes and encodes without copying pixels out.
 *
 * The module is standalone (no emscripten JS runtime): the Worker gets it as a compiled module (wrangler's
 * CompiledWasm rule) and instantiates it synchronously with four host functions (codec-exports.ts), the way
 * native.ts loads the wasi builds. Its memory starts at 2 MiB and grows by exactly what malloc asks for, up to the
 * cap set in build.sh (80 MiB); it never shrinks, so the instance costs its high-water mark for its life.
 *
 * The raw exports and their instantiation are in codec-exports.ts, the row decoders' wrappers in
 * codec-decoders.ts, the encoder in webp-encode.ts (5.6 bytes per output pixel at method 2, whatever the
 * content); this file puts them together as one `WebpCodec`.
 */

/**
 * Upper bound of the codec's memory after encoding width × height at quality ≤ 85 and method ≤ 2, starting
 * from a fresh instance: the 2 MiB it starts with (1.25 MB of static data, most of it the fallback CMYK
 * profile) plus 5.6 bytes per pixel (measured: at most 5.39 B/px above the start, for noise and photos from
 * 1000 × 700 to 2560 × 2560; alpha adds nothing here, it is coded in JS). Quality 90 and above need 8.5 B/px
 * (libwebp's partition buffers double once more).
 */
export function encodeMemoryBytes(width: number, height: number): number {
  return initialMemoryBytes + Math.ceil(5.6 * width * height);
}

/** The codec's memory when instantiated (build.sh's INITIAL_MEMORY). */
export const initialMemoryBytes = 2_097_152;

/**
 * What colour.c's transforms take: grey (the R byte of RGBA, in place), RGB (RGBA in place), CMYK rows (4
 * bytes a pixel) to RGB rows (3 bytes a pixel), plain (0 = no ink) or inverted as Adobe's files store it.
 */
export const colourKind = { grey: 1, rgb: 3, cmyk: 4, cmykInverted: 5 } as const;
export type ColourKind = (typeof colourKind)[keyof typeof colourKind];

/** libwebp's VP8StatusCode, as returned by decodeScaled. */
export const webpStatus = {
  ok: 0,
  outOfMemory: 1,
  invalidParam: 2,
  bitstreamError: 3,
  unsupportedFeature: 4,
  suspended: 5,
  userAbort: 6,
  notEnoughData: 7,
} as const;

/** What a lossless stream's feed answers beyond webpStatus: the window is full and the decoder cannot move on. */
export const losslessWindowTooSmall = 101;

/** What a WebP file's header says (WebPGetFeatures). */
type WebpFeatures = {
  width: number;
  height: number;
  hasAlpha: boolean;
  hasAnimation: boolean;
  /** Bitstream of the (first) frame; "mixed" for animations and files whose frame was not reached. */
  format: "mixed" | "lossy" | "lossless";
};

/** One libwebp instance and the operations the conversion pipeline needs. */
export type WebpCodec = {
  /** Allocates `size` bytes in the codec's heap; 0 when the memory cannot grow that far. */
  malloc(size: number): number;
  /** Frees a block from malloc. */
  free(pointer: number): void;
  /** A fresh view of `size` bytes at `pointer` (views of older buffers detach when the memory grows). */
  heap(pointer: number, size: number): Uint8Array;
  /** Current size of the linear memory in bytes: the instance's high-water mark. */
  memoryBytes(): number;
  /**
   * Encodes the width × height RGBA at `pointer` (malloc'd here; always freed by this call) as a lossy WebP,
   * returned as the file's pieces in order: a simple "VP8 " file when every alpha is 255, otherwise
   * VP8X + ALPH + VP8. Throws WebpEncodeError (code 1 when the memory cap is reached) or RangeError.
   */
  encode(pointer: number, width: number, height: number, options: WebpEncodeOptions): Uint8Array[];
  /**
   * Decodes the WebP file at `file` (`size` bytes) to `width` × `height` RGBA at `out` (stride width × 4,
   * width × height × 4 bytes malloc'd by the caller), scaling while decoding. Returns a webpStatus code;
   * animations give unsupportedFeature. Working memory besides file and output, per source pixel (measured
   * at 4000 × 3000): lossy opaque ~0 (0.5 MB of rows); lossy with our ALPH 3 B (libwebp 1.2.4 reserves the
   * alpha plane twice, plus its 8-bit decoder's plane); lossy with libwebp's own ALPH (predictor transform)
   * 6 B; lossless 4 B. When the alpha plane cannot be allocated libwebp reports bitstreamError, not outOfMemory.
   */
  decodeScaled(file: number, size: number, out: number, width: number, height: number): number;
  /**
   * Decodes the lossy WebP file at `file` (`size` bytes) at full size into `resizer` (whose source size must
   * be the image's), row by row: colour is averaged weighted by alpha there, which libwebp's own scaling of a
   * lossy image (decodeScaled) does not do. Returns a webpStatus code; lossless and animated files give
   * unsupportedFeature. Working memory besides decodeScaled's: the resizer and ~11 bytes per source column.
   */
  decodeResized(file: number, size: number, resizer: CodecResizer): number;
  /** Reads the header of the WebP file at `file` (`size` bytes); null when it is not a readable WebP. */
  features(file: number, size: number): WebpFeatures | null;
  /**
   * A decoder of a VP8L bitstream of `size` bytes, reading through a window of `capacity` bytes, into `width`
   * × `height` RGBA at `out` (libwebp scaling while decoding), or into a resizer whose source size is the
   * image's (full-size rows, colour weighted by alpha there; libwebp's own scaling premultiplies in 8 bits);
   * null without memory.
   */
  createLosslessStream(
    size: number,
    capacity: number,
    into: { out: number; width: number; height: number } | CodecResizer,
  ): CodecLosslessStream | null;
  /**
   * A downscaler from `sourceWidth × sourceHeight` rows of `channels` (3: RGB, opaque; 4: RGBA) bytes a pixel
   * to the `targetWidth × targetHeight` RGBA at `out`; null when memory runs out. Its row buffer is
   * allocated here, so views taken before may detach.
   */
  createResizer(
    sourceWidth: number,
    sourceHeight: number,
    targetWidth: number,
    targetHeight: number,
    out: number,
    options: { opaque: boolean; channels: 3 | 4 },
  ): CodecResizer | null;
  /** A PNG data decoder handing its rows to `resizer` (whose source size is the image's); null without memory. */
  createPngDecoder(plan: PngDecoderPlan, resizer: CodecResizer): CodecPngDecoder | null;
  /**
   * Decodes the baseline JPEG at `file` (`size` bytes, in this memory) with libjpeg-turbo at `plan.scale`/8
   * straight into `resizer`, whose source size must be that scale's (jpeg.c); returns a `jpegStatus`.
   */
  decodeJpeg(file: number, size: number, resizer: CodecResizer, plan: JpegDecodePlan): number;
  /**
   * A GIF frame decoder handing the screen's rows to `resizer` (whose source size is the screen's, four
   * channels); null without memory. An interlaced frame keeps its visible even rows, one byte a pixel.
   */
  createGifDecoder(plan: GifDecoderPlan, resizer: CodecResizer): CodecGifDecoder | null;
  /**
   * A transform to sRGB from the ICC profile at `profile` (`size` bytes, in the codec's memory; 0 for the
   * built-in press CMYK profile) for pixels of `kind`; 0 when lcms refuses the profile, its colour space is
   * not the image's, or memory runs out. The profile's bytes may be freed as soon as this returns.
   */
  createColourTransform(profile: number, size: number, kind: ColourKind): number;
  /** Runs `transform` over `count` pixels from `input` to `output` (the same RGBA for grey and RGB). */
  applyColour(transform: number, input: number, output: number, count: number): void;
  freeColour(transform: number): void;
  /**
   * Inflates a PNG iCCP chunk's zlib data into a newly malloc'd profile of the size its header declares, at
   * most `cap` bytes (nothing beyond is ever inflated); null when the data is not exactly such a profile.
   */
  inflateProfile(data: Uint8Array, cap: number): { pointer: number; size: number } | null;
};

const formats = ["mixed", "lossy", "lossless"] as const;

/** Instantiates the codec from its compiled module (Workers cannot fetch or compile wasm at run time). */
export function createWebpCodec(module: WebAssembly.Module): WebpCodec {
  const instance = instantiateCodec(module);
  const { exports } = instance;
  const heap = (pointer: number, size: number) => new Uint8Array(exports.memory.buffer, pointer, size);

  // The five int32 fields get_features writes, allocated once now, at the bottom of the heap, rather than
  // between the large blocks of a conversion.
  const featureFields = exports.malloc(20);
  const features = (file: number, size: number): WebpFeatures | null => {
    if (exports.get_features(file, size, featureFields) !== webpStatus.ok) return null;
    const fields = new Int32Array(exports.memory.buffer, featureFields, 5);
    return {
      width: fields[0] as number,
      height: fields[1] as number,
      hasAlpha: fields[2] !== 0,
      hasAnimation: fields[3] !== 0,
      format: formats[fields[4] as number] ?? "mixed",
    };
  };

  const inflateProfile = (data: Uint8Array, cap: number): { pointer: number; size: number } | null => {
    const input = exports.malloc(data.length);
    if (input === 0) return null;
    try {
      heap(input, data.length).set(data);
      // The profile's size comes back in the first of the feature fields (free between calls).
      const pointer = exports.colour_inflate(input, data.length, cap, featureFields);
      if (pointer === 0) return null;
      return { pointer, size: new Uint32Array(exports.memory.buffer, featureFields, 1)[0] as number };
    } finally {
      exports.free(input);
    }
  };

  return {
    malloc: (size) => exports.malloc(size),
    free: (pointer) => exports.free(pointer),
    heap,
    memoryBytes: () => exports.memory.buffer.byteLength,
    encode: createEncoder(instance),
    decodeScaled: (file, size, out, width, height) => exports.decode_scaled(file, size, out, width, height),
    decodeResized: (file, size, resizer) => exports.decode_resized(file, size, resizer.handle),
    features,
    createLosslessStream: (size, capacity, into) =>
      "handle" in into
        ? losslessStream(exports, size, capacity, 0, 0, 0, into)
        : losslessStream(exports, size, capacity, into.out, into.width, into.height, null),
    createResizer: (sourceWidth, sourceHeight, targetWidth, targetHeight, out, options) =>
      resizer(exports, sourceWidth, sourceHeight, targetWidth, targetHeight, out, options),
    createPngDecoder: (plan, resizer) => pngDecoder(exports, plan, resizer),
    decodeJpeg: (file, size, resizer, plan) => decodeJpeg(exports, file, size, resizer, plan),
    createGifDecoder: (plan, resizer) => gifDecoder(exports, plan, resizer),
    createColourTransform: (profile, size, kind) => exports.colour_create(profile, size, kind),
    applyColour: (transform, input, output, count) => exports.colour_apply(transform, input, output, count),
    freeColour: (transform) => exports.colour_free(transform),
    inflateProfile,
  };
}
