import turboWasm from "@cwasm/jpeg-turbo/jpeg-turbo.wasm";
import { bmpAlphaIsUsed, decodeBmp, readBmpHeader, truncatedBmp } from "./bmp";
import {
  codecShareBytes,
  formatMegabytes,
  formatMegapixels,
  largeJpegScratchBytes,
  largeWebpCodecBytes,
  libjpegOverheadBytes,
  maxQuality,
  maxSourceEdge,
  maxSourcePixels,
  maxSupportedEdge,
  scratchShareBytes,
} from "./budget";
import { ByteReader } from "./byte-reader";
import {
  applyToTarget,
  type ColourTransform,
  colourTransform,
  jpegColourTransform,
  maxProfileBytes,
  profileWorkBytes,
} from "./colour";
import { ImageTooLargeError, UnconvertibleImageError } from "./errors";
import type { Orientation } from "./exif";
import { decodeGif, type GifScan, scanGif, truncatedGif } from "./gif";
import { cmykChannel, type JpegHeader, readJpegHeader } from "./jpeg-header";
import {
  arenaAlloc,
  CodecAbort,
  createJpegTurbo,
  decompressInto,
  heapBytes,
  type JpegTurbo,
  pixelFormat,
} from "./native";
import { orientInPlace } from "./orient";
import { decodePng, pngDecoderOverheadBytes, pngDecoderPlan, readPngHeader, truncatedPng } from "./png";
import { decodeProgressive, progressiveStorageBytes } from "./progressive";
import { fitWithin } from "./resize";
import {
  type CodecResizer,
  colourKind,
  createWebpCodec,
  encodeMemoryBytes,
  losslessWindowTooSmall,
  type WebpCodec,
  webpStatus,
} from "./webp-codec";
import codecWasm from "./webp-codec.wasm";
import { readWebpHeader, readWebpStart } from "./webp-header";

export { ImageTooLargeError, UnconvertibleImageError } from "./errors";

export type StillImageKind = "jpeg" | "png" | "webp" | "gif" | "bmp";

/**
 * A converted image: the WebP file as the pieces the encoder produced (RIFF and chunk headers, the ALPH
 * chunk, the VP8 bitstream), in order, so it is written out without one more copy; `bytes` joins them on
 * first use (tests, small callers).
 */
export type ConvertedImage = {
  chunks: Uint8Array[];
  size: number;
  width: number;
  height: number;
  readonly bytes: Uint8Array;
};

