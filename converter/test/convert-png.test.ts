import { describe, expect, it } from "vitest";
import { codecMemory, convertToWebp, UnconvertibleImageError } from "../src/convert";
import { codecShareBytes } from "../src/convert/budget";
import {
  concat,
  decodeWebp,
  meanDifference,
  near,
  paint,
  photoLike,
  pixelAt,
  pngChunk,
  writePng,
  writeRgbaPng,
} from "./images";

/** Conversion of PNG input: every colour type and bit depth, transparency, interlacing, damage and size. */

/** One PNG of each colour type and bit depth, with the colour its samples decode to at `at`. */
const pngCases = [
  {
    name: "gray 1-bit",
    colorType: 0,
    bitDepth: 1,
    samples: (x: number) => [x % 2],
    expect: [255, 255, 255],
    at: [1, 0],
  },
  { name: "gray 2-bit", colorType: 0, bitDepth: 2, samples: () => [2], expect: [170, 170, 170], at: [0, 0] },
  { name: "gray 4-bit", colorType: 0, bitDepth: 4, samples: () => [5], expect: [85, 85, 85], at: [0, 0] },
  { name: "gray 8-bit", colorType: 0, bitDepth: 8, samples: () => [200], expect: [200, 200, 200], at: [0, 0] },
  { name: "gray 16-bit", colorType: 0, bitDepth: 16, samples: () => [0x8000], expect: [128, 128, 128], at: [0, 0] },
  { name: "RGB 8-bit", colorType: 2, bitDepth: 8, samples: () => [250, 120, 10], expect: [250, 120, 10], at: [0, 0] },
  {
    name: "RGB 16-bit",
    colorType: 2,
    bitDepth: 16,
    samples: () => [0xffff, 0x0100, 0x8000],
    expect: [255, 1, 128],
    at: [0, 0],
  },
  { name: "gray+alpha 8-bit", colorType: 4, bitDepth: 8, samples: () => [90, 255], expect: [90, 90, 90], at: [0, 0] },
  {
    name: "gray+alpha 16-bit",
    colorType: 4,
    bitDepth: 16,
    samples: () => [0x5a00, 0xffff],
    expect: [90, 90, 90],
    at: [0, 0],
  },
  {
    name: "RGBA 8-bit",
    colorType: 6,
    bitDepth: 8,
    samples: () => [10, 200, 90, 255],
    expect: [10, 200, 90],
    at: [0, 0],
  },
  {
    name: "RGBA 16-bit",
    colorType: 6,
    bitDepth: 16,
    samples: () => [0x0a00, 0xc800, 0x5a00, 0xffff],
    expect: [10, 200, 90],
    at: [0, 0],
  },
  { name: "palette 8-bit", colorType: 3, bitDepth: 8, samples: () => [1], expect: [0, 128, 255], at: [0, 0] },
  { name: "palette 4-bit", colorType: 3, bitDepth: 4, samples: () => [1], expect: [0, 128, 255], at: [0, 0] },
  { name: "palette 2-bit", colorType: 3, bitDepth: 2, samples: () => [1], expect: [0, 128, 255], at: [0, 0] },
  { name: "palette 1-bit", colorType: 3, bitDepth: 1, samples: () => [1], expect: [0, 128, 255], at: [0, 0] },
] as const;

