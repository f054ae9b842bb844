import type { ByteReader } from "./byte-reader";
import { UnconvertibleImageError } from "./errors";

/** A BMP's header as the row reader needs it. */
export type BmpHeader = {
  width: number;
  height: number;
  /** Rows are stored top row first (else bottom row first, the usual BMP order). */
  topDown: boolean;
  bitsPerPixel: number;
  stride: number;
  palette: Uint8Array | null;
  paletteEntrySize: number;
  masks: { red: number; green: number; blue: number; alpha: number } | null;
  mayHaveAlpha: boolean;
};

const unreadable = (why: string) => new UnconvertibleImageError(`The BMP file cannot be read: ${why}.`);

/** The error of a file that ends before its last row. */
export const truncatedBmp = () =>
  new UnconvertibleImageError("The BMP file is incomplete: it ends before its last row. Please upload it again.");

/** Info headers this reader knows: OS/2 1.x (12), Windows 3.x (40), V2–V5 (52, 56, 108, 124). */
const knownInfoSizes = [12, 40, 52, 56, 64, 108, 124];

/**
 * Reads the file and info headers (Windows 3.x–5 and OS/2 1.x; uncompressed or bit-field pixels) and the
 * palette, and leaves the reader at the first stored row. Nothing read is larger than the 124-byte header or
 * a 256-entry palette, whatever the file claims.
 */
export async function readBmpHeader(reader: ByteReader): Promise<BmpHeader> {
  if (!(await reader.ensure(18))) throw unreadable("it does not start like a BMP");
  const start = reader.takeBuffered(18).slice();
  const startView = new DataView(start.buffer);
  if (start[0] !== 0x42 || start[1] !== 0x4d) throw unreadable("it does not start like a BMP");
  const pixelOffset = startView.getUint32(10, true);
  const infoSize = startView.getUint32(14, true);
  if (!knownInfoSizes.includes(infoSize)) throw unreadable(`its header has an unknown size of ${infoSize} bytes`);
  const core = infoSize === 12;
  let info = (await reader.take(infoSize - 4)).slice();
  let view = new DataView(info.buffer);
  let width: number;
  let height: number;
  let bitsPerPixel: number;
  let compression = 0;
  let colorsUsed = 0;
  if (core) {
    width = view.getUint16(0, true);
    height = view.getInt16(2, true);
    bitsPerPixel = view.getUint16(6, true);
  } else {
    width = view.getInt32(0, true);
    height = view.getInt32(4, true);
    bitsPerPixel = view.getUint16(10, true);
    compression = view.getUint32(12, true);
    colorsUsed = view.getUint32(28, true);
  }
  if (compression === 1 || compression === 2) {
    throw new UnconvertibleImageError(
      "The image is a run-length compressed BMP, which cannot be converted. Please save it as PNG or JPEG.",
    );
  }
  if (compression !== 0 && compression !== 3 && compression !== 6) {
    throw new UnconvertibleImageError(
      "The BMP uses a compression that cannot be converted. Please save it as PNG or JPEG.",
    );
  }
  if (![1, 4, 8, 16, 24, 32].includes(bitsPerPixel)) throw unreadable(`it has ${bitsPerPixel} bits per pixel`);
  if (width <= 0 || height === 0 || height === -2147483648) throw unreadable("its width or height is out of range");
  const topDown = height < 0;
  height = Math.abs(height);
  let masks: BmpHeader["masks"] = null;
  if (compression === 3 || compression === 6) {
    if (infoSize === 12) throw unreadable("its colour masks are missing");
    if (infoSize === 40) {
      // A 40-byte header is followed by the masks (three, or four with BI_ALPHABITFIELDS).
      const masksAfter = await reader.take(compression === 6 ? 16 : 12);
      const extended = new Uint8Array(info.length + 16);
      extended.set(info);
      extended.set(masksAfter, info.length);
      info = extended;
      view = new DataView(info.buffer);
    }
    const at = 36;
    const alpha = compression === 6 || infoSize >= 56 ? view.getUint32(at + 12, true) : 0;
    masks = {
      red: view.getUint32(at, true),
      green: view.getUint32(at + 4, true),
      blue: view.getUint32(at + 8, true),
      alpha,
    };
  } else if (bitsPerPixel === 16) {
    masks = { red: 0x7c00, green: 0x03e0, blue: 0x001f, alpha: 0 };
  }
  let palette: Uint8Array | null = null;
  const paletteEntrySize = core ? 3 : 4;
  if (bitsPerPixel <= 8) {
    const entries = Math.min(colorsUsed || 1 << bitsPerPixel, 1 << bitsPerPixel);
    const room = Math.max(0, pixelOffset - reader.position);
    palette = (await reader.take(Math.min(entries * paletteEntrySize, room))).slice();
  }
  if (pixelOffset < reader.position) throw unreadable("its pixel data starts inside its header");
  await reader.skip(pixelOffset - reader.position);
  const stride = Math.ceil((width * bitsPerPixel) / 32) * 4;
  return {
    width,
    height,
    topDown,
    bitsPerPixel,
    stride,
    palette,
    paletteEntrySize,
    masks,
    mayHaveAlpha: (masks?.alpha ?? 0) !== 0,
  };
}

