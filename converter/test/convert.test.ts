import { describe, expect, it } from "vitest";
import { convertToWebp, ImageTooLargeError, UnconvertibleImageError } from "../src/convert";
import {
  decodeWebp,
  encodeJpeg,
  meanDifference,
  near,
  photoLike,
  pixelAt,
  pngChunk,
  quadrantColours,
  quadrants,
  withExifOrientation,
  writePng,
} from "./images";

/** Conversion of JPEG input and the EXIF orientation of any input (PNG, GIF, BMP, WebP and memory: convert-*.test.ts). */

const riff = (bytes: Uint8Array) =>
  new TextDecoder().decode(bytes.subarray(0, 4)) + new TextDecoder().decode(bytes.subarray(8, 12));

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

describe("EXIF orientation", () => {
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
