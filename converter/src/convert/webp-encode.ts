import { encodeAlph } from "./alpha-chunk";
import type { CodecInstance } from "./codec-exports";

/** libwebp's WebPEncodingError names (index = code), plus 100 for arguments out of range. */
const encodingErrors = [
  "ok",
  "out of memory",
  "out of memory for the bitstream",
  "null parameter",
  "invalid configuration",
  "bad dimension",
  "partition 0 overflow",
  "partition overflow",
  "bad write",
  "file too big",
  "user abort",
];

/** Thrown by encode when libwebp fails; `code` is its WebPEncodingError (1 = out of memory). */
class WebpEncodeError extends Error {
  override name = "WebpEncodeError";
  constructor(readonly code: number) {
    super(`libwebp could not encode the image: ${encodingErrors[code] ?? "invalid arguments"} (${code})`);
  }
}

/** Encoder settings: quality 0–100, method 0–6 (default 2, the method docs/conversion.md describes). */
/**
 * `opaque`: every alpha of the pixels is known to be 255 (the source has no alpha channel), so the encoder
 * skips both scans of the alpha (whether an ALPH chunk is needed, whether any colour is hidden).
 */
export type WebpEncodeOptions = { quality: number; method?: number; opaque?: boolean };

const ascii = (text: string) => Array.from(text, (c) => c.charCodeAt(0));

/**
 * Turns libwebp's simple file (RIFF header, "VP8 " chunk) into VP8X + ALPH + VP8 without copying the VP8
 * data: only the 12-byte RIFF header is dropped from the front of libwebp's pieces (a view, not a copy).
 */
function withAlphaChunk(simple: Uint8Array[], alph: Uint8Array, width: number, height: number): Uint8Array[] {
  const vp8: Uint8Array[] = [];
  let vp8Bytes = 0;
  let skip = 12;
  const start: number[] = [];
  for (const piece of simple) {
    if (start.length < 16) start.push(...piece.subarray(0, 16 - start.length));
    const part = skip >= piece.length ? null : piece.subarray(skip);
    skip = Math.max(0, skip - piece.length);
    if (part && part.length > 0) {
      vp8.push(part);
      vp8Bytes += part.length;
    }
  }
  const tag = String.fromCharCode(...start.slice(0, 4), ...start.slice(8, 16));
  if (tag !== "RIFFWEBPVP8 ") throw new Error(`libwebp wrote an unexpected container: ${JSON.stringify(tag)}`);
  const pad = alph.length & 1;
  const header = new Uint8Array(12 + 18 + 8);
  const view = new DataView(header.buffer);
  header.set(ascii("RIFF"), 0);
  view.setUint32(4, 4 + 18 + 8 + alph.length + pad + vp8Bytes, true);
  header.set(ascii("WEBPVP8X"), 8);
  view.setUint32(16, 10, true);
  header[20] = 0x10; // flags: alpha; then 24 reserved bits
  for (let k = 0; k < 3; k += 1) {
    header[24 + k] = ((width - 1) >> (8 * k)) & 255; // canvas width - 1, 24 bits
    header[27 + k] = ((height - 1) >> (8 * k)) & 255; // canvas height - 1, 24 bits
  }
  header.set(ascii("ALPH"), 30);
  view.setUint32(34, alph.length, true);
  return pad ? [header, alph, new Uint8Array(1), ...vp8] : [header, alph, ...vp8];
}

/**
 * The codec's encoder: the RGBA is imported as opaque and freed once libwebp holds its YUV copy; the alpha
 * plane is coded by alpha-chunk.ts, reading the same buffer in place before the encode, and the VP8X + ALPH +
 * VP8 container is put together from pieces.
 */
export function createEncoder({
  exports,
  output,
}: CodecInstance): (pointer: number, width: number, height: number, options: WebpEncodeOptions) => Uint8Array[] {
  return (pointer: number, width: number, height: number, options: WebpEncodeOptions): Uint8Array[] => {
    const { quality, method = 2, opaque = false } = options;
    const valid =
      Number.isInteger(width) &&
      Number.isInteger(height) &&
      width > 0 &&
      height > 0 &&
      width <= 16383 &&
      height <= 16383 &&
      quality >= 0 &&
      quality <= 100 &&
      Number.isInteger(method) &&
      method >= 0 &&
      method <= 6;
    if (!valid) {
      exports.free(pointer);
      throw new RangeError(`cannot encode ${width} × ${height} at quality ${quality}, method ${method}`);
    }
    let alph: Uint8Array | null = null;
    try {
      // Read in place, before encode_rgba frees the pixels.
      if (!opaque && exports.rgba_has_transparency(pointer, width * height) !== 0)
        alph = encodeAlph(new Uint8Array(exports.memory.buffer, pointer, width * height * 4), width, height).payload;
    } catch (error) {
      exports.free(pointer);
      throw error;
    }
    const pieces: Uint8Array[] = [];
    output.sink = pieces;
    let status: number;
    try {
      status = exports.encode_rgba(pointer, width, height, quality, method, opaque ? 1 : 0);
    } finally {
      output.sink = null;
    }
    if (status !== 0) throw new WebpEncodeError(status);
    return alph ? withAlphaChunk(pieces, alph, width, height) : pieces;
  };
}
