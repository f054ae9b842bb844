import type { ByteReader } from "./byte-reader";
import { UnconvertibleImageError } from "./errors";

/** A BMP's header as the row reader needs it. */
type BmpHeader = {
  width: number;
  height: number;
  /** Rows are stored top row first (else bottom row first, the usual BMP order). */
  topDown: boolean;
  bitsPerPixel: number;
  /** Run-length encoding: 8 (BI_RLE8), 4 (BI_RLE4), or 0 for stored rows. */
  rle: 0 | 4 | 8;
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
 * Reads the file and info headers (Windows 3.x–5 and OS/2 1.x; stored, bit-field or run-length coded pixels)
 * and the palette, and leaves the reader at the first stored row. Nothing read is larger than the 124-byte
 * header or a 256-entry palette, whatever the file claims. 2-bit palette files are outside Microsoft's
 * specification but shown by Chromium, so read like 1-, 4- and 8-bit ones.
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
  const info = (await reader.take(infoSize - 4)).slice();
  const view = new DataView(info.buffer);
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
  if (compression !== 0 && compression !== 1 && compression !== 2 && compression !== 3 && compression !== 6) {
    throw new UnconvertibleImageError(
      "The BMP uses a compression that cannot be converted. Please save it as PNG or JPEG.",
    );
  }
  if (![1, 2, 4, 8, 16, 24, 32].includes(bitsPerPixel)) throw unreadable(`it has ${bitsPerPixel} bits per pixel`);
  const rle = compression === 1 ? 8 : compression === 2 ? 4 : 0;
  if (rle !== 0 && bitsPerPixel !== rle)
    throw unreadable(`its run-length coding does not fit ${bitsPerPixel} bits per pixel`);
  if (width <= 0 || height === 0 || height === -2147483648) throw unreadable("its width or height is out of range");
  const topDown = height < 0;
  height = Math.abs(height);
  const masks = await readMasks(reader, { info, infoSize, compression, bitsPerPixel });
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
    rle,
    stride,
    palette,
    paletteEntrySize,
    masks,
    mayHaveAlpha: (masks?.alpha ?? 0) !== 0,
  };
}

/**
 * The colour masks of a bit-field BMP (after a 40-byte header they follow it: three, or four with
 * BI_ALPHABITFIELDS), or 16-bit's 5-5-5 default; null for the other depths.
 */
async function readMasks(
  reader: ByteReader,
  header: { info: Uint8Array; infoSize: number; compression: number; bitsPerPixel: number },
): Promise<BmpHeader["masks"]> {
  const { infoSize, compression, bitsPerPixel } = header;
  if (compression !== 3 && compression !== 6) {
    return bitsPerPixel === 16 ? { red: 0x7c00, green: 0x03e0, blue: 0x001f, alpha: 0 } : null;
  }
  if (infoSize === 12) throw unreadable("its colour masks are missing");
  let info = header.info;
  if (infoSize === 40) {
    const masksAfter = await reader.take(compression === 6 ? 16 : 12);
    info = new Uint8Array(header.info.length + 16);
    info.set(header.info);
    info.set(masksAfter, header.info.length);
  }
  const view = new DataView(info.buffer);
  const at = 36;
  const alpha = compression === 6 || infoSize >= 56 ? view.getUint32(at + 12, true) : 0;
  const masks = {
    red: view.getUint32(at, true),
    green: view.getUint32(at + 4, true),
    blue: view.getUint32(at + 8, true),
    alpha,
  };
  checkMasks(masks, bitsPerPixel);
  return masks;
}

/**
 * Refuses colour masks Chromium refuses: a mask with a gap in its bits, or with bits beyond the pixel's
 * size. Overlapping masks are allowed (each channel reads its own bits), as there.
 */
