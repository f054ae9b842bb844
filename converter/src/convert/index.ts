import { encodeAvif } from "./avif";
import { maxQuality, maxSupportedEdge } from "./budget";
import { applyToTarget } from "./colour";
import { UnconvertibleImageError } from "./errors";
import type { Orientation } from "./exif";
import type { ImageInput, StillImageKind } from "./input";
import { type Codecs, getCodecs, recordCodecBytes, releaseInstances, underConversionLock } from "./instances";
import { decodeJpeg } from "./jpeg-input";
import { CodecAbort } from "./native";
import { orientInPlace } from "./orient";
import { type Context, createContext, type Target } from "./pipeline";
import { type Placeholder, placeholderOf } from "./placeholder";
import { decodeBmpInput, decodeGifInput, decodePngInput, type GifScanOutcome } from "./raster-inputs";
import { decodeWebpInput } from "./webp-input";

export { ImageTooLargeError, UnconvertibleImageError } from "./errors";
export type { ImageInput, StillImageKind } from "./input";
export { codecMemory } from "./instances";
export { type GifScanOutcome, gifFrameCount, scanGifInput } from "./raster-inputs";

/**
 * A converted image: the WebP file as the pieces the encoder produced (RIFF and chunk headers, the ALPH
 * chunk, the VP8 bitstream), in order, so it is written out without one more copy; `bytes` joins them on
 * first use (tests, small callers).
 */
type ConvertedImage = {
  chunks: Uint8Array[];
  size: number;
  width: number;
  height: number;
  /** The placeholder and dominant colour of a conversion (placeholder.ts); null for a width. */
  placeholder: Placeholder | null;
  readonly bytes: Uint8Array;
};

function converted(
  chunks: Uint8Array[],
  width: number,
  height: number,
  placeholder: Placeholder | null,
): ConvertedImage {
  const size = chunks.reduce((total, chunk) => total + chunk.length, 0);
  let joined: Uint8Array | null = null;
  return {
    chunks,
    size,
    width,
    height,
    placeholder,
    get bytes() {
      if (!joined) {
        joined = new Uint8Array(size);
        let at = 0;
        for (const chunk of chunks) {
          joined.set(chunk, at);
          at += chunk.length;
        }
      }
      return joined;
    },
  };
}

/**
 * Converts one still image to WebP at exactly min(long edge, maxEdge) on its long edge (never upscaled),
 * aspect and transparency kept, EXIF orientation applied. One conversion runs at a time per isolate (see
 * instances.ts, `underConversionLock`). Row formats (PNG, GIF, BMP) are read from the input as a stream. `gifScan`: what
 * `scanGifInput` found for this same input (the sniff's frame count), so a GIF's blocks are not walked again.
 */
export async function convertToWebp(
  input: ImageInput,
  kind: StillImageKind,
  options: { maxEdge: number; quality?: number; gifScan?: GifScanOutcome },
): Promise<ConvertedImage> {
  const { maxEdge, quality = 80, gifScan } = options;
  if (!Number.isInteger(maxEdge) || maxEdge < 1 || maxEdge > maxSupportedEdge)
    throw new RangeError(`maxEdge must be an integer between 1 and ${maxSupportedEdge}`);
  if (!(quality >= 0 && quality <= maxQuality)) throw new RangeError(`quality must be between 0 and ${maxQuality}`);
  return underConversionLock((tick) => convertNow(input, kind, maxEdge, quality, tick, null, gifScan));
}

/**
 * Re-encodes a hosted (converted, still) WebP at exactly `size`, smaller than it: the narrower widths of
 * `?width=`. The same lock, memory admission, decoder (libwebp scaled straight to the size; a transparent image
 * at full size into the resizer, which weights colour by alpha) and quality as `convertToWebp`; the hosted image
 * is upright already, so no orientation is applied.
 */
export async function resizeHostedWebp(
  input: ImageInput,
  size: { width: number; height: number },
  options: { quality?: number } = {},
): Promise<ConvertedImage> {
  const { quality = 80 } = options;
  const { width, height } = size;
  if (![width, height].every((edge) => Number.isInteger(edge) && edge >= 1 && edge <= maxSupportedEdge))
    throw new RangeError(`the size must be whole numbers between 1 and ${maxSupportedEdge}`);
  return underConversionLock((tick) => convertNow(input, "webp", Math.max(width, height), quality, tick, size));
}

/** Decodes the input into the context's target (and its colour transform); returns its EXIF orientation. */
async function decode(
  input: ImageInput,
  kind: StillImageKind,
  context: Context,
  gifScan: GifScanOutcome | undefined,
): Promise<Orientation> {
  switch (kind) {
    case "jpeg":
      return decodeJpeg(input, context);
    case "png":
      return decodePngInput(input, context);
    case "bmp":
      return decodeBmpInput(input, context);
    case "gif":
      await decodeGifInput(input, context, gifScan);
      return 1;
    case "webp":
      return decodeWebpInput(input, context);
  }
}