function converted(chunks: Uint8Array[], width: number, height: number): ConvertedImage {
  const size = chunks.reduce((total, chunk) => total + chunk.length, 0);
  let joined: Uint8Array | null = null;
  return {
    chunks,
    size,
    width,
    height,
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
 * Where a conversion reads the image: the whole file (tests, the bench), or its size and a way to stream it
 * (the staged R2 object), so row formats never hold the file and whole-file formats check its size first.
 */
export type ImageInput = Uint8Array | { size: number; open(): Promise<ReadableStream<Uint8Array>> };

function isWholeFile(input: ImageInput): input is Uint8Array {
  return ArrayBuffer.isView(input);
}

function inputSize(input: ImageInput): number {
  return isWholeFile(input) ? input.byteLength : input.size;
}

async function openReader(input: ImageInput, truncated: () => Error): Promise<ByteReader> {
  return new ByteReader(isWholeFile(input) ? input : await input.open(), truncated);
}

/** Reads the whole input into `target` (exactly its size), in place: no second copy of the file. */
async function readWhole(input: ImageInput, target: Uint8Array, truncated: () => Error): Promise<void> {
  if (isWholeFile(input)) {
    target.set(input);
    return;
  }
  const reader = await openReader(input, truncated);
  let at = 0;
  while (at < target.length) {
    const piece = await reader.takeSome(target.length - at);
    target.set(piece, at);
    at += piece.length;
  }
  await reader.cancel();
}

/**
 * The two WebAssembly instances an isolate keeps, and what each one's memory holds. WebAssembly memory
 * never shrinks, so the isolate carries each instance's high-water mark; admission keeps each under its
 * share whatever the sequence of images (docs/conversion.md):
 * - `codec` (our build of libwebp, zlib's inflate, png.c, gif.c and resize.c): the target image, the resizer,
 *   the PNG and GIF decoders and an interlaced image's even rows, the WebP input file, and the encoder's work. The target
 *   is written there by the resizer, so the encoder takes it in place and frees it.
 * - `turbo` (libjpeg-turbo): the scratch arena of the JPEG decoders: the file and its M/8-scaled pixels,
 *   progressive coefficients. One block malloc'd at creation and handed out
 *   by a bump pointer per conversion, because libjpeg's small lifelong allocations between large freed
 *   buffers fragmented the heap (measured: 46 MB instead of ~31 over a sequence).
 */
type Codecs = {
  readonly turbo: JpegTurbo;
  readonly scratch: number;
  /** The scratch block's size: `scratchBlockBytes`, or more once a large JPEG grew it. */
  readonly scratchBytes: number;
  readonly codec: WebpCodec;
  /** Lets go of the scratch instance now (a conversion that needs none and whose codec grows past its share). */
  releaseScratch(): void;
  /**
   * Grows the scratch block to `bytes` (at most `largeJpegScratchBlockBytes`), its contents kept: the block is
   * the last one in libjpeg's heap, so freeing it and asking for more extends it in place. The isolate then
   * holds a scratch past its share: the next conversion that is not a JPEG lets go of it (`getCodecs`).
   */
  growScratch(bytes: number): void;
};

type JpegInstance = { turbo: JpegTurbo; scratch: number; scratchBytes: number };

const scratchBlockBytes = scratchShareBytes - libjpegOverheadBytes;
/** The scratch block a large JPEG may grow it to (budget.ts, `largeJpegScratchBytes`). */
const largeJpegScratchBlockBytes = largeJpegScratchBytes - libjpegOverheadBytes;

function createTurbo(): JpegInstance {
  const turbo = createJpegTurbo(turboWasm);
  const scratch = arenaAlloc(turbo, scratchBlockBytes);
  if (scratch === null) throw new Error("could not reserve the conversion scratch arena");
  return { turbo, scratch, scratchBytes: scratchBlockBytes };
}

let jpegInstance: JpegInstance | null = null;
/**
 * Whether the scratch's memory has grown past its share (a large JPEG). Later JPEGs keep using it (their codec
 * stays small); any other conversion lets go of it first, so a grown scratch is never held beside a codec
 * that may fill its share.
 */
let scratchGrown = false;
let codecInstance: WebpCodec | null = null;
/**
 * Whether the codec's memory has grown past its share (a large WebP, which let go of the scratch instance).
 * Conversions that need no scratch keep using it; a JPEG lets go of it first, so the scratch is never held
 * beside a grown codec.
 */
let codecGrown = false;

/**
 * This isolate's instances for one conversion (inside the conversion lock, so by one request): the codec at
 * once, the scratch instance on first use (a conversion that decodes no JPEG never creates it). Each stays
 * fixed for the conversion, even if a stalled conversion's successor lets go of them meanwhile
 * (`releaseInstances`); `releaseScratch` drops this conversion's hold on the scratch too, so it is garbage
 * while the conversion runs.
 */
function getCodecs(kind: StillImageKind): Codecs {
  if (codecGrown && kind === "jpeg") releaseInstances();
  if (scratchGrown && kind !== "jpeg") {
    jpegInstance = null;
    scratchGrown = false;
  }
  codecInstance ??= createWebpCodec(codecWasm);
  const codec = codecInstance;
  let jpeg: JpegInstance | null = null;
  const ownJpeg = () => {
    if (!jpeg) {
      jpegInstance ??= createTurbo();
      jpeg = jpegInstance;
    }
    return jpeg;
  };
  return {
    get turbo() {
      return ownJpeg().turbo;
    },
    get scratch() {
      return ownJpeg().scratch;
    },
    get scratchBytes() {
      return ownJpeg().scratchBytes;
    },
    codec,
    releaseScratch() {
      jpeg = null;
      jpegInstance = null;
    },
    growScratch(bytes) {
      const instance = ownJpeg();
      if (bytes <= instance.scratchBytes) return;
      if (bytes > largeJpegScratchBlockBytes) throw new RangeError("the scratch cannot grow that far");
      const { exports } = instance.turbo;
      exports.free(instance.scratch);
      const grown = exports.malloc(bytes);
      scratchGrown = true;
      if (grown !== instance.scratch) {
        // Not where the block was: its contents are gone and the memory grew by the whole block. Never seen
        // (nothing of libjpeg's outlives a decode above the block); this instance is not used again.
        jpeg = null;
        jpegInstance = null;
        scratchGrown = false;
        throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
      }
      instance.scratchBytes = bytes;
    },
  };
}

/** Lets go of both instances: the next conversion starts from fresh ones. */
function releaseInstances(): void {
  jpegInstance = null;
  codecInstance = null;
  codecGrown = false;
  scratchGrown = false;
}

/**
 * One conversion at a time per isolate, because the instances and their arena are shared. A waiter polls
 * with its own timer rather than awaiting the holder's promise: Workers refuse I/O from code that a promise
 * of another request resumed ("Cannot perform I/O on behalf of a different request"), which is how a shared
 * promise queue made concurrent completes fail. A holder that shows no progress for `stalledMs` (its
 * request was cancelled while it awaited the upload's bytes) loses the lock; the next holder starts from
 * fresh instances, since the abandoned conversion may have left buffers behind.
 */
const lock = { holder: 0, issued: 0, lastProgress: 0 };
/** Longer than any synchronous step may run (a Worker's CPU limit ends a request before). */
const stalledMs = 30_000;
const pollMs = 5;

async function acquireLock(): Promise<number> {
  while (lock.holder !== 0) {
    if (Date.now() - lock.lastProgress > stalledMs) {
      lock.holder = 0;
      releaseInstances();
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  lock.issued += 1;
  lock.holder = lock.issued;
  lock.lastProgress = Date.now();
  return lock.holder;
}

/** Marks progress of the conversion holding `ticket`; throws if it lost the lock meanwhile. */
function progress(ticket: number): void {
  if (lock.holder !== ticket) throw new Error("the conversion lost its lock after stalling");
  lock.lastProgress = Date.now();
}

function releaseLock(ticket: number): void {
  if (lock.holder === ticket) lock.holder = 0;
}

/** The codec's memory when the last conversion ended: its high-water mark then. */
let lastCodecBytes = 0;

/**
 * Current linear-memory sizes of this isolate's instances in bytes (0 for one not created), and the codec's
 * size at the end of the last conversion (for tests).
 */
export function codecMemory(): { scratch: number; codec: number; lastConversionCodec: number } {
  return {
    scratch: jpegInstance?.turbo.exports.memory.buffer.byteLength ?? 0,
    codec: codecInstance?.memoryBytes() ?? 0,
    lastConversionCodec: lastCodecBytes,
  };
}

/**
 * What walking a GIF's blocks found: its scan, or why it cannot be read. The sniff's frame count gets it, and
 * hands it to `convertToWebp` for the same input, so a still GIF is walked once, not once more to convert.
 */
export type GifScanOutcome = { scan: GifScan } | { refusal: UnconvertibleImageError };

/**
 * Walks a GIF's blocks, streamed, without decoding pixels (`scanGif`): counts its frames (more than one is an
 * animation, hosted unchanged) and checks every descriptor. Errors other than the file's own (a failed read)
 * are thrown.
 */
export async function scanGifInput(input: ImageInput): Promise<GifScanOutcome> {
  const reader = await openReader(input, truncatedGif);
  try {
    return { scan: await scanGif(reader) };
  } catch (error) {
    if (error instanceof UnconvertibleImageError) return { refusal: error };
    throw error;
  } finally {
    await reader.cancel();
  }
}

/** A GIF's frame count (`scanGifInput`); throws why a file cannot be read. */
export async function gifFrameCount(input: ImageInput): Promise<number> {
  const outcome = await scanGifInput(input);
  if ("refusal" in outcome) throw outcome.refusal;
  return outcome.scan.frames;
}

/** Whether a WebP or PNG's leading bytes announce an animation (APNG's acTL before the first IDAT). */
export function isAnimated(head: Uint8Array, kind: "webp" | "png"): boolean {
  try {
    if (kind === "webp") return readWebpHeader(head).animated;
    const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
    for (let pos = 8; pos + 8 <= head.length; pos += 12 + view.getUint32(pos)) {
      const type = String.fromCharCode(...head.subarray(pos + 4, pos + 8));
      if (type === "acTL") return true;
      if (type === "IDAT") return false;
    }
  } catch {
    return false; // unreadable bytes are not animated; converting them reports why they are unreadable
  }
  return false;
}

/**
 * Converts one still image to WebP at exactly min(long edge, maxEdge) on its long edge (never upscaled),
 * aspect and transparency kept, EXIF orientation applied. One conversion runs at a time per isolate (see
 * `acquireLock`). Row formats (PNG, GIF, BMP) are read from the input as a stream. `gifScan`: what
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
  const ticket = await acquireLock();
  try {
    return await convertNow(input, kind, maxEdge, quality, () => progress(ticket), null, gifScan);
  } finally {
    releaseLock(ticket);
  }
}

/**
 * Re-encodes a hosted (converted, still) WebP at exactly `size`, smaller than it: the narrower widths of
 * `?width=`. The same lock, memory admission, decoder (libwebp scaled straight to the size) and quality as
 * `convertToWebp`; the hosted image is upright already, so no orientation is applied.
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
  const ticket = await acquireLock();
  try {
    return await convertNow(input, "webp", Math.max(width, height), quality, () => progress(ticket), size);
  } finally {
    releaseLock(ticket);
  }
}

/** The decoded, reduced image: RGBA `width × height` at `pointer` in the codec's memory. */
type Target = { pointer: number; width: number; height: number };

/** What every decoder gets: the instances, the scratch allocator, the edge, and the lock's heartbeat. */
type Context = {
  codecs: Codecs;
  /** Bump allocation in the scratch block, reset after every conversion. */
  scratch(size: number): Uint8Array;
  /**
   * Makes room for `more` bytes beyond what is used: true when the block has it, or could be grown to it
   * within the large-JPEG allowance (then it is); false otherwise.
   */
  roomFor(more: number): boolean;
  maxEdge: number;
  /** An exact output size instead of fitting `maxEdge` (WebP input only: `resizeHostedWebp`). */
  size: { width: number; height: number } | null;
  tick: () => void;
  /** The target, once allocated (freed by the encoder, or here on failure). */
  target: Target | null;
  /** The embedded profile's grey or RGB transform, applied to the target once decoded (colour.ts). */
  colour: ColourTransform | null;
};

async function convertNow(
  input: ImageInput,
  kind: StillImageKind,
  maxEdge: number,
  quality: number,
  tick: () => void,
  size: { width: number; height: number } | null = null,
  gifScan?: GifScanOutcome,
): Promise<ConvertedImage> {
  const current = getCodecs(kind);
  let used = 0;
  const context: Context = {
    codecs: current,
    scratch(size) {
      const next = used + Math.ceil(size / 16) * 16;
      // Admission keeps every plan within the block; reaching this is a planning error, not a user's.
      if (next > current.scratchBytes)
        throw new Error(`scratch plan exceeded: ${next} > ${current.scratchBytes} bytes`);
      const view = heapBytes(current.turbo, current.scratch + used, size);
      used = next;
      return view;
    },
    roomFor(more) {
      const total = used + Math.ceil(more / 16) * 16;
      if (total <= current.scratchBytes) return true;
      if (total > largeJpegScratchBlockBytes) return false;
      current.growScratch(total);
      return true;
    },
    maxEdge,
    size,
    tick,
    target: null,
    colour: null,
  };
  try {
    let orientation: Orientation = 1;
    switch (kind) {
      case "jpeg":
        orientation = await decodeJpeg(input, context);
        break;
      case "png":
        orientation = await decodePngInput(input, context);
        break;
      case "bmp":
        orientation = await decodeBmpInput(input, context);
        break;
      case "gif":
        await decodeGifInput(input, context, gifScan);
        break;
      case "webp":
        orientation = await decodeWebpInput(input, context);
        break;
    }
    tick();
    const target = context.target as Target | null;
    if (!target) throw new Error("the decoder produced no image");
    const colour = context.colour as ColourTransform | null;
    if (colour) {
      // On the reduced image: a few megapixels, whatever the source's size.
      context.colour = null;
      applyToTarget(current.codec, colour, target.pointer, target.width * target.height);
      tick();
    }
    const { width, height } = orientInPlace(
      current.codec.heap(target.pointer, target.width * target.height * 4),
      target.width,
      target.height,
      orientation,
    );
    context.target = null; // the encoder frees the pixels, whatever happens
    return converted(current.codec.encode(target.pointer, width, height, { quality, method: 2 }), width, height);
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
    lastCodecBytes = current.codec.memoryBytes();
  }
}

function tooLarge(width: number, height: number, limit: number, what = "an image"): ImageTooLargeError {
  return new ImageTooLargeError(
    `The image is too large to convert: ${width} × ${height} pixels exceeds the limit of ${formatMegapixels(limit)} for ${what}.`,
  );
}

/** Refuses, from the header alone, sources whose decoding would take too long or whose rows would be huge. */
function refuseSourcePixels(width: number, height: number): void {
  if (width > maxSourceEdge || height > maxSourceEdge)
    throw new ImageTooLargeError(
      `The image is too large to convert: ${width} × ${height} pixels exceeds the limit of ${maxSourceEdge} pixels on an edge.`,
    );
  if (width * height > maxSourcePixels) throw tooLarge(width, height, maxSourcePixels);
}

/** Allocates the target (RGBA at the output size) in the codec's memory. */
function allocateTarget(context: Context, width: number, height: number): Target {
  const size = width * height * 4;
  const pointer = context.codecs.codec.malloc(size);
  if (pointer === 0) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  context.target = { pointer, width, height };
  return context.target;
}

/**
 * Creates the downscaler from a `width × height` source to a newly allocated target at the output size, both
 * in the codec's memory. A source `opaque` by its format skips the alpha weighting; RGB sources (3 channels)
 * are opaque.
 */
function createResizer(
  context: Context,
  width: number,
  height: number,
  options: { opaque: boolean; channels: 3 | 4; size?: { width: number; height: number } },
): CodecResizer {
  const size = options.size ?? fitWithin(width, height, context.maxEdge);
  const target = allocateTarget(context, size.width, size.height);
  const resizer = context.codecs.codec.createResizer(width, height, size.width, size.height, target.pointer, options);
  if (!resizer) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  return resizer;
}

/**
 * Runs a row decoder of a `width × height` source into a newly allocated target at the output size. Each row
 * the decoder pushes (`channels` bytes a pixel) is copied into the codec's memory and reduced there.
 */
async function streamRows(
  context: Context,
  width: number,
  height: number,
  opaque: boolean,
  decode: (push: (row: Uint8Array) => void) => void | Promise<void>,
  options: { size?: { width: number; height: number }; channels?: 3 | 4; ink?: ColourTransform } = {},
): Promise<void> {
  const codec = context.codecs.codec;
  // CMYK rows (4 bytes a pixel) land in a block of their own and leave the colour transform as RGB rows.
  const ink = options.ink;
  const channels = ink ? 3 : (options.channels ?? 4);
  const inkRow = ink ? codec.malloc(width * 4) : 0;
  if (ink && inkRow === 0)
    throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  try {
    const resizer = createResizer(context, width, height, {
      opaque: opaque || channels === 3,
      channels,
      size: options.size,
    });
    try {
      // The codec's memory does not grow while rows stream (nothing else allocates there), so the view stays valid.
      const row = ink ? codec.heap(inkRow, width * 4) : codec.heap(resizer.row, width * channels);
      let pushed = 0;
      await decode((source) => {
        row.set(source.length === row.length ? source : source.subarray(0, row.length));
        if (ink) codec.applyColour(ink.handle, inkRow, resizer.row, width);
        resizer.push();
        pushed += 1;
        if ((pushed & 63) === 0) context.tick();
      });
      if (pushed !== height) throw new UnconvertibleImageError("The image data ends before its last row.");
    } finally {
      resizer.free();
    }
  } finally {
    if (inkRow) codec.free(inkRow);
  }
}

/**
 * PNG: chunks read from the input stream, the image data inflated, unfiltered and reduced inside the codec
 * (png.c), so neither the file nor a full-size row set exists; an interlaced image keeps its even rows (half
 * of it) in the codec's memory beside the target.
 */
async function decodePngInput(input: ImageInput, context: Context): Promise<Orientation> {
  const reader = await openReader(input, truncatedPng);
  try {
    const header = await readPngHeader(reader);
    refuseSourcePixels(header.width, header.height);
    const size = fitWithin(header.width, header.height, context.maxEdge);
    if (header.interlaced) {
      const room = codecShareBytes - size.width * size.height * 4 - pngDecoderOverheadBytes;
      // Even rows: 4 bytes a pixel for half the rows, 2 bytes per source pixel.
      if (Math.ceil(header.height / 2) * header.width * 4 > room)
        throw tooLarge(header.width, header.height, Math.floor(room / 2), "an interlaced PNG");
    }
    if (header.iccProfile) {
      const profile = context.codecs.codec.inflateProfile(header.iccProfile, maxProfileBytes);
      const grey = header.colorType === 0 || header.colorType === 4;
      if (profile)
        context.colour = colourTransform(context.codecs.codec, profile, grey ? colourKind.grey : colourKind.rgb);
    }
    // 8-bit RGB scanlines go to the resizer as they are; other layouts are widened to RGBA first.
    const direct = header.colorType === 2 && header.bitDepth === 8 && !header.mayHaveAlpha && !header.interlaced;
    const resizer = createResizer(context, header.width, header.height, {
      opaque: !header.mayHaveAlpha,
      channels: direct ? 3 : 4,
      size,
    });
    try {
      const decoder = context.codecs.codec.createPngDecoder(pngDecoderPlan(header), resizer);
      if (!decoder) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
      try {
        await decodePng(header, reader, decoder, context.tick);
      } finally {
        decoder.free();
      }
      if (resizer.rowsPushed !== header.height)
        throw new UnconvertibleImageError("The image data ends before its last row.");
    } finally {
      resizer.free();
    }
    return header.orientation;
  } finally {
    await reader.cancel();
  }
}

/** BMP: rows streamed in stored order; a bottom-up file is turned upright with the orientation step. */
async function decodeBmpInput(input: ImageInput, context: Context): Promise<Orientation> {
  const reader = await openReader(input, truncatedBmp);
  try {
    const header = await readBmpHeader(reader);
    refuseSourcePixels(header.width, header.height);
    // An alpha mask whose bits are zero in every pixel is shown opaque: a first read looks for one that is not.
    let opaque = !header.mayHaveAlpha;
    if (!opaque) {
      const scanner = await openReader(input, truncatedBmp);
      try {
        opaque = !(await bmpAlphaIsUsed(scanner, await readBmpHeader(scanner)));
      } finally {
        await scanner.cancel();
      }
    }
    await streamRows(context, header.width, header.height, opaque, (push) => decodeBmp(reader, header, push, opaque));
    return header.topDown ? 1 : 4;
  } finally {
    await reader.cancel();
  }
}

/** Largest interlaced GIF frame whose visible indices admission allows: 12 MB (the decoder keeps half of them). */
const maxInterlacedGifBytes = 12_000_000;

/**
 * GIF: every block walked first (`scanGif`: one frame, every descriptor checked) before anything is
 * allocated, by the caller's `scanGifInput` (the sniff's frame count) or here; then a second read decodes the
 * first frame onto a transparent canvas of the logical screen inside the codec (gif.c), rows into the
 * resizer, and stops after its last visible row.
 */
async function decodeGifInput(input: ImageInput, context: Context, scanned: GifScanOutcome | undefined): Promise<void> {
  const outcome = scanned ?? (await scanGifInput(input));
  if ("refusal" in outcome) throw outcome.refusal;
  const scan = outcome.scan;
  if (scan.frames > 1)
    throw new UnconvertibleImageError("The GIF image is animated; animated images are not converted.");
  admitGif(scan.width, scan.height, scan.decodeBytes);
  const reader = await openReader(input, truncatedGif);
  const made: { resizer: CodecResizer | null; height: number } = { resizer: null, height: 0 };
  try {
    await decodeGif(
      reader,
      context.codecs.codec,
      (screen, frame) => {
        // Admitted from this read's own header too: it is what the memory is allocated for.
        const interlacedBytes = frame.interlaced ? frame.visibleWidth * frame.visibleHeight : 0;
        admitGif(screen.width, screen.height, screen.width * 4 + interlacedBytes);
        // A frame covering the whole screen without a transparent index paints every pixel opaque.
        const opaque =
          frame.transparentIndex === null &&
          frame.left === 0 &&
          frame.top === 0 &&
          frame.visibleWidth === screen.width &&
          frame.visibleHeight === screen.height;
        made.resizer = createResizer(context, screen.width, screen.height, { opaque, channels: 4 });
        made.height = screen.height;
        return made.resizer;
      },
      { tick: context.tick },
    );
    if (made.resizer?.rowsPushed !== made.height)
      throw new UnconvertibleImageError("The image data ends before its last row.");
  } finally {
    made.resizer?.free();
    await reader.cancel();
  }
}

/** Refuses a GIF screen, or an interlaced frame's indices, beyond the limits, from the header alone. */
function admitGif(width: number, height: number, decodeBytes: number): void {
  refuseSourcePixels(width, height);
  if (decodeBytes > maxInterlacedGifBytes)
    throw tooLarge(width, height, maxInterlacedGifBytes, "an interlaced GIF frame");
}

const truncatedJpeg = () =>
  new UnconvertibleImageError(
    "The JPEG file is incomplete: it ends before the end of its image data. Please upload the complete file again.",
  );

function scaled(size: number, m: number): number {
  return Math.ceil((size * m) / 8);
}

/** The smallest M/8 decode scale whose result still covers the target, or 8 (full size). */
function coveringScale(width: number, height: number, target: { width: number; height: number }): number {
  for (let m = 1; m <= 8; m += 1) if (scaled(width, m) >= target.width && scaled(height, m) >= target.height) return m;
  return 8;
}

/**
 * JPEG: the decoders need the whole file, read into scratch once its size is admitted. Baseline files go to
 * libjpeg-turbo, which decodes straight to the smallest M/8 scale covering the target (a 24 MP photo never
 * exists at full size); progressive files to the pipeline's own decoder (progressive/), which keeps only
 * the coefficients an N/8-scale IDCT needs. Both then stream rows into the target.
 */
async function decodeJpeg(input: ImageInput, context: Context): Promise<Orientation> {
  const size = inputSize(input);
  if (!context.roomFor(size))
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(size)} file exceeds the limit of ${formatMegabytes(largeJpegScratchBlockBytes)} for a JPEG.`,
    );
  const bytes = context.scratch(size);
  await readWhole(input, bytes, truncatedJpeg);
  context.tick();
  const header = readJpegHeader(bytes);
  refuseSourcePixels(header.width, header.height);
  // Made before decoding: the profile's segments are views of the file, and lcms's parsing memory is freed
  // before the target is allocated.
  const colour = jpegColourTransform(
    context.codecs.codec,
    header.iccSegments,
    header.components.length,
    header.adobeTransform !== null,
  );
  const ink = colour && header.components.length === 4 ? colour : null;
  if (!ink) context.colour = colour;
  try {
    if (header.progressive) await decodeProgressiveJpeg(bytes, header, context, ink);
    else await decodeBaselineJpeg(bytes, header, context, ink);
  } finally {
    if (ink) context.codecs.codec.freeColour(ink.handle);
  }
  return header.orientation;
}

/**
 * Baseline JPEG. CMYK rows go through `ink`, the embedded (or built-in) profile's transform, when there is
 * one; the plain formula is only left for a codec whose memory cannot hold the transform.
 */
async function decodeBaselineJpeg(
  file: Uint8Array,
  header: JpegHeader,
  context: Context,
  ink: ColourTransform | null,
): Promise<void> {
  // Where the file is: growing the scratch (roomFor) grows its memory, which detaches `file`.
  const fileAt = file.byteOffset;
  const fileSize = file.length;
  const { width, height } = header;
  const target = fitWithin(width, height, context.maxEdge);
  const m = coveringScale(width, height, target);
  const cmyk = header.components.length === 4;
  // Three bytes a pixel unless CMYK: a 24 MP file's M/8 pixels then fit beside the file.
  const channels = cmyk ? 4 : 3;
  const outWidth = scaled(width, m);
  const outHeight = scaled(height, m);
  const need = outWidth * outHeight * channels;
  if (!context.roomFor(need)) {
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(fileSize)} file leaves ${formatMegabytes(largeJpegScratchBlockBytes - fileSize)} of the ${formatMegabytes(largeJpegScratchBlockBytes)} a JPEG of ${width} × ${height} pixels may use, and it needs ${formatMegabytes(need)} more.`,
    );
  }
  const bytes = heapBytes(context.codecs.turbo, fileAt, fileSize);
  const destination = context.scratch(need).byteOffset;
  decompressInto(
    context.codecs.turbo,
    bytes.byteOffset,
    bytes.length,
    destination,
    outWidth,
    outHeight,
    cmyk ? pixelFormat.cmyk : pixelFormat.rgb,
    channels,
  );
  // libjpeg's own buffers may have grown its memory, detaching views taken before the decode.
  const decoded = heapBytes(context.codecs.turbo, destination, need);
  const inverted = header.adobeTransform !== null;
  const rowBytes = outWidth * channels;
  const cmykRow = cmyk && !ink ? new Uint8Array(outWidth * 4) : null;
  // The target keeps the original's proportions (the M/8 scale rounds up its edges).
  await streamRows(
    context,
    outWidth,
    outHeight,
    true,
    (push) => {
      for (let y = 0; y < outHeight; y += 1) {
        const source = decoded.subarray(y * rowBytes, (y + 1) * rowBytes);
        if (!cmykRow) {
          push(source);
          continue;
        }
        for (let x = 0, i = 0; x < outWidth; x += 1, i += 4) {
          const k = source[i + 3] as number;
          cmykRow[i] = Math.round(cmykChannel(source[i] as number, k, inverted));
          cmykRow[i + 1] = Math.round(cmykChannel(source[i + 1] as number, k, inverted));
          cmykRow[i + 2] = Math.round(cmykChannel(source[i + 2] as number, k, inverted));
          cmykRow[i + 3] = 255;
        }
        push(cmykRow);
      }
    },
    { size: target, channels: cmyk ? 4 : 3, ink: ink ?? undefined },
  );
}

async function decodeProgressiveJpeg(
  file: Uint8Array,
  header: JpegHeader,
  context: Context,
  ink: ColourTransform | null,
): Promise<void> {
  // Where the file is: growing the scratch (roomFor) grows its memory, which detaches `file`.
  const fileAt = file.byteOffset;
  const fileSize = file.length;
  const { width, height } = header;
  const target = fitWithin(width, height, context.maxEdge);
  const n = coveringScale(width, height, target);
  const plan = {
    width,
    height,
    components: header.components,
    n,
    adobeTransform: header.adobeTransform,
    inkRows: ink !== null,
  };
  const storageSize = progressiveStorageBytes(plan);
  if (!context.roomFor(storageSize)) {
    throw tooLarge(
      width,
      height,
      Math.floor((width * height * (largeJpegScratchBlockBytes - fileSize)) / storageSize),
      `a progressive JPEG of this file size (${formatMegabytes(fileSize)})`,
    );
  }
  const bytes = heapBytes(context.codecs.turbo, fileAt, fileSize);
  const storage = context.scratch(storageSize);
  const memory = context.codecs.turbo.exports.memory;
  await streamRows(
    context,
    scaled(width, n),
    scaled(height, n),
    true,
    (push) => decodeProgressive(bytes, plan, storage, push, memory),
    { size: target, ink: ink ?? undefined },
  );
}

const truncatedWebp = () =>
  new UnconvertibleImageError("The WebP file is incomplete: it ends in the middle of its data.");

/**
 * WebP. Lossless files are decoded from the stream (`decodeLosslessWebp`): the file is never held, only a
 * window of it. Other files are read whole into the codec's memory beside the target, and libwebp decodes
 * them scaled straight to the target size (no full-size output buffer). Admission: target + file + libwebp's
 * work within the codec's share, or, for transparent lossy files, within the large-WebP allowance with the
 * scratch instance let go, and the grown codec let go by the next JPEG (docs/conversion.md, "Admission").
 */
async function decodeWebpInput(input: ImageInput, context: Context): Promise<Orientation> {
  if (await decodeLosslessWebp(input, context)) return 1;
  return decodeWholeWebp(input, context);
}

/** Least window a lossless WebP is streamed through (or its whole bitstream, if smaller). */
const minLosslessWindowBytes = 1 << 20;
/** Window a lossless WebP is streamed through when memory allows: fewer, longer decoding steps. */
const losslessWindowBytes = 2 << 20;

/**
 * Lossless WebP from the stream: the RIFF chunks up to the image (the ICCP profile read into the codec's
 * memory), then the VP8L bitstream through a window of the codec's memory into libwebp's lossless decoder
 * (codec.c, `lossless_*`), which scales rows into the target as they complete. The codec holds the target,
 * libwebp's ARGB plane of the whole image (4 B per source pixel: its back-references reach a million pixels
 * back), its row cache and tables, and the window: never the file, whatever its size. False (nothing
 * allocated, the reader closed) when the file is not lossless: the caller reads it whole.
 */
async function decodeLosslessWebp(input: ImageInput, context: Context): Promise<boolean> {
  const codec = context.codecs.codec;
  const reader = await openReader(input, truncatedWebp);
  const profile: { held: { pointer: number; size: number } | null } = { held: null };
  try {
    const start = await readWebpStart(reader, async (size) => {
      const pointer = size <= maxProfileBytes ? codec.malloc(size) : 0;
      if (pointer === 0) return reader.skip(size);
      profile.held = { pointer, size };
      for (let at = 0; at < size; ) {
        const piece = await reader.takeSome(size - at);
        codec.heap(pointer + at, piece.length).set(piece);
        at += piece.length;
      }
    });
    if (start.animated)
      throw new UnconvertibleImageError("The WebP image is animated; animated images are not converted.");
    const image = start.image;
    if (image?.type !== "VP8L") return false;
    refuseSourcePixels(image.width, image.height);
    const target = context.size ?? fitWithin(image.width, image.height, context.maxEdge);
    // Target, ARGB plane, libwebp's row cache (17 rows of the source) and its tables (measured under 1 MB).
    const base = target.width * target.height * 4 + image.width * image.height * 4 + image.width * 17 * 4 + 2_000_000;
    const encodeNeed = encodeMemoryBytes(target.width, target.height);
    const minWindow = Math.min(image.size, minLosslessWindowBytes);
    let limit = codecShareBytes;
    let window = Math.min(image.size, losslessWindowBytes, codecShareBytes - base);
    if (window < minWindow || encodeNeed > limit) {
      limit = largeWebpCodecBytes;
      window = Math.min(image.size, losslessWindowBytes, limit - base);
    }
    if (window < minWindow || encodeNeed > limit) {
      const room = Math.floor((limit - target.width * target.height * 4 - 2_000_000 - minWindow) / 4);
      throw tooLarge(image.width, image.height, Math.max(0, room), "a lossless WebP");
    }
    if (limit > codecShareBytes) {
      // The codec grows past its share: the scratch (40 MB, only JPEGs use it) is let go now, and the grown codec
      // by the next JPEG conversion, so the two are never held together.
      context.codecs.releaseScratch();
      codecGrown = true;
    }
    // The transform is made first, its work freed before anything large exists; a profile whose work would
    // not fit beside the plan is ignored.
    const held = profile.held;
    profile.held = null;
    if (held && profileWorkBytes(held.size) + base + window <= limit)
      context.colour = colourTransform(codec, held, colourKind.rgb);
    else if (held) codec.free(held.pointer);
    const result = allocateTarget(context, target.width, target.height);
    const stream = codec.createLosslessStream(image.size, window, result.pointer, target.width, target.height);
    if (!stream) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
    try {
      for (;;) {
        // The window is filled before each decoding step: a step goes back to the last 8-row checkpoint.
        const room = stream.room();
        let filled = 0;
        while (filled < room) {
          const piece = await reader.takeSome(room - filled);
          codec.heap(stream.input() + filled, piece.length).set(piece);
          filled += piece.length;
        }
        context.tick();
        const status = stream.feed(filled);
        if (status === webpStatus.ok) break;
        if (status === webpStatus.suspended) continue;
        if (status === losslessWindowTooSmall)
          throw new ImageTooLargeError(
            `The image is too large to convert: its lossless image data needs more than the ${formatMegabytes(window)} a WebP of ${image.width} × ${image.height} pixels may read at once.`,
          );
        if (status === webpStatus.outOfMemory)
          throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
        throw new UnconvertibleImageError("The WebP file is damaged: its image data cannot be decoded.");
      }
    } finally {
      stream.free();
    }
    return true;
  } finally {
    if (profile.held) codec.free(profile.held.pointer);
    await reader.cancel();
  }
}

/** A WebP read whole into the codec's memory (lossy, with or without alpha). */
async function decodeWholeWebp(input: ImageInput, context: Context): Promise<Orientation> {
  const codec = context.codecs.codec;
  const size = inputSize(input);
  const fileLimit = codecShareBytes - encodeMemoryBytes(1, 1);
  if (size > fileLimit)
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(size)} file exceeds the limit of ${formatMegabytes(fileLimit)} for a WebP image.`,
    );
  const file = codec.malloc(size);
  if (file === 0) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  try {
    await readWhole(input, codec.heap(file, size), truncatedWebp);
    context.tick();
    const header = readWebpHeader(codec.heap(file, size));
    if (header.animated)
      throw new UnconvertibleImageError("The WebP image is animated; animated images are not converted.");
    refuseSourcePixels(header.width, header.height);
    const target = context.size ?? fitWithin(header.width, header.height, context.maxEdge);
    const features = codec.features(file, size);
    if (!features) throw new UnconvertibleImageError("The WebP file is damaged: its header cannot be read.");
    // Decoding holds the file, the target and libwebp's work per source pixel (measured: none for lossy
    // opaque images, 4 bytes for lossless: libwebp 1.2.4 keeps the whole ARGB plane of a VP8L image, also
    // when decoding incrementally; 6 for lossy with alpha), plus up to 2 MB of tables and rows (measured at
    // most 1 MB); encoding comes after the file is freed.
    const perSourcePixel = features.format === "lossless" ? 4 : features.hasAlpha ? 6 : 0;
    const decodeNeed = (pixels: number) =>
      size + target.width * target.height * 4 + 2_000_000 + pixels * perSourcePixel;
    const sourcePixels = header.width * header.height;
    const need = Math.max(decodeNeed(sourcePixels), encodeMemoryBytes(target.width, target.height));
    const limit = perSourcePixel === 0 ? codecShareBytes : largeWebpCodecBytes;
    if (need > limit) {
      const room = perSourcePixel === 0 ? 0 : Math.max(0, Math.floor((limit - decodeNeed(0)) / perSourcePixel));
      const kind = features.format === "lossless" ? "a lossless WebP" : "a WebP with transparency";
      throw room > 0
        ? tooLarge(header.width, header.height, room, `${kind} of ${formatMegabytes(size)}`)
        : new ImageTooLargeError(
            `The image is too large to convert: the ${formatMegabytes(size)} WebP file does not fit beside its ${target.width} × ${target.height} result.`,
          );
    }
    if (need > codecShareBytes) {
      // The codec grows past its share: the scratch (40 MB, only JPEGs use it) is let go now, and the grown codec
      // by the next JPEG conversion, so the two are never held together.
      context.codecs.releaseScratch();
      codecGrown = true;
    }
    // The transform is made beside the file, before the target exists; a profile whose work would not fit
    // the share beside this file is ignored.
    const icc = header.iccProfile;
    if (icc && icc.size <= maxProfileBytes && size + profileWorkBytes(icc.size) <= codecShareBytes)
      context.colour = colourTransform(codec, { pointer: file + icc.offset, size: icc.size }, colourKind.rgb, true);
    const result = allocateTarget(context, target.width, target.height);
    const status = codec.decodeScaled(file, size, result.pointer, target.width, target.height);
    if (status === webpStatus.outOfMemory)
      throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
    if (status !== 0) throw new UnconvertibleImageError("The WebP file is damaged: its image data cannot be decoded.");
    // Shown as stored, as browsers show a WebP: its EXIF orientation is not applied (webp-header.ts).
    return 1;
  } finally {
    codec.free(file);
  }
}