function checkMasks(masks: NonNullable<BmpHeader["masks"]>, bitsPerPixel: number): void {
  if (bitsPerPixel !== 16 && bitsPerPixel !== 32) throw unreadable(`its colour masks need 16 or 32 bits per pixel`);
  for (const mask of [masks.red, masks.green, masks.blue, masks.alpha]) {
    if (bitsPerPixel === 16 && mask > 0xffff) throw unreadable("a colour mask has more bits than a pixel");
    const low = mask & -mask;
    // Adding the lowest bit of a mask without a gap carries through all of its bits.
    if (((mask + low) & mask) !== 0) throw unreadable("a colour mask has a gap in its bits");
  }
}

/**
 * One channel from its mask, as Chromium reads it: up to 8 bits scaled to 0–255, more than 8 bits by their
 * top 8; a colour channel without a mask is 0, alpha without one is opaque.
 */
function channel(value: number, mask: number, absent: number): number {
  if (mask === 0) return absent;
  const shift = 31 - Math.clz32(mask & -mask);
  const bits = 32 - Math.clz32(mask >>> shift);
  const field = ((value & mask) >>> 0) >>> shift;
  if (bits > 8) return field >>> (bits - 8);
  return Math.round((field * 255) / ((1 << bits) - 1));
}

/** Writes palette entry `index` as opaque RGBA at `o`; an index past the palette is black, as in Chromium. */
function paletteColour(rgba: Uint8Array, o: number, header: BmpHeader, index: number, paletteSize: number): void {
  if (index >= paletteSize) {
    rgba[o] = 0;
    rgba[o + 1] = 0;
    rgba[o + 2] = 0;
  } else {
    const p = index * header.paletteEntrySize;
    const colors = header.palette as Uint8Array;
    rgba[o] = colors[p + 2] as number;
    rgba[o + 1] = colors[p + 1] as number;
    rgba[o + 2] = colors[p] as number;
  }
  rgba[o + 3] = 255;
}

/**
 * Whether any pixel of a bit-field BMP with an alpha mask has alpha above zero, reading its rows from
 * `reader` (at the first stored row) until one does. A file whose alpha is zero everywhere is shown
 * opaque: its writer left the alpha bits unset.
 */
export async function bmpAlphaIsUsed(reader: ByteReader, header: BmpHeader): Promise<boolean> {
  const alpha = header.masks?.alpha ?? 0;
  if (alpha === 0 || header.rle !== 0) return false;
  for (let y = 0; y < header.height; y += 1) {
    const bytes = await reader.take(header.stride);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let x = 0; x < header.width; x += 1) {
      const value = header.bitsPerPixel === 16 ? view.getUint16(x * 2, true) : view.getUint32(x * 4, true);
      if ((value & alpha) !== 0) return true;
    }
  }
  return false;
}

/**
 * Calls `row` with each row as RGBA in the order the file stores them (bottom row first unless `topDown`),
 * reading one stored row at a time. The caller checks width × height before, so a row is bounded. Pass
 * `opaque` for a file whose alpha mask is unused (`bmpAlphaIsUsed`).
 */
