import turboWasm from "@cwasm/jpeg-turbo/jpeg-turbo.wasm";
import webpDecoderWasm from "@cwasm/webp/webp.wasm";
import webpEncoderWasm from "@jsquash/webp/codec/enc/webp_enc_simd.wasm";
import { decodeBmp, readBmpHeader, truncatedBmp } from "./bmp";
import {
  arenaShareBytes,
  encoderShareBytes,
  formatMegabytes,
  formatMegapixels,
  libjpegOverheadBytes,
  maxOutputPixels,
  maxQuality,
  maxSourceEdge,
  maxSourcePixels,
  maxTransparentOutputPixels,
  webpDecoderShareBytes,
} from "./budget";
import { ByteReader } from "./byte-reader";
import { createWebpEncoder, encodeOptions, encoderMemoryBytes, type WebpEncoder } from "./encoder";
import { ImageTooLargeError, UnconvertibleImageError } from "./errors";
import type { Orientation } from "./exif";
import { decodeGifRows, type GifScan, scanGif, truncatedGif } from "./gif";
import { cmykChannel, type JpegHeader, readJpegHeader } from "./jpeg-header";
import {
  arenaAlloc,
  CodecAbort,
  createJpegTurbo,
  createWebpDecoder,
  decompressInto,
  heapBytes,
  type JpegTurbo,
  pixelFormat,
  type WebpDecoder,
} from "./native";
import { orientInPlace } from "./orient";
import { decodePng, readPngHeader, truncatedPng } from "./png";
import { decodeProgressive, progressiveStorageBytes } from "./progressive";
import { createRowDownscaler, downscaleInPlace, fitWithin } from "./resize";
import { readWebpHeader } from "./webp-header";

export { ImageTooLargeError, UnconvertibleImageError } from "./errors";

export type StillImageKind = "jpeg" | "png" | "webp" | "gif" | "bmp";

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
export type ConvertedImage = { bytes: Uint8Array; width: number; height: number };

/** The codec instances an isolate keeps: reused so memory is bounded by high-water marks, not GC timing. */
type Codecs = { turbo: JpegTurbo; block: number; encoder: WebpEncoder; webp: WebpDecoder | null };

/**
 * The pipeline's buffers come from one block malloc'd once per libjpeg-turbo instance and handed out by a
 * bump pointer reset after every conversion. Measured without it, small allocations libjpeg keeps between
 * large freed buffers fragmented the heap and a sequence of conversions grew it to 46 MB instead of ~31.
 */
const blockBytes = arenaShareBytes - libjpegOverheadBytes;

function createArena(): { turbo: JpegTurbo; block: number } {
  const turbo = createJpegTurbo(turboWasm);
  const block = arenaAlloc(turbo, blockBytes);
  if (block === null) throw new Error("could not reserve the conversion arena");
  return { turbo, block };
}

let codecs: Codecs | null = null;

/** This isolate's codec instances, created on first use (inside the conversion lock, so by one request). */
async function getCodecs(): Promise<Codecs> {
  if (!codecs) {
    const encoder = await createWebpEncoder(webpEncoderWasm);
    codecs = { ...createArena(), encoder, webp: null };
  }
  return codecs;
}

/**
 * One conversion at a time per isolate, because the codec instances and their arena are shared. A waiter
 * polls with its own timer rather than awaiting the holder's promise: Workers refuse I/O from code that a
 * promise of another request resumed ("Cannot perform I/O on behalf of a different request"), which is how
 * a shared promise queue made concurrent completes fail. A holder that shows no progress for `stalledMs`
 * (its request was cancelled while it awaited the upload's bytes) loses the lock; the next holder starts
 * from fresh instances, since the abandoned conversion may have left buffers in the arena.
 */
const lock = { holder: 0, issued: 0, lastProgress: 0 };
/** Longer than any synchronous step may run (a Worker's CPU limit ends a request before). */
const stalledMs = 30_000;
const pollMs = 5;