describe("PNG to WebP: every colour type and bit depth, transparency and interlacing decode", () => {
  it.each(pngCases)("decodes $name with every filter type", async (c) => {
    const png = await writePng({
      width: 37,
      height: 23,
      colorType: c.colorType,
      bitDepth: c.bitDepth,
      samples: c.samples as (x: number, y: number) => number[],
      palette:
        c.colorType === 3
          ? [
              [255, 0, 0],
              [0, 128, 255],
            ]
          : undefined,
    });
    const out = await convertToWebp(png, "png", { maxEdge: 100 });
    expect([out.width, out.height]).toEqual([37, 23]);
    const decoded = await decodeWebp(out.bytes);
    expect(near(pixelAt(decoded, c.at[0], c.at[1]), c.expect, 12), `${pixelAt(decoded, c.at[0], c.at[1])}`).toBe(true);
  });

  it("keeps palette transparency from tRNS as transparent pixels", async () => {
    const png = await writePng({
      width: 40,
      height: 40,
      colorType: 3,
      bitDepth: 8,
      samples: (x) => [x < 20 ? 0 : 1],
      palette: [
        [255, 0, 0],
        [0, 0, 255],
      ],
      transparency: [0],
    });
    const decoded = await decodeWebp((await convertToWebp(png, "png", { maxEdge: 40 })).bytes);
    expect(decoded.data[(5 * 40 + 5) * 4 + 3]).toBe(0);
    expect(decoded.data[(5 * 40 + 35) * 4 + 3]).toBe(255);
    expect(near(pixelAt(decoded, 35, 5), [0, 0, 255], 12)).toBe(true);
  });

  it("converts an Adam7-interlaced PNG to the same picture as a non-interlaced one", async () => {
    const options = {
      width: 61,
      height: 45,
      colorType: 2 as const,
      bitDepth: 8 as const,
      samples: (x: number, y: number) => [x * 4, y * 5, (x * y) & 255],
    };
    const plain = await decodeWebp((await convertToWebp(await writePng(options), "png", { maxEdge: 30 })).bytes);
    const interlaced = await decodeWebp(
      (await convertToWebp(await writePng({ ...options, interlaced: true }), "png", { maxEdge: 30 })).bytes,
    );
    expect([interlaced.width, interlaced.height]).toEqual([30, 22]);
    expect(meanDifference(plain.data, interlaced.data)).toBeLessThan(1);
  });
});

describe("PNG to WebP: damaged or oversized files are refused before decoding; transparency keeps full size", () => {
  it("refuses a PNG whose compressed data is damaged, with UnconvertibleImageError", async () => {
    const png = await writeRgbaPng(photoLike(120, 80), 120, 80);
    const damaged = png.slice();
    const idat = png.findIndex(
      (b, i) => b === 0x49 && png[i + 1] === 0x44 && png[i + 2] === 0x41 && png[i + 3] === 0x54,
    );
    for (let i = idat + 40; i < idat + 400; i += 1) damaged[i] = 0xff - (damaged[i] as number);
    await expect(convertToWebp(damaged, "png", { maxEdge: 60 })).rejects.toThrow(UnconvertibleImageError);
    await expect(convertToWebp(png.subarray(0, png.length - 100), "png", { maxEdge: 60 })).rejects.toThrow(
      /incomplete/,
    );
  });

  it("refuses a PNG whose header claims more pixels than the limit, before decoding, naming the limit", async () => {
    const png = await writePng({ width: 2, height: 2, colorType: 0, bitDepth: 8, samples: () => [0] });
    // A new IHDR with its CRC (a wrong one is refused first): 8-byte signature, then the 25-byte chunk.
    const header = png.slice(16, 29);
    new DataView(header.buffer).setUint32(0, 12000);
    new DataView(header.buffer).setUint32(4, 9000);
    const patched = concat([png.subarray(0, 8), pngChunk("IHDR", header), png.subarray(33)]);
    await expect(convertToWebp(patched, "png", { maxEdge: 2560 })).rejects.toThrow(
      "The image is too large to convert: 12000 × 9000 pixels exceeds the limit of 100 megapixels",
    );
  });

  it("keeps an image with real transparency at its full size (no lower cap for alpha), within the codec's share", async () => {
    const png = await writeRgbaPng(
      paint(2000, 1500, (x, y) => [x & 255, y & 255, 99, x < 1000 ? 255 : 0]),
      2000,
      1500,
    );
    const out = await convertToWebp(png, "png", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2000, 1500]);
    const decoded = await decodeWebp(out.bytes);
    expect(decoded.data[(10 * 2000 + 10) * 4 + 3]).toBe(255);
    expect(decoded.data[(10 * 2000 + 1990) * 4 + 3]).toBe(0);
    expect(codecMemory().codec).toBeLessThanOrEqual(codecShareBytes);
  });
});
