import { GifWriter } from "omggif";
import { describe, expect, it } from "vitest";
import { convertToWebp, gifFrameCount, UnconvertibleImageError } from "../src/convert";
import { decodeWebp, near, photoLike, pixelAt, writeRgbaPng } from "./images";

/** Conversion of GIF, BMP and WebP input (the formats' own details: gif.test.ts, bmp.test.ts, webp-*.test.ts). */

describe("GIF input: one frame converts with its transparency; more than one is refused as animated", () => {
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
});

describe("BMP and WebP input convert upright and to the target size; a WebP header that lies is refused", () => {
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
