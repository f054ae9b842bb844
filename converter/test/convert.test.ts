import { GifWriter } from "omggif";
import { describe, expect, it } from "vitest";
import { codecMemory, convertToWebp, gifFrameCount, ImageTooLargeError, UnconvertibleImageError } from "../src/convert";
import { codecShareBytes, largeJpegCodecBytes, largeJpegScratchBytes, scratchShareBytes } from "../src/convert/budget";
import { chunked } from "./hostile-images";
import {
  concat,
  decodeWebp,
  encodeJpeg,
  near,
  paint,
  photoLike,
  pixelAt,
  pngChunk,
  quadrantColours,
  quadrants,
  withExifOrientation,
  writePng,
  writeRgbaPng,
} from "./images";

const riff = (bytes: Uint8Array) =>
  new TextDecoder().decode(bytes.subarray(0, 4)) + new TextDecoder().decode(bytes.subarray(8, 12));

function meanDifference(a: Uint8ClampedArray, b: Uint8ClampedArray): number {
  let total = 0;
  for (let i = 0; i < a.length; i += 1) if (i % 4 !== 3) total += Math.abs((a[i] as number) - (b[i] as number));
  return total / ((a.length / 4) * 3);
}

describe("JPEG to WebP", () => {
  it("scales a baseline JPEG down to maxEdge on the long edge, keeping the aspect ratio, into a real WebP", async () => {
    const jpeg = await encodeJpeg(photoLike(1200, 800), 1200, 800, { progressive: false });
    const out = await convertToWebp(jpeg, "jpeg", { maxEdge: 600 });
    expect([out.width, out.height]).toEqual([600, 400]);
    expect(riff(out.bytes)).toBe("RIFFWEBP");
    const decoded = await decodeWebp(out.bytes);
    expect([decoded.width, decoded.height]).toEqual([600, 400]);
  });

  it("decodes a progressive JPEG (successive approximation scans) to the same picture as the baseline one", async () => {
    const pixels = photoLike(1000, 700);
    const baseline = await convertToWebp(await encodeJpeg(pixels, 1000, 700, { progressive: false }), "jpeg", {
      maxEdge: 500,
    });
    const progressive = await convertToWebp(await encodeJpeg(pixels, 1000, 700, { progressive: true }), "jpeg", {
      maxEdge: 500,
    });
    expect([progressive.width, progressive.height]).toEqual([500, 350]);
    const a = await decodeWebp(baseline.bytes);
    const b = await decodeWebp(progressive.bytes);
    expect(meanDifference(a.data, b.data)).toBeLessThan(4);
  });

  it.each([
    ["grayscale", { grayscale: true }],
    ["4:4:4 colour", { chromaSubsample: 1 }],
  ])("decodes a progressive %s JPEG at full size like the baseline one", async (_name, extra) => {
    const pixels = photoLike(333, 251);
    const baseline = await convertToWebp(await encodeJpeg(pixels, 333, 251, { progressive: false, ...extra }), "jpeg", {
      maxEdge: 400,
    });
    const progressive = await convertToWebp(
      await encodeJpeg(pixels, 333, 251, { progressive: true, ...extra }),
      "jpeg",
      { maxEdge: 400 },
    );
    expect([progressive.width, progressive.height]).toEqual([333, 251]);
    expect(
      meanDifference((await decodeWebp(baseline.bytes)).data, (await decodeWebp(progressive.bytes)).data),
    ).toBeLessThan(4);
  });

  it("never upscales: a small image keeps its size", async () => {
    const out = await convertToWebp(await encodeJpeg(photoLike(300, 200), 300, 200, { progressive: false }), "jpeg", {
      maxEdge: 2560,
    });
    expect([out.width, out.height]).toEqual([300, 200]);
  });

  it("refuses a truncated JPEG whose header is intact, with UnconvertibleImageError", async () => {
    const jpeg = await encodeJpeg(photoLike(400, 300), 400, 300, { progressive: false });
    await expect(
      convertToWebp(jpeg.subarray(0, Math.floor(jpeg.length * 0.6)), "jpeg", { maxEdge: 200 }),
    ).rejects.toThrow(UnconvertibleImageError);
    const progressive = await encodeJpeg(photoLike(400, 300), 400, 300, { progressive: true });
    await expect(
      convertToWebp(progressive.subarray(0, Math.floor(progressive.length * 0.6)), "jpeg", { maxEdge: 200 }),
    ).rejects.toThrow(/incomplete/);
  });

  it("refuses JPEG image data that is garbage between a valid header and the end marker", async () => {
    for (const progressive of [false, true]) {
      const jpeg = await encodeJpeg(photoLike(256, 256), 256, 256, { progressive });
      const damaged = jpeg.slice();
      // Overwrite the middle of the last scan with bytes that are not valid Huffman codes.
      for (let i = Math.floor(jpeg.length * 0.5); i < jpeg.length - 200; i += 1) damaged[i] = i % 7 === 0 ? 0xff : 0xfe;
      const attempt = convertToWebp(damaged, "jpeg", { maxEdge: 128 });
      await expect(attempt).rejects.toThrow(UnconvertibleImageError);
    }
    // The pipeline still works after a damaged file.
    const ok = await convertToWebp(await encodeJpeg(photoLike(64, 64), 64, 64, { progressive: false }), "jpeg", {
      maxEdge: 64,
    });
    expect(ok.width).toBe(64);
  });

  it("refuses a JPEG whose header claims more pixels than the limit, before decoding, naming the limit", async () => {
    // A real header with the frame size patched to 20000 × 12000, followed by the original (too small) data.
    const jpeg = await encodeJpeg(photoLike(64, 64), 64, 64, { progressive: false });
    const sof = jpeg.findIndex((b, i) => b === 0xff && jpeg[i + 1] === 0xc0);
    const patched = jpeg.slice();
    patched.set([12000 >> 8, 12000 & 255, 20000 >> 8, 20000 & 255], sof + 5);
    await expect(convertToWebp(patched, "jpeg", { maxEdge: 2560 })).rejects.toThrow(
      "The image is too large to convert: 20000 × 12000 pixels exceeds the limit of 100 megapixels",
    );
    await expect(convertToWebp(patched, "jpeg", { maxEdge: 2560 })).rejects.toThrow(ImageTooLargeError);
  });
});

