import { describe, expect, it } from "vitest";
import { convertToWebp, ImageTooLargeError, UnconvertibleImageError } from "../src/convert";
import {
  bmpLyingHeader,
  chunked,
  corrupted,
  interlacedPng,
  jpegLyingSof,
  pngInflateBomb,
  pngLyingHeader,
  truncated,
  webpLyingVp8l,
} from "./hostile-images";
import { decodeWebp, encodeJpeg, photoLike, writePng, writeRgbaPng } from "./images";

/**
 * Issue 16's hostile corpus: every header that sizes memory is checked before anything is allocated,
 * decompression stops at what the header implies, and a truncated or corrupt file of any format is refused
 * as unconvertible. Inputs are streamed in small chunks, as R2 hands them over.
 */

describe("decompression is bounded by what the header implies", () => {
  it("converts a 1×1 PNG whose IDAT inflates to 512 MiB of zeros after reading only its first slices", async () => {
    const bomb = pngInflateBomb();
    const input = chunked(bomb);
    const out = await convertToWebp(input, "png", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([1, 1]);
    // The compressed stream is ~3.4 MB; inflation stops after the one row the header implies, so what is
    // read is the header and the decoder's first 64 KiB input buffer, give or take a stream chunk.
    expect(bomb.length).toBeGreaterThan(3_000_000);
    expect(input.delivered()).toBeLessThan(2 * 64 * 1024);
  });
});

describe("lying headers are refused from the header, before decoding", () => {
  it("refuses a PNG header claiming 100000 × 100000 pixels as too large", async () => {
    await expect(convertToWebp(chunked(pngLyingHeader(100_000, 100_000)), "png", { maxEdge: 2560 })).rejects.toThrow(
      ImageTooLargeError,
    );
  });

  it("refuses a PNG header claiming 4000 × 3000 with one row of data as unconvertible", async () => {
    await expect(convertToWebp(chunked(pngLyingHeader(4000, 3000)), "png", { maxEdge: 2560 })).rejects.toThrow(
      UnconvertibleImageError,
    );
  });

  it("refuses a JPEG frame header claiming 65000 × 65000 pixels as too large", async () => {
    await expect(convertToWebp(chunked(jpegLyingSof(65_000, 65_000)), "jpeg", { maxEdge: 2560 })).rejects.toThrow(
      ImageTooLargeError,
    );
  });

  it("refuses a JPEG frame header claiming 4000 × 3000 with no image data as unconvertible", async () => {
    await expect(convertToWebp(chunked(jpegLyingSof(4000, 3000)), "jpeg", { maxEdge: 2560 })).rejects.toThrow(
      UnconvertibleImageError,
    );
  });

  it("refuses a lossless WebP header claiming 16384 × 16384 in a 36-byte file", async () => {
    await expect(convertToWebp(chunked(webpLyingVp8l(16_384, 16_384)), "webp", { maxEdge: 2560 })).rejects.toThrow(
      /too large|cannot be/,
    );
  });

  it("refuses a BMP header claiming 30000 × 30000 pixels as too large, and 8000 × 6000 with one row as incomplete", async () => {
    await expect(convertToWebp(chunked(bmpLyingHeader(30_000, 30_000)), "bmp", { maxEdge: 2560 })).rejects.toThrow(
      ImageTooLargeError,
    );
    const lying = chunked(bmpLyingHeader(8000, 6000));
    await expect(convertToWebp(lying, "bmp", { maxEdge: 2560 })).rejects.toThrow(/incomplete/);
  });
});

describe("truncated and corrupt files of every format are refused as unconvertible", () => {
  const samples: [string, "jpeg" | "png" | "webp" | "bmp", () => Promise<Uint8Array>][] = [
    ["baseline JPEG", "jpeg", () => encodeJpeg(photoLike(320, 240), 320, 240, { progressive: false })],
    ["progressive JPEG", "jpeg", () => encodeJpeg(photoLike(320, 240), 320, 240, { progressive: true })],
    ["PNG", "png", () => writeRgbaPng(photoLike(320, 240), 320, 240)],
    ["WebP", "webp", async () => (await convertToWebp(await photoLike4Png(), "png", { maxEdge: 320 })).bytes],
    ["BMP", "bmp", async () => bmpLyingHeader(320, 240, 240)],
  ];
  for (const [name, kind, make] of samples) {
    it(`refuses a truncated ${name}`, async () => {
      await expect(convertToWebp(chunked(truncated(await make())), kind, { maxEdge: 200 })).rejects.toThrow(
        UnconvertibleImageError,
      );
    });
    if (kind !== "bmp") {
      // Every byte pattern is a valid BMP pixel, so only its length can be wrong.
      it(`refuses a corrupt ${name}`, async () => {
        const bytes = await make();
        // Lossy VP8 data has no invalid codes (garbage decodes as some picture); its frame header does.
        const damaged = kind === "webp" ? corrupted(bytes, 20 / bytes.length, 12) : corrupted(bytes);
        await expect(convertToWebp(chunked(damaged), kind, { maxEdge: 200 })).rejects.toThrow(UnconvertibleImageError);
      });
    }
  }
});

let photoPng: Uint8Array | undefined;
function photoLike4Png(): Promise<Uint8Array> {
  return photoPng ? Promise.resolve(photoPng) : writeRgbaPng(photoLike(320, 240), 320, 240).then((p) => (photoPng = p));
}
describe("admitted at full size", () => {
  it("converts a 12 MP interlaced PNG (4000 × 3000 Adam7) to 2560 × 1920", async () => {
    const png = await interlacedPng(4000, 3000, (x, y, out) => out.set([x & 255, y & 255, (x ^ y) & 255]));
    const out = await convertToWebp(chunked(png, 65_536), "png", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1920]);
  }, 60_000);

  it("keeps real transparency at the full 2560-pixel long edge", async () => {
    const png = await writePng({
      width: 3000,
      height: 2000,
      colorType: 6,
      bitDepth: 8,
      filter: 0,
      samples: (x, y) => [x & 255, y & 255, 128, Math.hypot(x - 1500, y - 1000) < 900 ? 255 : 0],
    });
    const out = await convertToWebp(chunked(png, 65_536), "png", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1707]); // 3000 × 2000 at exactly 2560 on the long edge
    const decoded = await decodeWebp(out.bytes);
    expect(decoded.data[3]).toBe(0); // the corner is transparent
    expect(decoded.data[(853 * 2560 + 1280) * 4 + 3]).toBe(255); // the centre is opaque
  }, 60_000);
});
