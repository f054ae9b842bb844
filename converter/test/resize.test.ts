import { describe, expect, it } from "vitest";
import { fitWithin } from "../src/convert/resize";
import { createWebpCodec } from "../src/convert/webp-codec";
import codecWasm from "../src/convert/webp-codec.wasm";
import { areaAverage } from "./images";

function noise(width: number, height: number, channels: 3 | 4, randomAlpha = false): Uint8Array {
  const pixels = new Uint8Array(width * height * channels);
  let seed = 7;
  for (let i = 0; i < pixels.length; i += 1) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    pixels[i] = channels === 4 && i % 4 === 3 && !randomAlpha ? 255 : seed >>> 24;
  }
  return pixels;
}

/** Pushes the rows through the codec's resizer and returns the target. */
function resize(source: Uint8Array, sw: number, sh: number, tw: number, th: number, channels: 3 | 4, opaque: boolean) {
  const codec = createWebpCodec(codecWasm);
  const target = codec.malloc(tw * th * 4);
  const resizer = codec.createResizer(sw, sh, tw, th, target, { opaque, channels });
  if (!resizer) throw new Error("no resizer");
  const row = codec.heap(resizer.row, sw * channels);
  for (let y = 0; y < sh; y += 1) {
    row.set(source.subarray(y * sw * channels, (y + 1) * sw * channels));
    resizer.push();
  }
  expect(resizer.rowsPushed).toBe(sh);
  const result = codec.heap(target, tw * th * 4).slice();
  const sawTransparency = resizer.sawTransparency();
  expect(() => resizer.push()).toThrow(RangeError); // a row past the source height is refused
  resizer.free();
  return { result, sawTransparency };
}

function worstDifference(a: Uint8Array, b: Uint8Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i += 1) worst = Math.max(worst, Math.abs((a[i] as number) - (b[i] as number)));
  return worst;
}

const sizes = [
  [301, 157, 200, 104],
  [1000, 750, 640, 480],
  [7, 5, 3, 2],
  [10, 1, 3, 1],
  [333, 251, 333, 250],
  [4000, 9, 2560, 6],
] as const;

describe("area-average downscaling", () => {
  it("gives exactly maxEdge on the long edge when the edge binds, the short edge rounded", () => {
    expect(fitWithin(4000, 3000, 2560)).toEqual({ width: 2560, height: 1920 });
    expect(fitWithin(6000, 4000, 2560)).toEqual({ width: 2560, height: 1707 });
    expect(fitWithin(3000, 4000, 2560)).toEqual({ width: 1920, height: 2560 });
    expect(fitWithin(20000, 10, 2560)).toEqual({ width: 2560, height: 1 });
    expect(fitWithin(800, 600, 2560)).toEqual({ width: 800, height: 600 }); // never upscaled
  });

  for (const [sw, sh, tw, th] of sizes) {
    it(`opaque rows (RGBA and RGB) average each footprint within one level (${sw}×${sh} → ${tw}×${th})`, () => {
      const rgba = noise(sw, sh, 4);
      const expected = areaAverage(rgba, sw, sh, tw, th, 4);
      const fromRgba = resize(rgba, sw, sh, tw, th, 4, true);
      expect(worstDifference(fromRgba.result, expected)).toBeLessThanOrEqual(1);
      expect(fromRgba.sawTransparency).toBe(false);
      const rgb = new Uint8Array(sw * sh * 3);
      for (let i = 0, j = 0; i < rgba.length; i += 4, j += 3) rgb.set(rgba.subarray(i, i + 3), j);
      expect(resize(rgb, sw, sh, tw, th, 3, true).result).toEqual(fromRgba.result);
    });

    it(`transparent rows average premultiplied colour and alpha within one level (${sw}×${sh} → ${tw}×${th})`, () => {
      const rgba = noise(sw, sh, 4, true);
      const { result, sawTransparency } = resize(rgba, sw, sh, tw, th, 4, false);
      expect(worstDifference(result, areaAverage(rgba, sw, sh, tw, th, 4))).toBeLessThanOrEqual(1);
      expect(sawTransparency).toBe(true);
    });
  }

  it("does not let the colour under fully transparent pixels bleed into visible ones", () => {
    // Left column: invisible red; right column: opaque blue. Averaged together: blue at half alpha.
    const source = new Uint8Array([255, 0, 0, 0, 0, 0, 255, 255, 255, 0, 0, 0, 0, 0, 255, 255]);
    const { result } = resize(source, 2, 2, 1, 1, 4, false);
    expect(Array.from(result)).toEqual([0, 0, 255, 128]);
  });

  it("refuses to upscale or to take rows without alpha on the transparent path", () => {
    const codec = createWebpCodec(codecWasm);
    const target = codec.malloc(400);
    expect(codec.createResizer(5, 5, 10, 10, target, { opaque: true, channels: 4 })).toBeNull();
    expect(codec.createResizer(10, 10, 5, 5, target, { opaque: false, channels: 3 })).toBeNull();
  });
});