/**
 * The decoded target, its colour transform applied and turned upright, encoded (the encoder frees it). A
 * conversion (not a width) first reads its placeholder from the same pixels.
 */
function encodeTarget(context: Context, orientation: Orientation, quality: number): ConvertedImage {
  const codec = context.codecs.codec;
  const target = context.target as Target | null;
  if (!target) throw new Error("the decoder produced no image");
  const colour = context.colour;
  if (colour) {
    // On the reduced image: a few megapixels, whatever the source's size.
    context.colour = null;
    applyToTarget(codec, colour, target.pointer, target.width * target.height);
    context.tick();
  }
  const { width, height } = orientInPlace(
    codec.heap(target.pointer, target.width * target.height * 4),
    target.width,
    target.height,
    orientation,
  );
  const placeholder = context.size
    ? null
    : placeholderOf(codec.heap(target.pointer, width * height * 4), width, height);
  context.target = null; // the encoder frees the pixels, whatever happens
  return converted(
    codec.encode(target.pointer, width, height, { quality, method: 2, opaque: target.opaque }),
    width,
    height,
    placeholder,
  );
}

/**
 * Encodes a hosted (converted, still) WebP as an AVIF of `size` (at most the hosted image's), or scaled down to
 * the encoder's pixel budget when larger (avif.ts): decoded at that size as a width is, its pixels copied out of
 * the codec's memory, then encoded. Under the conversion lock, with the codecs of an AVIF job (instances.ts).
 */
export async function encodeHostedAvif(
  input: ImageInput,
  size: { width: number; height: number },
): Promise<{ bytes: Uint8Array; width: number; height: number }> {
  const { width, height } = size;
  if (![width, height].every((edge) => Number.isInteger(edge) && edge >= 1 && edge <= maxSupportedEdge))
    throw new RangeError(`the size must be whole numbers between 1 and ${maxSupportedEdge}`);
  return underConversionLock((tick) =>
    withDecoded(input, { width, height }, tick, async (pixels) => {
      tick();
      return { bytes: await encodeAvif(pixels, width, height), width, height };
    }),
  );
}

/**
 * A hosted WebP decoded at exactly `size`, its RGBA pixels handed to `use` where the codec left them (no copy:
 * the AVIF encoder is an instance of its own, so the codec's memory cannot grow under the view), then freed.
 */
function withDecoded<T>(
  input: ImageInput,
  size: { width: number; height: number },
  tick: () => void,
  use: (pixels: Uint8Array) => Promise<T>,
): Promise<T> {
  return inContext("avif", Math.max(size.width, size.height), size, tick, async (context, codec) => {
    await decodeWebpInput(input, context);
    const target = context.target as Target | null;
    if (!target) throw new Error("the decoder produced no image");
    const result = await use(codec.heap(target.pointer, target.width * target.height * 4));
    context.target = null;
    codec.free(target.pointer);
    return result;
  });
}

function convertNow(
  input: ImageInput,
  kind: StillImageKind,
  maxEdge: number,
  quality: number,
  tick: () => void,
  size: { width: number; height: number } | null = null,
  gifScan?: GifScanOutcome,
): Promise<ConvertedImage> {
  return inContext(kind, maxEdge, size, tick, async (context) => {
    const orientation = await decode(input, kind, context, gifScan);
    tick();
    return encodeTarget(context, orientation, quality);
  });
}

/**
 * Runs `work` over the codecs of a `kind` of job and a fresh context; on failure frees what the context still
 * holds, and after an abort starts afresh rather than reuse a damaged heap.
 */
async function inContext<T>(
  kind: StillImageKind | "avif",
  maxEdge: number,
  size: { width: number; height: number } | null,
  tick: () => void,
  work: (context: Context, codec: Codecs["codec"]) => Promise<T>,
): Promise<T> {
  const current = getCodecs(kind);
  const context = createContext(current, maxEdge, size, tick);
  try {
    return await work(context, current.codec);
  } catch (error) {
    if (context.target) current.codec.free(context.target.pointer);
    if (context.colour) current.codec.freeColour(context.colour.handle);
    if (error instanceof CodecAbort || error instanceof WebAssembly.RuntimeError) {
      // An abort unwound the C stack without its cleanup: start afresh rather than reuse a damaged heap.
      releaseInstances();
      throw new UnconvertibleImageError("The image file is damaged: its image data cannot be decoded.");
    }
    throw error;
  } finally {
    recordCodecBytes(current.codec.memoryBytes());
  }
}
