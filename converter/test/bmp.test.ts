import { describe, expect, it } from "vitest";
import { convertToWebp, UnconvertibleImageError } from "../src/convert";
import { decodeBmp, readBmpHeader, truncatedBmp } from "../src/convert/bmp";
import { ByteReader } from "../src/convert/byte-reader";
import { decodeWebp, near, pixelAt } from "./images";

/**
 * Expected pixels come from Chromium (Debian's build, each file drawn on a canvas and read back): runs cut
 * at the row's end, skipped pixels opaque black, masks read as the header says.
 */

type BmpOptions = {
  width: number;
  height: number;
  bitsPerPixel: number;
  compression?: number;
  palette?: number[][];
  data: number[];
  infoSize?: 40 | 108 | 124;
  masks?: [number, number, number, number];
  /** The header's colours-used count; the palette's length unless given. */
  colorsUsed?: number;
};

/** A BMP file: 14-byte file header, info header (masks after a 40-byte one), palette, pixel data. */
function bmp(o: BmpOptions): Uint8Array {
  const infoSize = o.infoSize ?? 40;
  const compression = o.compression ?? 0;
  const maskBytes = infoSize === 40 && o.masks ? (compression === 6 ? 16 : 12) : 0;
  const palette = o.palette ?? [];
  const offset = 14 + infoSize + maskBytes + palette.length * 4;
  const out = new Uint8Array(offset + o.data.length);
  const view = new DataView(out.buffer);
  out.set([0x42, 0x4d]);
  view.setUint32(2, out.length, true);
  view.setUint32(10, offset, true);
  view.setUint32(14, infoSize, true);
  view.setInt32(18, o.width, true);
  view.setInt32(22, o.height, true);
  view.setUint16(26, 1, true);
  view.setUint16(28, o.bitsPerPixel, true);
  view.setUint32(30, compression, true);
  view.setUint32(34, o.data.length, true);
  view.setUint32(46, o.colorsUsed ?? palette.length, true);
  const maskCount = compression === 6 || infoSize >= 108 ? 4 : 3;
  for (const [i, mask] of (o.masks ?? []).slice(0, maskCount).entries()) view.setUint32(54 + i * 4, mask >>> 0, true);
  for (const [i, [r, g, b]] of palette.entries())
    out.set([b as number, g as number, r as number, 0], offset - palette.length * 4 + i * 4);
  out.set(o.data, offset);
  return out;
}

/** Decodes with the pipeline's BMP reader: rows top to bottom, each pixel as [r, g, b, a]. */
async function pixels(file: Uint8Array): Promise<number[][][]> {
  const reader = new ByteReader(file, truncatedBmp);
  const header = await readBmpHeader(reader);
  const rows: number[][][] = [];
  await decodeBmp(reader, header, (rgba) => {
    const row: number[][] = [];
    for (let i = 0; i < rgba.length; i += 4) row.push(Array.from(rgba.subarray(i, i + 4)));
    rows.push(row);
  });
  return header.topDown ? rows : rows.reverse();
}

const palette = [
  [255, 0, 0],
  [0, 255, 0],
  [0, 0, 255],
  [255, 255, 0],
];
const R = [255, 0, 0, 255];
const G = [0, 255, 0, 255];
const B = [0, 0, 255, 255];
const Y = [255, 255, 0, 255];
const K = [0, 0, 0, 255];

const rle8 = (width: number, height: number, data: number[]) =>
  bmp({ width, height, bitsPerPixel: 8, compression: 1, palette, data });

