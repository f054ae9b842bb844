import { UnconvertibleImageError } from "./errors";

/** A BMP's header as the row reader needs it. */
export type BmpHeader = {
  width: number;
  height: number;
  topDown: boolean;
  bitsPerPixel: number;
  pixelOffset: number;
  stride: number;
  palette: Uint8Array | null;
  paletteEntrySize: number;
  masks: { red: number; green: number; blue: number; alpha: number } | null;
  mayHaveAlpha: boolean;
};

const unreadable = (why: string) => new UnconvertibleImageError(`The BMP file cannot be read: ${why}.`);

/** Reads the file and info headers: Windows 3.x–5 and OS/2 1.x; uncompressed or bit-field pixels. */
export function readBmpHeader(bytes: Uint8Array): BmpHeader {
  if (bytes.length < 26 || bytes[0] !== 0x42 || bytes[1] !== 0x4d) throw unreadable("it does not start like a BMP");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const pixelOffset = view.getUint32(10, true);
  const infoSize = view.getUint32(14, true);
  let width: number;
  let height: number;
  let bitsPerPixel: number;
  let compression = 0;
  let colorsUsed = 0;
  const core = infoSize === 12;
  if (core) {
    width = view.getUint16(18, true);
    height = view.getInt16(20, true);
    bitsPerPixel = view.getUint16(24, true);
  } else {
    if (infoSize < 40 || bytes.length < 14 + 40) throw unreadable("its header is too short");
    width = view.getInt32(18, true);
    height = view.getInt32(22, true);
    bitsPerPixel = view.getUint16(28, true);
    compression = view.getUint32(30, true);
    colorsUsed = view.getUint32(46, true);
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
  if (width <= 0 || height === 0) throw unreadable("its width or height is zero");
  const topDown = height < 0;
  height = Math.abs(height);
  let masks: BmpHeader["masks"] = null;
  if (compression === 3 || compression === 6) {
    // Masks live inside a V2+ header, or right after a 40-byte one.
    const at = 14 + 40;
    if (bytes.length < at + 12) throw unreadable("its colour masks are missing");
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
    const entries = colorsUsed || 1 << bitsPerPixel;
    const start = 14 + infoSize + (compression === 3 && infoSize === 40 ? 12 : 0);
    palette = bytes.subarray(start, Math.min(start + entries * paletteEntrySize, bytes.length));
  }
  const stride = Math.ceil((width * bitsPerPixel) / 32) * 4;
  if (pixelOffset + stride * height > bytes.length) {
    throw new UnconvertibleImageError(
      "The BMP file is incomplete: it ends before its last row. Please upload it again.",
    );
  }
  return {
    width,
    height,
    topDown,
    bitsPerPixel,
    pixelOffset,
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

/** Calls `row` with each row as RGBA, top row first. */
export function decodeBmp(bytes: Uint8Array, header: BmpHeader, row: (rgba: Uint8Array) => void): void {
  const { width, height, bitsPerPixel, palette, paletteEntrySize, masks } = header;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const rgba = new Uint8Array(width * 4);
  const paletteSize = palette ? Math.floor(palette.length / paletteEntrySize) : 0;
  for (let y = 0; y < height; y += 1) {
    const stored = header.topDown ? y : height - 1 - y;
    const start = header.pixelOffset + stored * header.stride;
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
