import { describe, expect, it } from "vitest";
import { grid, gridDifference } from "../../scripts/lib/corpus-grid.mjs";
import { codecMemory, convertToWebp, ImageTooLargeError } from "../src/convert";
import { codecShareBytes, largeWebpCodecBytes, scratchShareBytes } from "../src/convert/budget";
import { chunked, webpLyingVp8l } from "./hostile-images";
import { decodeWebp, encodeJpeg, encodeWebp, near, photoLike, pixelAt } from "./images";

/** Encodes RGBA as a lossless WebP with libwebp (@jsquash/webp's build), fastest method. */
function encodeLossless(rgba: Uint8Array, width: number, height: number): Promise<Uint8Array> {
  return encodeWebp(rgba, width, height, { lossless: 1, method: 0, quality: 0 });
}

/** Screenshot-like content: flat panels, bands and dark "text" strokes. */
function screenshotLike(width: number, height: number): Uint8Array {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const i = (y * width + x) * 4;
      const text = (x * 7 + y * 13) % 11 < 3 && y % 24 > 6 && x % 300 < 240 && y > 80;
      const band = Math.floor(y / 24) % 7;
      data.set(text ? [30, 30, 40, 255] : y < 80 ? [40, 90, 200, 255] : [240 - band * 10, 240, 250, 255], i);
    }
  }
  return data;
}

describe("lossless WebP input at every size the limits admit", () => {
  it("converts a 3840 × 2160 lossless screenshot to 2560 × 1440, the scratch let go first and the grown codec by the next JPEG", {
    timeout: 120_000,
  }, async () => {
    // A progressive JPEG: the decoder that uses the scratch (a baseline one decodes inside the codec).
    const jpeg = await encodeJpeg(photoLike(64, 64), 64, 64, { progressive: true });
    await convertToWebp(jpeg, "jpeg", { maxEdge: 64 });
    expect(codecMemory().scratch).toBeGreaterThan(0);
    const webp = await encodeLossless(screenshotLike(3840, 2160), 3840, 2160);
    const out = await convertToWebp(webp, "webp", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1440]);
    expect(codecMemory().scratch).toBe(0); // never held beside a codec that may grow past its share
    expect(codecMemory().lastConversionCodec).toBeLessThanOrEqual(2 * 1_048_576 + largeWebpCodecBytes);
    const decoded = await decodeWebp(out.bytes);
    expect(near(pixelAt(decoded, 1200, 20), [40, 90, 200], 12)).toBe(true);
    // The next JPEG starts from fresh instances: a new scratch beside a codec back within its share.
    expect((await convertToWebp(jpeg, "jpeg", { maxEdge: 64 })).width).toBe(64);
    const after = codecMemory();
    expect(after.scratch).toBeGreaterThan(0);
    expect(after.scratch).toBeLessThanOrEqual(scratchShareBytes);
    // A fresh codec: its first 2 MiB (static data, the fallback CMYK profile) and a 64-pixel conversion's work.
    expect(after.codec).toBeLessThan(4 * 1_048_576);
  });

  it("converts a 12 MP (4000 × 3000) photo-like lossless WebP to 2560 × 1920 within the codec's 80 MiB cap", {
    timeout: 300_000,
  }, async () => {
    const rgba = photoLike(4000, 3000);
    // Photo-like with photoLike's noise cut to its top two bits, so the file (~10 MB) is what a lossless export
    // of a smooth photo weighs; a grainier one (next test) makes a larger file, which is never held whole.
    for (let i = 0; i < rgba.length; i += 4) {
      rgba[i] = (rgba[i] as number) & 0xf8;
      rgba[i + 1] = (rgba[i + 1] as number) & 0xf8;
      rgba[i + 2] = (rgba[i + 2] as number) & 0xf8;
    }
    const webp = await encodeLossless(rgba, 4000, 3000);
    const out = await convertToWebp(webp, "webp", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1920]);
    const { lastConversionCodec, scratch } = codecMemory();
    expect(lastConversionCodec).toBeGreaterThan(codecShareBytes); // the large-WebP allowance is what it used
    expect(lastConversionCodec).toBeLessThanOrEqual(80 * 1_048_576);
    expect(scratch).toBe(0);
  });

  it("converts a 12 MP lossless WebP whatever its file's size: a grainy photo of over 15 MB, streamed through a window, never held whole", {
    timeout: 300_000,
  }, async () => {
    const rgba = photoLike(4000, 3000);
    // Film grain: the low four bits of every channel from a generator, the photo's structure in the top four.
    let seed = 1;
    for (let i = 0; i < rgba.length; i += 4)
      for (let c = 0; c < 3; c += 1) {
        seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
        rgba[i + c] = ((rgba[i + c] as number) & 0xf0) | (seed >>> 28);
      }
    const webp = await encodeLossless(rgba, 4000, 3000);
    expect(webp.length).toBeGreaterThan(15_000_000);
    // As R2 hands a body over: 64 KiB at a time, when the reader asks.
    const input = chunked(webp, 65_536);
    const out = await convertToWebp(input, "webp", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1920]);
    const { lastConversionCodec, scratch } = codecMemory();
    expect(lastConversionCodec).toBeLessThanOrEqual(80 * 1_048_576);
    // The ARGB plane (48 MB) and the target (19.7 MB) with the file beside them would not fit that.
    expect(lastConversionCodec).toBeLessThan(4000 * 3000 * 4 + 2560 * 1920 * 4 + webp.length);
    expect(scratch).toBe(0);
    // The picture is the source's: per-cell means of an 8 × 8 grid within what the lossy encoding loses.
    const decoded = await decodeWebp(out.bytes);
    const error = gridDifference(grid(decoded.data, 2560, 1920), grid(rgba, 4000, 3000));
    expect(Math.max(...error)).toBeLessThan(1.5);
  });

  it("refuses a lossless WebP whose ARGB plane cannot fit (24 MP), naming the limit, from its header alone", async () => {
    const header = webpLyingVp8l(6000, 4000);
    const webp = new Uint8Array(20_000_000);
    webp.set(header);
    new DataView(webp.buffer).setUint32(4, webp.length - 8, true);
    new DataView(webp.buffer).setUint32(16, webp.length - 20, true); // the VP8L chunk claims the rest
    const input = chunked(webp, 65_536);
    const started = performance.now();
    await expect(convertToWebp(input, "webp", { maxEdge: 2560 })).rejects.toThrow(
      /6000 × 4000 pixels exceeds the limit of [0-9.]+ megapixels for a lossless WebP/,
    );
    expect(performance.now() - started).toBeLessThan(3000);
    expect(input.delivered()).toBeLessThanOrEqual(65_536); // decided before the image data is read
    await expect(convertToWebp(webp, "webp", { maxEdge: 2560 })).rejects.toThrow(ImageTooLargeError);
  });
});