describe("BMP run-length coding (BI_RLE8, BI_RLE4): runs, deltas and literal groups decode as Chromium draws them", () => {
  it("decodes RLE8 runs, end of line, a delta (skipped pixels black) and a literal group, bottom-up", async () => {
    // Stored bottom row first: 4 × green, end of line; top row: 2 × red, delta +1, 1 × blue, end of bitmap.
    const file = rle8(4, 2, [4, 1, 0, 0, 2, 0, 0, 2, 1, 0, 1, 2, 0, 1]);
    expect(await pixels(file)).toEqual([
      [R, R, K, B],
      [G, G, G, G],
    ]);
  });

  it("paints what an RLE8 delta skips across rows, and every row after an early end of bitmap, black", async () => {
    const file = rle8(4, 3, [2, 1, 0, 2, 1, 1, 1, 2, 0, 1]);
    expect(await pixels(file)).toEqual([
      [K, K, K, K],
      [K, K, K, B],
      [G, G, K, K],
    ]);
  });

  it("decodes RLE4 runs of alternating indices and an odd literal group", async () => {
    const file = bmp({
      width: 8,
      height: 1,
      bitsPerPixel: 4,
      compression: 2,
      palette,
      data: [4, 0x12, 0, 3, 0x30, 0x12, 0, 0, 0, 1],
    });
    expect(await pixels(file)).toEqual([[G, B, G, B, Y, R, G, K]]);
  });

  it("decodes an RLE8 or RLE4 file marked top-down upright (outside the format, but Chromium shows it)", async () => {
    expect(await pixels(rle8(2, -2, [2, 1, 0, 0, 2, 2, 0, 1]))).toEqual([
      [G, G],
      [B, B],
    ]);
    const rle4 = bmp({ width: 2, height: -1, bitsPerPixel: 4, compression: 2, palette, data: [2, 0x01, 0, 1] });
    expect(await pixels(rle4)).toEqual([[R, G]]);
  });

  it("cuts runs and literal groups at the row's end (no wrap to the next row)", async () => {
    expect(await pixels(rle8(4, 2, [6, 1, 0, 0, 4, 2, 0, 1]))).toEqual([
      [B, B, B, B],
      [G, G, G, G],
    ]);
    expect(await pixels(rle8(4, 1, [0, 6, 1, 1, 1, 2, 2, 2, 0, 1]))).toEqual([[G, G, G, B]]);
  });

  it("ends the bitmap at a delta that moves past the last row when the end-of-bitmap code or the file's end follows", async () => {
    for (const tail of [[0, 1], []])
      expect(await pixels(rle8(2, 2, [1, 1, 0, 2, 0, 200, ...tail]))).toEqual([
        [K, K],
        [G, K],
      ]);
    // An end-of-line closing the last row may be the last code too.
    expect(await pixels(rle8(2, 2, [2, 1, 0, 0, 2, 2, 0, 0]))).toEqual([
      [B, B],
      [G, G],
    ]);
  });

  it("ignores RLE data after the last row (a run, a literal group, a delta, an end-of-line), as Chromium does", async () => {
    expect(await pixels(rle8(2, 2, [1, 1, 0, 2, 0, 200, 1, 2, 0, 1]))).toEqual([
      [K, K],
      [G, K],
    ]);
    for (const extra of [
      [2, 3],
      [0, 3, 1, 2, 3, 0],
      [0, 2, 1, 0],
      [0, 0],
    ])
      expect(await pixels(rle8(2, 2, [2, 1, 0, 0, 2, 2, 0, 0, ...extra, 0, 1]))).toEqual([
        [B, B],
        [G, G],
      ]);
  });
});