function channel(value: number, mask: number): number {
  if (mask === 0) return 255;
  const shift = 31 - Math.clz32(mask & -mask);
  const max = mask >>> shift;
  return Math.round((((value & mask) >>> shift) * 255) / max);
}

/**
 * Calls `row` with each row as RGBA in the order the file stores them (bottom row first unless `topDown`),
 * reading one stored row at a time. The caller checks width × height before, so a row is bounded.
 */
export async function decodeBmp(reader: ByteReader, header: BmpHeader, row: (rgba: Uint8Array) => void): Promise<void> {
  const { width, height, bitsPerPixel, palette, paletteEntrySize, masks } = header;
  const rgba = new Uint8Array(width * 4);
  const paletteSize = palette ? Math.floor(palette.length / paletteEntrySize) : 0;
  for (let y = 0; y < height; y += 1) {
    const bytes = await reader.take(header.stride);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const start = 0;
    for (let x = 0; x < width; x += 1) {
      const o = x * 4;
      if (bitsPerPixel <= 8) {
        const bit = x * bitsPerPixel;
        const index =
          ((bytes[start + (bit >> 3)] as number) >> (8 - bitsPerPixel - (bit & 7))) & ((1 << bitsPerPixel) - 1);
        if (index >= paletteSize) throw unreadable("a pixel refers to a colour outside the palette");
        const p = index * paletteEntrySize;
        const colors = palette as Uint8Array;
        rgba[o] = colors[p + 2] as number;
        rgba[o + 1] = colors[p + 1] as number;
        rgba[o + 2] = colors[p] as number;
        rgba[o + 3] = 255;
      } else if (bitsPerPixel === 24 || (bitsPerPixel === 32 && !masks)) {
        const p = start + x * (bitsPerPixel >> 3);
        rgba[o] = bytes[p + 2] as number;
        rgba[o + 1] = bytes[p + 1] as number;
        rgba[o + 2] = bytes[p] as number;
        rgba[o + 3] = 255; // the fourth byte of plain 32-bit BMPs is padding
      } else {
        const m = masks as NonNullable<BmpHeader["masks"]>;
        const value = bitsPerPixel === 16 ? view.getUint16(start + x * 2, true) : view.getUint32(start + x * 4, true);
        rgba[o] = channel(value, m.red);
        rgba[o + 1] = channel(value, m.green);
        rgba[o + 2] = channel(value, m.blue);
        rgba[o + 3] = channel(value, m.alpha);
      }
    }
    row(rgba);
  }
}