describe("EXIF orientation", () => {
  // Source pixel that lands at output (x, y) for each orientation, in a W × H source.
  const sourceOf: Record<number, (x: number, y: number, w: number, h: number) => [number, number]> = {
    1: (x, y) => [x, y],
    2: (x, y, w) => [w - 1 - x, y],
    3: (x, y, w, h) => [w - 1 - x, h - 1 - y],
    4: (x, y, _w, h) => [x, h - 1 - y],
    5: (x, y) => [y, x],
    6: (x, y, _w, h) => [y, h - 1 - x],
    7: (x, y, w, h) => [w - 1 - y, h - 1 - x],
    8: (x, y, w) => [w - 1 - y, x],
  };
  const colourAt = (x: number, y: number, w: number, h: number) => {
    const top = y < h / 2;
    const left = x < w / 2;
    return top
      ? left
        ? quadrantColours.topLeft
        : quadrantColours.topRight
      : left
        ? quadrantColours.bottomLeft
        : quadrantColours.bottomRight;
  };

  it.each([1, 2, 3, 4, 5, 6, 7, 8])(
    "orientation %i turns and mirrors the picture upright (corners checked)",
    async (orientation) => {
      const w = 64;
      const h = 32;
      const jpeg = withExifOrientation(
        await encodeJpeg(quadrants(w, h), w, h, { progressive: false, quality: 95 }),
        orientation,
      );
      const out = await convertToWebp(jpeg, "jpeg", { maxEdge: 64 });
      const [ow, oh] = orientation >= 5 ? [h, w] : [w, h];
      expect([out.width, out.height]).toEqual([ow, oh]);
      const decoded = await decodeWebp(out.bytes);
      for (const [x, y] of [
        [2, 2],
        [ow - 3, 2],
        [2, oh - 3],
        [ow - 3, oh - 3],
      ] as [number, number][]) {
        const [sx, sy] = (sourceOf[orientation] as (typeof sourceOf)[1])(x, y, w, h);
        expect(near(pixelAt(decoded, x, y), colourAt(sx, sy, w, h)), `orientation ${orientation} at ${x},${y}`).toBe(
          true,
        );
      }
    },
  );

  it("applies a big-endian EXIF orientation of a progressive JPEG while downscaling", async () => {
    const jpeg = withExifOrientation(
      await encodeJpeg(quadrants(400, 200), 400, 200, { progressive: true, quality: 95 }),
      6,
      true,
    );
    const out = await convertToWebp(jpeg, "jpeg", { maxEdge: 100 });
    expect([out.width, out.height]).toEqual([50, 100]);
    const decoded = await decodeWebp(out.bytes);
    expect(near(pixelAt(decoded, 2, 2), quadrantColours.bottomLeft)).toBe(true);
    expect(near(pixelAt(decoded, 47, 2), quadrantColours.topLeft)).toBe(true);
  });

  it("applies the orientation of a PNG eXIf chunk", async () => {
    const tiff = withExifOrientation(new Uint8Array([0xff, 0xd8]), 8).subarray(12, 12 + 26);
    const png = await writePng({
      width: 40,
      height: 20,
      colorType: 2,
      bitDepth: 8,
      samples: (x, y) => [
        ...(y < 10
          ? x < 20
            ? quadrantColours.topLeft
            : quadrantColours.topRight
          : x < 20
            ? quadrantColours.bottomLeft
            : quadrantColours.bottomRight),
      ],
      extraChunks: [pngChunk("eXIf", tiff)],
    });
    const out = await convertToWebp(png, "png", { maxEdge: 100 });
    expect([out.width, out.height]).toEqual([20, 40]);
    expect(near(pixelAt(await decodeWebp(out.bytes), 1, 1), quadrantColours.topRight)).toBe(true);
  });
});

