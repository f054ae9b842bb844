import type { ByteReader } from "./byte-reader";
import { UnconvertibleImageError } from "./errors";

/** What a WebP's RIFF chunks say, read without decoding. */
type WebpHeader = {
  width: number;
  height: number;
  mayHaveAlpha: boolean;
  animated: boolean;
  /** Where the ICCP chunk's profile is in the file (VP8X files), or null. */
  iccProfile: { offset: number; size: number } | null;
};

const unreadable = (why: string) => new UnconvertibleImageError(`The WebP file cannot be read: ${why}.`);

/**
 * Reads the canvas size, alpha and animation flags and the colour profile's place of a WebP file. An EXIF
 * orientation is not read: browsers show a WebP as stored, whatever its EXIF says, and so does the conversion.
 */
export function readWebpHeader(bytes: Uint8Array): WebpHeader {
  const text = (at: number) => String.fromCharCode(...bytes.subarray(at, at + 4));
  // Only the 12-byte RIFF header is required here: a valid 1 × 1 lossless file has 28 bytes, and each
  // chunk below is read only when its body holds the fields.
  if (bytes.length < 12 || text(0) !== "RIFF" || text(8) !== "WEBP") throw unreadable("it does not start like a WebP");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let header: Omit<WebpHeader, "iccProfile"> | null = null;
  let iccProfile: WebpHeader["iccProfile"] = null;
  let pos = 12;
  while (pos + 8 <= bytes.length) {
    const type = text(pos);
    const size = view.getUint32(pos + 4, true);
    const body = bytes.subarray(pos + 8, Math.min(bytes.length, pos + 8 + size));
    if (type === "VP8X" && body.length >= 10) {
      const flags = body[0] as number;
      const width = 1 + ((body[4] as number) | ((body[5] as number) << 8) | ((body[6] as number) << 16));
      const height = 1 + ((body[7] as number) | ((body[8] as number) << 8) | ((body[9] as number) << 16));
      header = { width, height, mayHaveAlpha: (flags & 0x10) !== 0, animated: (flags & 0x02) !== 0 };
    } else if (type === "VP8 " && !header && body.length >= 10) {
      if (body[3] !== 0x9d || body[4] !== 0x01 || body[5] !== 0x2a) throw unreadable("its image header is invalid");
      header = {
        width: view.getUint16(pos + 8 + 6, true) & 0x3fff,
        height: view.getUint16(pos + 8 + 8, true) & 0x3fff,
        mayHaveAlpha: false,
        animated: false,
      };
    } else if (type === "VP8L" && !header && body.length >= 5) {
      if (body[0] !== 0x2f) throw unreadable("its image header is invalid");
      const bits = view.getUint32(pos + 9, true);
      header = { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1, mayHaveAlpha: true, animated: false };
    } else if (type === "ICCP" && !iccProfile && pos + 8 + size <= bytes.length) {
      iccProfile = { offset: pos + 8, size };
    }
    pos += 8 + size + (size & 1);
  }
  if (!header || header.width === 0 || header.height === 0) throw unreadable("it has no image header");
  return { ...header, iccProfile };
}

/** What the chunks before a WebP's image data say, read from its stream (`readWebpStart`). */
type WebpStart = {
  /** The canvas (VP8X) or, without VP8X, the bitstream's size; 0 × 0 when the image chunk was not reached. */
  width: number;
  height: number;
  animated: boolean;
  /**
   * The first image chunk ("VP8 ", "VP8L" or ALPH), whose payload the reader stands at, or null (animations,
   * files without one). For VP8L also the bitstream's own size and its header's alpha hint, read from its
   * first 5 bytes (not consumed). `alpha`: whether the image may have alpha (VP8L: its hint; ALPH: yes).
   */
  image: { type: string; size: number; width: number; height: number; alpha: boolean } | null;
};

/**
 * Walks a WebP's RIFF chunks from the reader up to its first image chunk, handing the ICCP chunk's payload to
 * `onProfile` (which must consume exactly `size` bytes from the reader, by reading or skipping them), and
 * stops with the reader at the image chunk's payload. Stops early, with `image` null, at an animation.
 */
export async function readWebpStart(
  reader: ByteReader,
  onProfile: (size: number) => Promise<void>,
): Promise<WebpStart> {
  const text = (bytes: Uint8Array, at: number) => String.fromCharCode(...bytes.subarray(at, at + 4));
  const riff = await reader.take(12);
  if (text(riff, 0) !== "RIFF" || text(riff, 8) !== "WEBP") throw unreadable("it does not start like a WebP");
  const start: WebpStart = { width: 0, height: 0, animated: false, image: null };
  let canvas = false;
  let profileSeen = false;
  for (;;) {
    if (await reader.atEnd()) throw unreadable("it has no image header");
    const chunk = await reader.take(8);
    const type = text(chunk, 0);
    const size = new DataView(chunk.buffer, chunk.byteOffset, 8).getUint32(4, true);
    const padded = size + (size & 1);
    if (type === "VP8X") {
      if (size < 10) throw unreadable("its extended header is too short");
      const body = await reader.take(10);
      start.width = 1 + ((body[4] as number) | ((body[5] as number) << 8) | ((body[6] as number) << 16));
      start.height = 1 + ((body[7] as number) | ((body[8] as number) << 8) | ((body[9] as number) << 16));
      start.animated = ((body[0] as number) & 0x02) !== 0;
      canvas = true;
      await reader.skip(padded - 10);
      if (start.animated) return start;
    } else if (type === "ICCP" && !profileSeen) {
      profileSeen = true;
      await onProfile(size);
      await reader.skip(padded - size);
    } else if (type === "ANIM" || type === "ANMF") {
      start.animated = true;
      return start;
    } else if (type === "VP8L") {
      const head = await reader.peek(5);
      if (size < 5 || head[0] !== 0x2f) throw unreadable("its image header is invalid");
      const bits = new DataView(head.buffer, head.byteOffset, 5).getUint32(1, true);
      const width = (bits & 0x3fff) + 1;
      const height = ((bits >> 14) & 0x3fff) + 1;
      if (canvas && (width !== start.width || height !== start.height))
        throw unreadable("its image size is not its canvas size");
      start.width = width;
      start.height = height;
      start.image = { type, size, width, height, alpha: (bits >>> 28) % 2 === 1 };
      return start;
    } else if (type === "VP8 " || type === "ALPH") {
      start.image = { type, size, width: start.width, height: start.height, alpha: type === "ALPH" };
      return start;
    } else {
      await reader.skip(padded);
    }
  }
}