async function acquireLock(): Promise<number> {
  while (lock.holder !== 0) {
    if (Date.now() - lock.lastProgress > stalledMs) {
      lock.holder = 0;
      codecs = null;
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

/** Current linear-memory sizes of this isolate's codec instances, in bytes (for tests and the benchmark). */
export async function codecMemory(): Promise<{ arena: number; encoder: number; webpDecoder: number }> {
  const { turbo, encoder, webp } = await getCodecs();
  return {
    arena: turbo.exports.memory.buffer.byteLength,
    encoder: encoderMemoryBytes(encoder),
    webpDecoder: webp?.exports.memory.buffer.byteLength ?? 0,
  };
}

/** Whether a WebP or PNG's leading bytes announce an animation (APNG: acTL before the first IDAT). */
export function isAnimated(bytes: Uint8Array, kind: "webp" | "png"): boolean {
  try {
    if (kind === "webp") return readWebpHeader(bytes).animated;
    if (kind === "png") {
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      for (let pos = 8; pos + 8 <= bytes.length; pos += 12 + view.getUint32(pos)) {
        const type = String.fromCharCode(...bytes.subarray(pos + 4, pos + 8));
        if (type === "acTL") return true;
        if (type === "IDAT") return false;
      }
    }
  } catch {
    return false; // unreadable bytes are not animated; converting them reports why they are unreadable
  }
  return false;
}

/**
 * Converts one still image to WebP, scaled down (never up) so the long edge is at most maxEdge, EXIF
 * orientation applied. One conversion runs at a time per isolate (see `acquireLock`), reusing one decoder
 * and one encoder instance. Row formats (PNG, GIF, BMP) are read from the input as a stream.
 */
export async function convertToWebp(
  input: ImageInput,
  kind: StillImageKind,
  options: { maxEdge: number; quality?: number },
): Promise<ConvertedImage> {
  const ticket = await acquireLock();
  try {
    return await convertNow(input, kind, options.maxEdge, options.quality ?? 80, () => progress(ticket));
  } finally {
    releaseLock(ticket);
  }
}

/** What a decoder left in the arena: an RGBA image of `width × height` at `pointer`. */
type Decoded = { pointer: number; width: number; height: number; sawTransparency: boolean };

type Allocations = { alloc(size: number): number };

/** What every decoder gets: the arena, the target limits, and a heartbeat for the conversion lock. */
type Context = {
  current: Codecs;
  allocations: Allocations;
  maxEdge: number;
  maxArea: number;
  tick: () => void;
};

async function convertNow(
  input: ImageInput,
  kind: StillImageKind,
  maxEdge: number,
  quality: number,
  tick: () => void,
): Promise<ConvertedImage> {
  if (!Number.isInteger(maxEdge) || maxEdge < 1) throw new RangeError("maxEdge must be a positive integer");
  if (!(quality >= 0 && quality <= maxQuality)) throw new RangeError(`quality must be between 0 and ${maxQuality}`);
  const current = await getCodecs();
  let used = 0;
  const allocations: Allocations = {
    alloc(size) {
      const pointer = current.block + used;
      const next = used + Math.ceil(size / 16) * 16;
      // Admission keeps every plan within the block; reaching this is a planning error, not a user's.
      if (next > blockBytes) throw new Error(`arena plan exceeded: ${next} > ${blockBytes} bytes`);
      used = next;
      return pointer;
    },
  };
  try {
    warmEncoder(current, allocations);
    used = 0;
    tick();
    const context: Context = {
      current,
      allocations,
      maxEdge,
      maxArea: Math.min(maxOutputPixels, maxEdge * maxEdge),
      tick,
    };
    let orientation: Orientation = 1;
    let decoded: Decoded;
    switch (kind) {
      case "jpeg": {
        const { header, bytes } = await readJpeg(input, context);
        orientation = header.orientation;
        decoded = header.progressive
          ? decodeProgressiveJpeg(bytes, header, context)
          : decodeBaselineJpeg(bytes, header, context);
        break;
      }
      case "png":
        ({ decoded, orientation } = await decodePngInput(input, context));
        break;
      case "bmp":
        ({ decoded, orientation } = await decodeBmpInput(input, context));
        break;
      case "gif":
        decoded = await decodeGif(input, context);
        break;
      case "webp":
        ({ decoded, orientation } = await decodeWebp(input, context));
        break;
    }
    tick();
    let { width, height } = decoded;
    const pixels = () => heapBytes(current.turbo, decoded.pointer, width * height * 4);
    if (decoded.sawTransparency && width * height > maxTransparentOutputPixels) {
      // Real transparency costs the encoder 2–3× more memory per pixel; give it fewer pixels instead.
      const smaller = fitWithin(width, height, maxEdge, maxTransparentOutputPixels);
      downscaleInPlace(pixels(), width, height, smaller.width, smaller.height);
      ({ width, height } = smaller);
    }
    ({ width, height } = orientInPlace(pixels(), width, height, orientation));
    const encoded = current.encoder.encode(pixels(), width, height, encodeOptions(quality));
    if (!encoded) throw new Error("the WebP encoder returned no output");
    return { bytes: new Uint8Array(encoded), width, height };
  } catch (error) {
    if (error instanceof CodecAbort) {
      // An abort unwound the C stack without its cleanup: start afresh rather than reuse a damaged heap.
      Object.assign(current, createArena());
      throw new UnconvertibleImageError("The image file is damaged: its image data cannot be decoded.");
    }
    if (error instanceof ImageTooLargeError || error instanceof UnconvertibleImageError) throw error;
    if (error instanceof WebAssembly.RuntimeError) {
      Object.assign(current, createArena());
      throw new UnconvertibleImageError("The image file is damaged: its image data cannot be decoded.");
    }
    throw error;
  }
}

/**
 * Grows the encoder once to the memory of a maximum-size encode (noise, the worst case for its buffers),
 * so later encodes never grow it by Emscripten's +20% steps and its share stays fixed at what was measured.
 */
function warmEncoder(current: Codecs, allocations: Allocations): void {
  if (encoderMemoryBytes(current.encoder) >= encoderShareBytes * 0.9) return;
  const width = 2560;
  const height = Math.floor(maxOutputPixels / width);
  const pointer = allocations.alloc(width * height * 4);
  const noise = new Uint32Array(current.turbo.exports.memory.buffer, pointer, width * height);
  let seed = 0x9e3779b9;
  for (let i = 0; i < noise.length; i += 1) {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    noise[i] = seed | 0xff000000;
  }
  current.encoder.encode(heapBytes(current.turbo, pointer, width * height * 4), width, height, encodeOptions(80));
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

/** Runs a row decoder into a target-sized buffer in the arena. */
async function streamRows(
  context: Context,
  width: number,
  height: number,
  decode: (push: (rgba: Uint8Array) => void) => void | Promise<void>,
): Promise<Decoded> {
  const target = fitWithin(width, height, context.maxEdge, context.maxArea);
  const pointer = context.allocations.alloc(target.width * target.height * 4);
  // Nothing else allocates in the arena while rows stream, so this view stays attached.
  const scaler = createRowDownscaler(
    width,
    height,
    target.width,
    target.height,
    heapBytes(context.current.turbo, pointer, target.width * target.height * 4),
  );
  let rows = 0;
  await decode((rgba) => {
    scaler.push(rgba);
    rows += 1;
    if ((rows & 63) === 0) context.tick();
  });
  if (rows !== height) throw new UnconvertibleImageError("The image data ends before its last row.");
  return { pointer, ...target, sawTransparency: scaler.sawTransparency };
}

/** PNG: rows streamed from the input; an interlaced image keeps its even rows (half of it) in the arena. */
async function decodePngInput(
  input: ImageInput,
  context: Context,
): Promise<{ decoded: Decoded; orientation: Orientation }> {
  const reader = await openReader(input, truncatedPng);
  try {
    const header = await readPngHeader(reader);
    refuseSourcePixels(header.width, header.height);
    let evenRows: Uint8Array | undefined;
    if (header.interlaced) {
      const size = Math.ceil(header.height / 2) * header.width * 4;
      if (size + fittedBytes(header.width, header.height, context) > blockBytes)
        throw tooLarge(
          header.width,
          header.height,
          Math.max(0, Math.floor((blockBytes - fittedBytes(header.width, header.height, context)) / 2)),
          "an interlaced PNG",
        );
      evenRows = heapBytes(context.current.turbo, context.allocations.alloc(size), size);
    }
    const decoded = await streamRows(context, header.width, header.height, (push) =>
      decodePng(header, reader, push, evenRows),
    );
    return { decoded, orientation: header.orientation };
  } finally {
    await reader.cancel();
  }
}

/** BMP: rows streamed in stored order; a bottom-up file is turned upright with the orientation step. */
async function decodeBmpInput(
  input: ImageInput,
  context: Context,
): Promise<{ decoded: Decoded; orientation: Orientation }> {
  const reader = await openReader(input, truncatedBmp);
  try {
    const header = await readBmpHeader(reader);
    refuseSourcePixels(header.width, header.height);
    const decoded = await streamRows(context, header.width, header.height, (push) => decodeBmp(reader, header, push));
    return { decoded, orientation: header.topDown ? 1 : 4 };
  } finally {
    await reader.cancel();
  }
}

/** Bytes of the RGBA target an image of this size is reduced to. */
function fittedBytes(width: number, height: number, context: Context): number {
  const target = fitWithin(width, height, context.maxEdge, context.maxArea);
  return target.width * target.height * 4;
}

const truncatedJpeg = () =>
  new UnconvertibleImageError(
    "The JPEG file is incomplete: it ends before the end of its image data. Please upload the complete file again.",
  );

/** JPEG: the decoders need the whole file, read straight into the arena once its size is admitted. */
async function readJpeg(input: ImageInput, context: Context): Promise<{ header: JpegHeader; bytes: Uint8Array }> {
  const size = inputSize(input);
  if (size + libjpegOverheadBytes > arenaShareBytes)
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(size)} file exceeds the limit of ${formatMegabytes(arenaShareBytes - libjpegOverheadBytes)} for a JPEG.`,
    );
  const bytes = heapBytes(context.current.turbo, context.allocations.alloc(size), size);
  await readWhole(input, bytes, truncatedJpeg);
  context.tick();
  return { header: readJpegHeader(bytes), bytes };
}

function scaled(size: number, m: number): number {
  return Math.ceil((size * m) / 8);
}

/** The smallest M/8 decode scale whose result still covers the target, or 8 (full size). */
function coveringScale(width: number, height: number, target: { width: number; height: number }): number {
  for (let m = 1; m <= 8; m += 1) if (scaled(width, m) >= target.width && scaled(height, m) >= target.height) return m;
  return 8;
}

/**
 * Baseline JPEG: libjpeg-turbo decodes straight to M/8 scale (a 24 MP photo never exists at full size),
 * then an area downscale in place. Arena: the file + the scaled RGBA + libjpeg's buffers. When that exceeds
 * the arena's share, a smaller scale is used (a smaller output) before refusing.
 */
function decodeBaselineJpeg(bytes: Uint8Array, header: JpegHeader, context: Context): Decoded {
  const { current, allocations, maxEdge, maxArea } = context;
  const { width, height } = header;
  refuseSourcePixels(width, height);
  const target = fitWithin(width, height, maxEdge, maxArea);
  const need = (m: number) => bytes.length + scaled(width, m) * scaled(height, m) * 4 + libjpegOverheadBytes;
  let m = coveringScale(width, height, target);
  while (m > 1 && need(m) > arenaShareBytes) m -= 1;
  if (need(m) > arenaShareBytes) {
    const limit = arenaShareBytes - scaled(width, 1) * scaled(height, 1) * 4 - libjpegOverheadBytes;
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(bytes.length)} file exceeds the limit of ${formatMegabytes(Math.max(0, limit))} for a JPEG of ${width} × ${height} pixels.`,
    );
  }
  const outWidth = scaled(width, m);
  const outHeight = scaled(height, m);
  const cmyk = header.components.length === 4;
  const destination = allocations.alloc(outWidth * outHeight * 4);
  decompressInto(
    current.turbo,
    bytes.byteOffset,
    bytes.length,
    destination,
    outWidth,
    outHeight,
    cmyk ? pixelFormat.cmyk : pixelFormat.rgba,
  );
  const pixels = heapBytes(current.turbo, destination, outWidth * outHeight * 4);
  if (cmyk) {
    const inverted = header.adobeTransform !== null;
    for (let i = 0; i < pixels.length; i += 4) {
      const k = pixels[i + 3] as number;
      pixels[i] = Math.round(cmykChannel(pixels[i] as number, k, inverted));
      pixels[i + 1] = Math.round(cmykChannel(pixels[i + 1] as number, k, inverted));
      pixels[i + 2] = Math.round(cmykChannel(pixels[i + 2] as number, k, inverted));
      pixels[i + 3] = 255;
    }
  }
  // At the covering scale the target keeps the original's exact aspect; at a reduced one the scaled size is the limit.
  const final = m === coveringScale(width, height, target) ? target : fitWithin(outWidth, outHeight, maxEdge, maxArea);
  downscaleInPlace(pixels, outWidth, outHeight, final.width, final.height);
  return { pointer: destination, ...final, sawTransparency: false };
}

/**
 * Progressive JPEG: the pipeline's own decoder (progressive.ts), which stores only the coefficients an
 * N/8-scale IDCT needs. Arena: the file + that storage + the target RGBA. Large files get a smaller N first.
 */
function decodeProgressiveJpeg(bytes: Uint8Array, header: JpegHeader, context: Context): Decoded {
  const { current, allocations, maxEdge, maxArea } = context;
  const { width, height } = header;
  refuseSourcePixels(width, height);
  const target = fitWithin(width, height, maxEdge, maxArea);
  const plan = (n: number) => ({
    width,
    height,
    components: header.components,
    n,
    adobeTransform: header.adobeTransform,
  });
  const outputFor = (n: number) => {
    const w = scaled(width, n);
    const h = scaled(height, n);
    return w >= target.width && h >= target.height ? target : fitWithin(w, h, w, w * h);
  };
  const need = (n: number) => {
    const out = outputFor(n);
    return bytes.length + progressiveStorageBytes(plan(n)) + out.width * out.height * 4 + libjpegOverheadBytes;
  };
  let n = coveringScale(width, height, target);
  while (n > 1 && need(n) > arenaShareBytes) n -= 1;
  if (need(n) > arenaShareBytes) {
    const limit = Math.floor((width * height * arenaShareBytes) / need(1));
    throw tooLarge(width, height, limit, "a progressive JPEG");
  }
  const storageSize = progressiveStorageBytes(plan(n));
  const storage = allocations.alloc(storageSize);
  const out = outputFor(n);
  const pointer = allocations.alloc(out.width * out.height * 4);
  const scaledWidth = scaled(width, n);
  const scaledHeight = scaled(height, n);
  const scaler = createRowDownscaler(
    scaledWidth,
    scaledHeight,
    out.width,
    out.height,
    heapBytes(current.turbo, pointer, out.width * out.height * 4),
  );
  decodeProgressive(bytes, plan(n), heapBytes(current.turbo, storage, storageSize), (rgba) => scaler.push(rgba));
  if (scaler.rowsPushed !== scaledHeight)
    throw new UnconvertibleImageError("The JPEG image data ends before its last row.");
  return { pointer, ...out, sawTransparency: false };
}

/** Largest interlaced GIF frame whose indices (one byte a pixel, in the JS heap) a decode may hold. */
const maxInterlacedGifBytes = 12_000_000;

/**
 * GIF: the first frame on a transparent canvas of the logical screen, rows streamed into the target. Two
 * reads: the scan walks every block (frame count, descriptors clipped to the screen) before anything is
 * allocated, then the decode.
 */
async function decodeGif(input: ImageInput, context: Context): Promise<Decoded> {
  const scanner = await openReader(input, truncatedGif);
  let scan: GifScan;
  try {
    scan = await scanGif(scanner);
  } finally {
    await scanner.cancel();
  }
  if (scan.frames > 1)
    throw new UnconvertibleImageError("The GIF image is animated; animated images are not converted.");
  refuseSourcePixels(scan.width, scan.height);
  if (scan.decodeBytes > maxInterlacedGifBytes)
    throw tooLarge(scan.width, scan.height, maxInterlacedGifBytes, "an interlaced GIF frame");
  const reader = await openReader(input, truncatedGif);
  try {
    return await streamRows(context, scan.width, scan.height, (push) => decodeGifRows(reader, push));
  } finally {
    await reader.cancel();
  }
}

/** Counts a GIF's frames by walking its blocks from the stream, without decoding any pixel. */
export async function gifFrameCount(input: ImageInput): Promise<number> {
  const reader = await openReader(input, truncatedGif);
  try {
    return (await scanGif(reader)).frames;
  } finally {
    await reader.cancel();
  }
}

const truncatedWebp = () =>
  new UnconvertibleImageError("The WebP file is incomplete: it ends in the middle of its data.");

/**
 * WebP: libwebp decodes at full size in its own instance (limited by its share), the file read straight
 * into that instance once its size is admitted; the arena gets the target.
 */
async function decodeWebp(
  input: ImageInput,
  context: Context,
): Promise<{ decoded: Decoded; orientation: Orientation }> {
  const overhead = 256 * 1024;
  const size = inputSize(input);
  if (size + overhead > webpDecoderShareBytes)
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(size)} file exceeds the limit of ${formatMegabytes(webpDecoderShareBytes - overhead)} for a WebP image.`,
    );
  context.current.webp ??= createWebpDecoder(webpDecoderWasm);
  const webp = context.current.webp;
  // The file, then (4-byte aligned) the two output dimensions libwebp writes.
  const sizeOffset = Math.ceil(size / 4) * 4;
  const source = webp.exports.malloc(sizeOffset + 8);
  if (source === 0) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  let rgba = 0;
  try {
    await readWhole(input, heapBytes(webp, source, size), truncatedWebp);
    context.tick();
    const header = readWebpHeader(heapBytes(webp, source, size));
    const { width, height } = header;
    if (header.animated)
      throw new UnconvertibleImageError("The WebP image is animated; animated images are not converted.");
    refuseSourcePixels(width, height);
    if (size + width * height * 4 + overhead > webpDecoderShareBytes) {
      const limit = Math.max(0, Math.floor((webpDecoderShareBytes - overhead - size) / 4));
      throw tooLarge(width, height, limit, "a WebP image of this file size");
    }
    rgba = webp.exports.WebPDecodeRGBA(source, size, source + sizeOffset, source + sizeOffset + 4);
    if (rgba === 0) throw new UnconvertibleImageError("The WebP file is damaged: its image data cannot be decoded.");
    const decodedSize = new Uint32Array(webp.exports.memory.buffer, source + sizeOffset, 2);
    if (decodedSize[0] !== width || decodedSize[1] !== height)
      throw new UnconvertibleImageError("The WebP file's size does not match its header.");
    const decoded = await streamRows(context, width, height, (push) => {
      const pixels = heapBytes(webp, rgba, width * height * 4);
      for (let y = 0; y < height; y += 1) push(pixels.subarray(y * width * 4, (y + 1) * width * 4));
    });
    return { decoded, orientation: header.orientation };
  } finally {
    if (rgba) webp.exports.free(rgba);
    webp.exports.free(source);
  }
}