describe("PNG to WebP", () => {
  const cases = [
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

  it.each(cases)("decodes $name with every filter type", async (c) => {
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

describe("GIF, BMP and WebP input", () => {
  it("converts a single-frame GIF, keeping its transparent colour transparent", async () => {
    const buffer = new Uint8Array(4096);
    const writer = new GifWriter(buffer, 32, 16, { palette: [0xff0000, 0x00ff00] });
    writer.addFrame(
      0,
      0,
      32,
      16,
      Array.from({ length: 32 * 16 }, (_, i) => (i % 32 < 16 ? 0 : 1)),
      { transparent: 1 },
    );
    const gif = buffer.slice(0, writer.end());
    expect(await gifFrameCount(gif)).toBe(1);
    const decoded = await decodeWebp((await convertToWebp(gif, "gif", { maxEdge: 64 })).bytes);
    expect(near(pixelAt(decoded, 2, 2), [255, 0, 0], 12)).toBe(true);
    expect(decoded.data[(2 * 32 + 30) * 4 + 3]).toBe(0);
  });

  it("reports a two-frame GIF as animated and refuses to convert it", async () => {
    const buffer = new Uint8Array(4096);
    const writer = new GifWriter(buffer, 8, 8, { palette: [0, 0xffffff] });
    writer.addFrame(0, 0, 8, 8, new Array(64).fill(0));
    writer.addFrame(0, 0, 8, 8, new Array(64).fill(1));
    const gif = buffer.slice(0, writer.end());
    expect(await gifFrameCount(gif)).toBe(2);
    await expect(convertToWebp(gif, "gif", { maxEdge: 8 })).rejects.toThrow(UnconvertibleImageError);
  });

  it("converts bottom-up 24-bit and top-down 8-bit palette BMPs upright", async () => {
    const bmp = (bits: 24 | 8, topDown: boolean) => {
      const w = 10;
      const h = 6;
      const stride = Math.ceil((w * bits) / 32) * 4;
      const paletteBytes = bits === 8 ? 256 * 4 : 0;
      const offset = 14 + 40 + paletteBytes;
      const out = new Uint8Array(offset + stride * h);
      const view = new DataView(out.buffer);
      out.set([0x42, 0x4d]);
      view.setUint32(2, out.length, true);
      view.setUint32(10, offset, true);
      view.setUint32(14, 40, true);
      view.setInt32(18, w, true);
      view.setInt32(22, topDown ? -h : h, true);
      view.setUint16(26, 1, true);
      view.setUint16(28, bits, true);
      if (bits === 8) {
        out.set([0, 0, 255, 0], 54); // index 0: red (stored BGR)
        out.set([255, 0, 0, 0], 58); // index 1: blue
      }
      for (let y = 0; y < h; y += 1) {
        const stored = topDown ? y : h - 1 - y;
        for (let x = 0; x < w; x += 1) {
          const top = y < h / 2;
          const at = offset + stored * stride + x * (bits / 8);
          if (bits === 24) out.set(top ? [0, 0, 255] : [255, 0, 0], at);
          else out[at] = top ? 0 : 1;
        }
      }
      return out;
    };
    for (const [bits, topDown] of [
      [24, false],
      [8, true],
    ] as const) {
      const decoded = await decodeWebp((await convertToWebp(bmp(bits, topDown), "bmp", { maxEdge: 10 })).bytes);
      expect(near(pixelAt(decoded, 1, 0), [255, 0, 0], 12), `${bits}-bit top row`).toBe(true);
      expect(near(pixelAt(decoded, 1, 5), [0, 0, 255], 12), `${bits}-bit bottom row`).toBe(true);
    }
  });

  it("converts a static WebP straight to the target size, and refuses one whose header lies about its size", async () => {
    const png = await writeRgbaPng(photoLike(800, 600), 800, 600);
    const webp = (await convertToWebp(png, "png", { maxEdge: 800 })).bytes;
    const again = await convertToWebp(webp, "webp", { maxEdge: 400 });
    expect([again.width, again.height]).toEqual([400, 300]);
    const big = webp.slice();
    // A VP8 header claiming 4000 × 3000: refused from the header alone.
    const vp8 = big.findIndex((b, i) => b === 0x9d && big[i + 1] === 0x01 && big[i + 2] === 0x2a);
    new DataView(big.buffer).setUint16(vp8 + 3, 4000, true);
    new DataView(big.buffer).setUint16(vp8 + 5, 3000, true);
    await expect(convertToWebp(big, "webp", { maxEdge: 400 })).rejects.toThrow(UnconvertibleImageError);
  });
});

/** `jpeg` with `padding` bytes of APP15 segments after its SOI: a larger file with the same image. */
function padJpeg(jpeg: Uint8Array, padding: number): Uint8Array {
  const segments: Uint8Array[] = [jpeg.subarray(0, 2)];
  for (let left = padding; left > 0; left -= 65_533) {
    const body = Math.min(left, 65_533);
    segments.push(Uint8Array.of(0xff, 0xef, (body + 2) >> 8, (body + 2) & 255), new Uint8Array(body));
  }
  return concat([...segments, jpeg.subarray(2)]);
}

describe("admission and memory", () => {
  it("runs concurrent calls one at a time and all of them succeed", async () => {
    const jpeg = await encodeJpeg(photoLike(500, 500), 500, 500, { progressive: true });
    const results = await Promise.all([1, 2, 3].map(() => convertToWebp(jpeg, "jpeg", { maxEdge: 250 })));
    expect(results.map((r) => r.width)).toEqual([250, 250, 250]);
  });

  it("converts a 12 MP baseline and a 12 MP progressive JPEG to 2560 px on the long edge within the memory shares", {
    timeout: 120_000,
  }, async () => {
    const pixels = photoLike(4000, 3000);
    for (const progressive of [false, true]) {
      const jpeg = await encodeJpeg(pixels, 4000, 3000, { progressive, quality: 90 });
      const out = await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
      expect([out.width, out.height]).toEqual([2560, 1920]);
      const memory = codecMemory();
      expect(memory.scratch).toBeLessThanOrEqual(scratchShareBytes);
      expect(memory.codec).toBeLessThanOrEqual(codecShareBytes);
    }
  });

  it("converts 24 MP JPEGs (baseline 4:2:0 and 4:4:4, progressive 4:2:0) to 2560 px within the memory shares", {
    timeout: 180_000,
  }, async () => {
    const pixels = photoLike(6000, 4000);
    for (const [progressive, chromaSubsample] of [
      [false, 2],
      [false, 1],
      [true, 2],
    ] as const) {
      const jpeg = await encodeJpeg(pixels, 6000, 4000, { progressive, quality: 90, chromaSubsample });
      const out = await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
      expect([out.width, out.height], `progressive ${progressive}, subsampling ${chromaSubsample}`).toEqual([
        2560, 1707,
      ]);
      const memory = codecMemory();
      expect(memory.scratch).toBeLessThanOrEqual(scratchShareBytes);
      expect(memory.codec).toBeLessThanOrEqual(codecShareBytes);
    }
  });

  it("converts 12 MP and 24 MP progressive 4:4:4 JPEGs (chroma decoded at N/2) to 2560 px within the memory shares", {
    timeout: 240_000,
  }, async () => {
    for (const [width, height, target] of [
      [4000, 3000, [2560, 1920]],
      [6000, 4000, [2560, 1707]],
    ] as const) {
      const jpeg = await encodeJpeg(photoLike(width, height), width, height, {
        progressive: true,
        quality: 90,
        chromaSubsample: 1,
      });
      const out = await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
      expect([out.width, out.height], `${width} × ${height}`).toEqual([...target]);
      const memory = codecMemory();
      expect(memory.scratch).toBeLessThanOrEqual(scratchShareBytes);
      expect(memory.codec).toBeLessThanOrEqual(codecShareBytes);
    }
  });

  it("decodes a baseline JPEG inside the codec, without a scratch; one whose file does not fit beside its target in the codec's share converts within largeJpegCodecBytes, the scratch let go", {
    timeout: 120_000,
  }, async () => {
    // A 12 MP baseline JPEG behind 30 MB of APP15 segments: 33 MB of file beside a 19.7 MB target.
    const jpeg = await encodeJpeg(photoLike(4000, 3000), 4000, 3000, { progressive: false, quality: 90 });
    const progressive = await encodeJpeg(photoLike(64, 64), 64, 64, { progressive: true });
    await convertToWebp(progressive, "jpeg", { maxEdge: 64 });
    expect(codecMemory().scratch).toBeGreaterThan(0);
    const plain = await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
    expect(codecMemory().lastConversionCodec).toBeLessThanOrEqual(codecShareBytes);
    const large = padJpeg(jpeg, 30_000_000);
    expect(large.length + 2560 * 1920 * 4).toBeGreaterThan(codecShareBytes);
    const out = await convertToWebp(chunked(large, 65_536), "jpeg", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1920]);
    expect(out.bytes).toEqual(plain.bytes);
    const grown = codecMemory();
    expect(grown.scratch).toBe(0); // never held beside a codec past its share
    expect(grown.lastConversionCodec).toBeGreaterThan(codecShareBytes);
    expect(grown.lastConversionCodec).toBeLessThanOrEqual(2 * 1_048_576 + largeJpegCodecBytes);
    // Past the allowance: refused from the frame header and the file's size, before the file is read whole.
    await expect(convertToWebp(padJpeg(jpeg, 60_000_000), "jpeg", { maxEdge: 2560 })).rejects.toThrow(
      /the 6[0-9.]+ MB file does not fit beside its 2560 × 1920 result in the 81\.0 MB a baseline JPEG may use/,
    );
    // The next JPEG starts from fresh instances, its codec back within its share.
    await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
    expect(codecMemory().codec).toBeLessThanOrEqual(codecShareBytes);
  });

  it("converts a progressive JPEG whose file and coefficients exceed the scratch by growing it in place within largeJpegScratchBytes; the next PNG lets go of it", {
    timeout: 120_000,
  }, async () => {
    // A 12 MP progressive JPEG (21.6 MB of coefficients at 4:2:0) behind 15 MB of APP15 segments: a 40 MB plan.
    const jpeg = await encodeJpeg(photoLike(4000, 3000), 4000, 3000, { progressive: true, quality: 90 });
    const plain = await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
    const before = codecMemory().scratch;
    expect(before).toBeLessThanOrEqual(scratchShareBytes);
    const large = padJpeg(jpeg, 15_000_000);
    const out = await convertToWebp(large, "jpeg", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1920]);
    expect(out.bytes).toEqual(plain.bytes); // the file kept its bytes while the block grew under it
    const grown = codecMemory();
    expect(grown.scratch).toBeGreaterThan(before);
    expect(grown.scratch).toBeLessThanOrEqual(largeJpegScratchBytes);
    // Past the allowance: refused, naming the limit, and the scratch stays as it was.
    await expect(convertToWebp(padJpeg(jpeg, 30_000_000), "jpeg", { maxEdge: 2560 })).rejects.toThrow(
      /4000 × 3000 pixels exceeds the limit of [0-9.]+ megapixels for a progressive JPEG of this file size/,
    );
    expect(codecMemory().scratch).toBe(grown.scratch);
    // A conversion of another kind lets go of the grown scratch; the next JPEG has one of its share again.
    await convertToWebp(await writeRgbaPng(photoLike(64, 64), 64, 64), "png", { maxEdge: 64 });
    expect(codecMemory().scratch).toBe(0);
    await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
    expect(codecMemory().scratch).toBeLessThanOrEqual(scratchShareBytes);
  });

  it("converts a 12 MP PNG to 2560 px on the long edge within the memory shares", { timeout: 120_000 }, async () => {
    const png = await writeRgbaPng(photoLike(4000, 3000), 4000, 3000);
    const out = await convertToWebp(png, "png", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1920]);
    const memory = codecMemory();
    expect(memory.scratch).toBeLessThanOrEqual(scratchShareBytes);
    expect(memory.codec).toBeLessThanOrEqual(codecShareBytes);
  });
});
