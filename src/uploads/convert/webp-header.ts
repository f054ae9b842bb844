import { UnconvertibleImageError } from "./errors";

/** What a WebP's RIFF chunks say, read without decoding. */
export type WebpHeader = {
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