describe("BMP run-length coding: bad indices black, incomplete data refused, huge headers in bounded time, WebP out", () => {
  it("reads nothing past a 20000 × 200 RLE8 image that a delta leaves, however much data follows", async () => {
    // The delta leaves the image at once (255 rows down); 64 KiB of runs follow and are never read as pixels.
    const data = [0, 2, 0, 255, ...new Array<number>(65536).fill(1)];
    const started = performance.now();
    const converted = await convertToWebp(rle8(20000, 200, data), "bmp", { maxEdge: 256 });
    expect([converted.width, converted.height]).toEqual([256, 3]);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it("paints indices past the palette black, in RLE and stored rows alike", async () => {
    expect(await pixels(rle8(2, 1, [1, 9, 1, 3, 0, 1]))).toEqual([[K, Y]]);
    const stored = bmp({ width: 4, height: 1, bitsPerPixel: 8, palette, data: [0, 1, 9, 3] });
    expect(await pixels(stored)).toEqual([[R, G, K, Y]]);
  });

  it("refuses RLE data that ends before its end-of-bitmap code as incomplete", async () => {
    await expect(pixels(rle8(4, 2, [4, 1, 0, 0, 4, 2]))).rejects.toThrow(truncatedBmp());
  });

  it("refuses run-length coding that does not match the bit depth", async () => {
    const file = bmp({ width: 2, height: 1, bitsPerPixel: 4, compression: 1, palette, data: [2, 1, 0, 1] });
    await expect(pixels(file)).rejects.toThrow(UnconvertibleImageError);
  });

  it("answers a 20000 × 5000 RLE8 header with 6 bytes of runs as incomplete after one pass over the data", async () => {
    const file = rle8(20000, 5000, [255, 1, 255, 1, 255, 1]);
    const started = performance.now();
    await expect(convertToWebp(file, "bmp", { maxEdge: 256 })).rejects.toThrow(truncatedBmp());
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it("converts a 20000 × 5000 RLE8 file whose 6 bytes of data end the bitmap early to black, in bounded time", async () => {
    const file = rle8(20000, 5000, [255, 2, 255, 2, 0, 1]);
    const out = await convertToWebp(file, "bmp", { maxEdge: 256 });
    expect([out.width, out.height]).toEqual([256, 64]);
    const decoded = await decodeWebp(out.bytes);
    expect(near(pixelAt(decoded, 128, 10), [0, 0, 0], 4)).toBe(true);
  });

  it("converts an RLE8 picture to WebP, skipped area black and opaque", async () => {
    // 32 × 16, bottom-up: 8 rows of 16 green + 16 blue, then 8 rows of 16 red, a 16-pixel skip, end of line.
    const data: number[] = [];
    for (let y = 0; y < 8; y += 1) data.push(16, 1, 16, 2, 0, 0);
    for (let y = 0; y < 8; y += 1) data.push(16, 0, 0, 2, 16, 0, 0, 0);
    data.push(0, 1);
    const decoded = await decodeWebp((await convertToWebp(rle8(32, 16, data), "bmp", { maxEdge: 64 })).bytes);
    expect(near(pixelAt(decoded, 4, 4), [255, 0, 0], 16)).toBe(true);
    expect(near(pixelAt(decoded, 27, 4), [0, 0, 0], 16)).toBe(true);
    expect(decoded.data[(4 * 32 + 27) * 4 + 3]).toBe(255);
    expect(near(pixelAt(decoded, 4, 12), [0, 255, 0], 16)).toBe(true);
    expect(near(pixelAt(decoded, 27, 12), [0, 0, 255], 16)).toBe(true);
  });
});

describe("BMP 2-bit palettes (outside Microsoft's specification; Chromium shows them)", () => {
  // Four indices a byte, first pixel in the top bits; rows padded to 4 bytes.
  it("decodes 2-bit rows, bottom-up, with their padding", async () => {
    const file = bmp({
      width: 5,
      height: 2,
      bitsPerPixel: 2,
      palette,
      data: [0b00011011, 0b01000000, 0, 0, 0b11100100, 0b10000000, 0, 0],
    });
    expect(await pixels(file)).toEqual([
      [Y, B, G, R, B],
      [R, G, B, Y, G],
    ]);
  });

  it("converts a 2-bit file to WebP", async () => {
    // 8 × 8: left half index 1 (green), right half index 2 (blue).
    const row = [0b01010101, 0b10101010, 0, 0];
    const file = bmp({ width: 8, height: 8, bitsPerPixel: 2, palette, data: new Array(8).fill(row).flat() });
    const decoded = await decodeWebp((await convertToWebp(file, "bmp", { maxEdge: 64 })).bytes);
    expect([decoded.width, decoded.height]).toEqual([8, 8]);
    expect(near(pixelAt(decoded, 1, 4), [0, 255, 0], 24)).toBe(true);
    expect(near(pixelAt(decoded, 6, 4), [0, 0, 255], 24)).toBe(true);
  });

  it("paints indices past a palette shorter than 4 entries black", async () => {
    // Two entries: indices 2 and 3 are black, as in Chromium.
    const two = bmp({
      width: 4,
      height: 1,
      bitsPerPixel: 2,
      palette: palette.slice(0, 2),
      data: [0b00011011, 0, 0, 0],
    });
    expect(await pixels(two)).toEqual([[R, G, K, K]]);
    // The header claims 4 entries (colours used 0) but the pixels start after 3: the fourth is black. (Chromium
    // reads it from the first pixel bytes instead; a palette is never read past where the pixels start.)
    const short = bmp({
      width: 4,
      height: 1,
      bitsPerPixel: 2,
      palette: palette.slice(0, 3),
      colorsUsed: 0,
      data: [0b00011011, 0, 0, 0],
    });
    expect(await pixels(short)).toEqual([[R, G, B, K]]);
    // A header claiming more than 4 entries reads 4.
    const many = bmp({ width: 4, height: 1, bitsPerPixel: 2, palette, colorsUsed: 300, data: [0b00011011, 0, 0, 0] });
    expect(await pixels(many)).toEqual([[R, G, B, Y]]);
  });

  it("refuses truncated 2-bit rows as incomplete", async () => {
    // Three rows claimed: one whole row, then half of one.
    const cut = bmp({ width: 4, height: 3, bitsPerPixel: 2, palette, data: [0b00011011, 0, 0, 0, 0b11100100, 0] });
    await expect(pixels(cut)).rejects.toThrow(truncatedBmp());
    // A file that ends inside its palette.
    const header = bmp({ width: 4, height: 1, bitsPerPixel: 2, palette, data: [0b00011011, 0, 0, 0] });
    await expect(pixels(header.subarray(0, 14 + 40 + 6))).rejects.toThrow(UnconvertibleImageError);
  });

  it("answers a 2-bit header claiming 20000 × 5000 with one row as incomplete, in bounded time", async () => {
    const file = bmp({ width: 20000, height: 5000, bitsPerPixel: 2, palette, data: new Array(5000).fill(0x1b) });
    const started = performance.now();
    await expect(convertToWebp(file, "bmp", { maxEdge: 256 })).rejects.toThrow(truncatedBmp());
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it("refuses 2-bit run-length coding and 2-bit bit fields, as Chromium does", async () => {
    const rle = bmp({ width: 4, height: 1, bitsPerPixel: 2, compression: 1, palette, data: [4, 1, 0, 1] });
    await expect(pixels(rle)).rejects.toThrow(
      new UnconvertibleImageError("The BMP file cannot be read: its run-length coding does not fit 2 bits per pixel."),
    );
    const fields = bmp({
      width: 4,
      height: 1,
      bitsPerPixel: 2,
      compression: 3,
      data: [0, 0, 0, 0],
      masks: [2, 1, 0, 0],
    });
    await expect(pixels(fields)).rejects.toThrow(UnconvertibleImageError);
  });
});

const le32 = (v: number) => [v & 255, (v >>> 8) & 255, (v >>> 16) & 255, v >>> 24];

const le16 = (v: number) => [v & 255, v >>> 8];

const blueSquare = (alpha: number, compression = 3, infoSize: 40 | 124 = 124) =>
  bmp({
    width: 16,
    height: 16,
    bitsPerPixel: 32,
    compression,
    infoSize,
    data: Array.from({ length: 256 }, () => le32(((alpha << 24) | 0x0000ff) >>> 0)).flat(),
    masks: [0xff0000, 0xff00, 0xff, 0xff000000],
  });

describe("BMP bit fields (BI_BITFIELDS, V4/V5 masks): each channel reads its own mask's bits, scaled to 0–255", () => {
  it("reads 16-bit 5-6-5 masks, scaling each field to 0–255", async () => {
    const file = bmp({
      width: 2,
      height: 1,
      bitsPerPixel: 16,
      compression: 3,
      data: [...le16(0xf81f), ...le16(0x0410)],
      masks: [0xf800, 0x07e0, 0x001f, 0],
    });
    expect(await pixels(file)).toEqual([
      [
        [255, 0, 255, 255],
        [0, 130, 132, 255],
      ],
    ]);
  });

  it("reads masks wider than 8 bits by their top 8 bits, and a channel without a mask as 0 (V5 header)", async () => {
    const file = bmp({
      width: 1,
      height: 1,
      bitsPerPixel: 32,
      compression: 3,
      infoSize: 124,
      data: le32(0x0f800fff),
      masks: [0xfff00000, 0, 0x00000fff, 0],
    });
    expect(await pixels(file)).toEqual([[[15, 0, 255, 255]]]);
  });

  it("accepts overlapping masks, each channel reading its own bits", async () => {
    const file = bmp({
      width: 1,
      height: 1,
      bitsPerPixel: 32,
      compression: 3,
      data: le32(0xffff0000),
      masks: [0xff0000, 0xfff00, 0xff, 0],
    });
    expect(await pixels(file)).toEqual([[[255, 240, 0, 255]]]);
  });
});

describe("BMP bit fields: a mask with a gap or wider than the pixel is refused as lying", () => {
  it("refuses a mask with a gap in its bits, and a 16-bit file's mask with bits beyond 16 (lying masks)", async () => {
    const gap = bmp({
      width: 1,
      height: 1,
      bitsPerPixel: 32,
      compression: 3,
      data: le32(0),
      masks: [0xf0f000, 0xff00, 0xff, 0],
    });
    await expect(pixels(gap)).rejects.toThrow(
      new UnconvertibleImageError("The BMP file cannot be read: a colour mask has a gap in its bits."),
    );
    const wide = bmp({
      width: 1,
      height: 1,
      bitsPerPixel: 16,
      compression: 3,
      data: [0, 0, 0, 0],
      masks: [0xfff800, 0x07e0, 0x1f, 0],
    });
    await expect(pixels(wide)).rejects.toThrow(
      new UnconvertibleImageError("The BMP file cannot be read: a colour mask has more bits than a pixel."),
    );
  });
});

describe("BMP bit fields (BI_ALPHABITFIELDS, V4/V5): alpha is kept as browsers show it, all-zero alpha opaque", () => {
  it("keeps the alpha of a 16-bit BI_ALPHABITFIELDS file and of a 32-bit V4 file", async () => {
    const alpha16 = bmp({
      width: 2,
      height: 1,
      bitsPerPixel: 16,
      compression: 6,
      data: [...le16(0x7c1f), ...le16(0xfc1f)],
      masks: [0x7c00, 0x03e0, 0x001f, 0x8000],
    });
    expect(await pixels(alpha16)).toEqual([
      [
        [255, 0, 255, 0],
        [255, 0, 255, 255],
      ],
    ]);
    const v4 = bmp({
      width: 1,
      height: 1,
      bitsPerPixel: 32,
      compression: 3,
      infoSize: 108,
      data: le32(0x80ff0000),
      masks: [0xff0000, 0xff00, 0xff, 0xff000000],
    });
    expect(await pixels(v4)).toEqual([[[255, 0, 0, 128]]]);
  });

  it("shows a 32-bit BMP whose alpha is zero in every pixel opaque (V5 bit fields and BI_ALPHABITFIELDS)", async () => {
    for (const file of [blueSquare(0), blueSquare(0, 6, 40)]) {
      const decoded = await decodeWebp((await convertToWebp(file, "bmp", { maxEdge: 64 })).bytes);
      expect(decoded.data[(8 * 16 + 8) * 4 + 3]).toBe(255);
      expect(near(pixelAt(decoded, 8, 8), [0, 0, 255], 8)).toBe(true);
    }
  });

  it("keeps alpha zero transparent when another pixel's alpha is above zero", async () => {
    const file = blueSquare(0);
    file[file.length - 1] = 255; // the last stored pixel (top right) is opaque
    const decoded = await decodeWebp((await convertToWebp(file, "bmp", { maxEdge: 64 })).bytes);
    expect(decoded.data[(8 * 16 + 8) * 4 + 3]).toBe(0);
    expect(decoded.data[15 * 4 + 3]).toBe(255);
  });

  it("ignores the fourth byte of a plain (BI_RGB) 32-bit BMP, as browsers do", async () => {
    const file = bmp({ width: 1, height: 1, bitsPerPixel: 32, infoSize: 124, data: le32(0x80ff0000) });
    expect(await pixels(file)).toEqual([[[255, 0, 0, 255]]]);
  });
});