export async function decodeBmp(
  reader: ByteReader,
  header: BmpHeader,
  row: (rgba: Uint8Array) => void,
  opaque = false,
): Promise<void> {
  if (header.rle !== 0) return decodeRle(reader, header, row);
  const { width, height, bitsPerPixel, masks } = header;
  const rgba = new Uint8Array(width * 4);
  const paletteSize = header.palette ? Math.floor(header.palette.length / header.paletteEntrySize) : 0;
  const alphaMask = opaque ? 0 : (masks?.alpha ?? 0);
  for (let y = 0; y < height; y += 1) {
    const bytes = await reader.take(header.stride);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let x = 0; x < width; x += 1) {
      const o = x * 4;
      if (bitsPerPixel <= 8) {
        const bit = x * bitsPerPixel;
        const index = ((bytes[bit >> 3] as number) >> (8 - bitsPerPixel - (bit & 7))) & ((1 << bitsPerPixel) - 1);
        paletteColour(rgba, o, header, index, paletteSize);
      } else if (bitsPerPixel === 24 || (bitsPerPixel === 32 && !masks)) {
        const p = x * (bitsPerPixel >> 3);
        rgba[o] = bytes[p + 2] as number;
        rgba[o + 1] = bytes[p + 1] as number;
        rgba[o + 2] = bytes[p] as number;
        rgba[o + 3] = 255; // the fourth byte of plain 32-bit BMPs is padding (browsers ignore it too)
      } else {
        const m = masks as NonNullable<BmpHeader["masks"]>;
        const value = bitsPerPixel === 16 ? view.getUint16(x * 2, true) : view.getUint32(x * 4, true);
        rgba[o] = channel(value, m.red, 0);
        rgba[o + 1] = channel(value, m.green, 0);
        rgba[o + 2] = channel(value, m.blue, 0);
        rgba[o + 3] = channel(value, alphaMask, 255);
      }
    }
    row(rgba);
  }
}

/**
 * BI_RLE8 / BI_RLE4, as Chromium shows them: runs and literal groups that reach past the row's end are cut
 * there; pixels that an end-of-line, a delta or the end of the bitmap skips are opaque black; a delta past
 * the last row ends the bitmap, and whatever follows the last row is ignored; a file marked top-down is
 * read top-down (the format allows RLE only bottom-up, but Chromium shows such files); data that ends
 * before the end-of-bitmap code is an incomplete file. Every step consumes at least two bytes and writes at
 * most what is left of its row, and rows only move forward, so the work is bounded by the file's length
 * plus the image's area, whatever the codes claim.
 */
async function decodeRle(reader: ByteReader, header: BmpHeader, row: (rgba: Uint8Array) => void): Promise<void> {
  const { width, height, rle } = header;
  const rgba = new Uint8Array(width * 4);
  const black = () => {
    rgba.fill(0);
    for (let o = 3; o < rgba.length; o += 4) rgba[o] = 255;
  };
  black();
  const paletteSize = header.palette ? Math.floor(header.palette.length / header.paletteEntrySize) : 0;
  const put = (x: number, index: number) => paletteColour(rgba, x * 4, header, index, paletteSize);
  let x = 0;
  let y = 0;
  /** Hands on the current row and starts the next one black; false once every row is out. */
  const nextRow = (): boolean => {
    row(rgba);
    black();
    y += 1;
    x = 0;
    return y < height;
  };
  const two = async () => (reader.available >= 2 ? reader.takeBuffered(2) : reader.take(2));
  for (;;) {
    const pair = await two();
    const count = pair[0] as number;
    const value = pair[1] as number;
    if (count > 0) {
      // A run: `count` pixels of one index (RLE8) or of two alternating indices (RLE4).
      const end = Math.min(width, x + count);
      for (let i = 0; x < end; x += 1, i += 1) put(x, rle === 8 ? value : i & 1 ? value & 15 : value >> 4);
      continue;
    }
    if (value === 0) {
      if (!nextRow()) return;
    } else if (value === 1) {
      // End of bitmap: the rest is black.
      while (nextRow());
      return;
    } else if (value === 2) {
      const delta = await two();
      const dx = delta[0] as number;
      const dy = delta[1] as number;
      const column = x;
      for (let i = 0; i < dy; i += 1) if (!nextRow()) return;
      x = Math.min(width, column + dx);
    } else {
      // A literal group of `value` indices, padded to a 16-bit boundary.
      const bytes = await reader.take(rle === 8 ? (value + 1) & ~1 : (((value + 1) >> 1) + 1) & ~1);
      const end = Math.min(width, x + value);
      for (let i = 0; x < end; x += 1, i += 1) {
        const byte = bytes[rle === 8 ? i : i >> 1] as number;
        put(x, rle === 8 ? byte : i & 1 ? byte & 15 : byte >> 4);
      }
    }
  }
}
