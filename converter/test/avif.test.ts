import { describe, expect, it } from "vitest";
import { codecMemory, convertToWebp, encodeHostedAvif } from "../src/convert";
import { avifGridLayout, avifMaxPixels, avifMemoryBytes } from "../src/convert/avif";
import { codecShareBytes } from "../src/convert/budget";
import { areaAverage, decodeAvif, decodeWebp, paint, photoLike, writeRgbaPng } from "./images";

/**
 * `?format=avif` in the converter: a hosted WebP decoded at the asked size and encoded as an AVIF, within the
 * encoder's pixel budget (docs/conversion.md, "AVIF").
 */

/** A hosted image as the conversion makes it: the WebP of `rgba`. */
async function hosted(rgba: Uint8Array, width: number, height: number) {
  return (await convertToWebp(await writeRgbaPng(rgba, width, height), "png", { maxEdge: 2560 })).bytes;
}

/** Mean absolute difference per channel of two RGBA images of one size. */
function meanDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let total = 0;
  for (let i = 0; i < a.length; i += 1) total += Math.abs((a[i] as number) - (b[i] as number));
  return total / a.length;
}

describe("an AVIF of a hosted image", () => {
  it("is an AVIF of exactly the asked size showing the same picture (a width made smaller, aspect kept)", async () => {
    const [width, height] = [800, 600];
    const pixels = photoLike(width, height);
    const webp = await hosted(pixels, width, height);
    const avif = await encodeHostedAvif(webp, { width: 320, height: 240 });
    expect([avif.width, avif.height]).toEqual([320, 240]);
    const decoded = await decodeAvif(avif.bytes);
    expect([decoded.width, decoded.height]).toEqual([320, 240]);
    const reference = areaAverage(pixels, width, height, 320, 240, 4);
    // Grid means (8 × 8 px) of the two: the same picture, within what two lossy codings lose.
    const grid = (image: ArrayLike<number>) => areaAverage(Uint8Array.from(image), 320, 240, 40, 30, 4);
    expect(meanDifference(grid(decoded.data), grid(reference))).toBeLessThan(4);
  });

  it("keeps transparency: a transparent hosted image gives an AVIF with the same alpha", async () => {
    const [width, height] = [256, 128];
    const pixels = paint(width, height, (x) => (x < 128 ? [200, 100, 50, 255] : [0, 0, 0, 0]));
    const avif = await encodeHostedAvif(await hosted(pixels, width, height), { width, height });
    const decoded = await decodeAvif(avif.bytes);
    expect(decoded.data[(64 * width + 32) * 4 + 3]).toBeGreaterThan(250);
    expect(decoded.data[(64 * width + 200) * 4 + 3]).toBeLessThan(5);
    const [r, g, b] = decoded.data.subarray((64 * width + 32) * 4);
    expect(Math.abs((r as number) - 200) + Math.abs((g as number) - 100) + Math.abs((b as number) - 50)).toBeLessThan(
      12,
    );
  });

  it("a size past the encoder's pixel budget is encoded at that size, as a grid of tiles each within the budget", () => {
    for (const [width, height] of [
      [2560, 1920],
      [1920, 1440],
      [2560, 2560],
      [2560, 700],
      [2560, 1707],
    ] as const) {
      const { layout } = avifGridLayout(width, height);
      expect(layout.tileWidth * layout.tileHeight).toBeLessThanOrEqual(avifMaxPixels);
      expect(layout.columns * layout.tileWidth).toBeGreaterThanOrEqual(width);
      expect(layout.rows * layout.tileHeight).toBeGreaterThanOrEqual(height);
    }
  });

  it("hostile content at the largest hosted size stays within the encoder's plan: 2560 × 1920 of noise gets its full-size AVIF in tiles at the pixel budget (which bounds each encoding's time), the encoder's memory ≤ 51 MB, the scratch let go", async () => {
    const [width, height] = [2560, 1920];
    let seed = 7;
    const noise = paint(width, height, () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return [seed >>> 24, (seed >>> 16) & 255, (seed >>> 8) & 255, 255];
    });
    const webp = await hosted(noise, width, height);
    const avif = await encodeHostedAvif(webp, { width, height });
    expect([avif.width, avif.height]).toEqual([width, height]);
    const { layout } = avifGridLayout(width, height);
    expect(layout.tileWidth * layout.tileHeight).toBeLessThanOrEqual(avifMaxPixels);
    expect(await avifMemoryBytes()).toBeLessThanOrEqual(51 * 1024 * 1024);
    // The codec beside it decoded within its share, and the scratch instance was let go.
    expect(codecMemory().codec).toBeLessThanOrEqual(codecShareBytes);
    expect(codecMemory().scratch).toBe(0);
    expect(await decodeAvif(avif.bytes)).toMatchObject({ width, height });
  }, 240_000);

  it("a conversion lets go of the AVIF encoder, so its memory never sits beside a conversion's", async () => {
    const webp = await hosted(photoLike(64, 48), 64, 48);
    await encodeHostedAvif(webp, { width: 64, height: 48 });
    expect(await avifMemoryBytes()).toBeGreaterThan(0);
    await convertToWebp(webp, "webp", { maxEdge: 2560 });
    expect(await avifMemoryBytes()).toBe(0);
  });

  it("a damaged hosted file is refused as unconvertible, never encoded", async () => {
    const webp = await hosted(photoLike(320, 240), 320, 240);
    const cut = webp.subarray(0, Math.floor(webp.length / 2));
    await expect(encodeHostedAvif(cut, { width: 160, height: 120 })).rejects.toThrow(/damaged|ends|truncated|cut/i);
  });

  it("a WebP width and the AVIF of the same size show the same picture", async () => {
    const pixels = photoLike(640, 480);
    const webp = await hosted(pixels, 640, 480);
    const decodedWebp = await decodeWebp(webp);
    const avif = await decodeAvif((await encodeHostedAvif(webp, { width: 640, height: 480 })).bytes);
    expect(meanDifference(avif.data, decodedWebp.data)).toBeLessThan(6);
  });
});
