import { describe, expect, it } from "vitest";
import { createOpaqueRowDownscaler, createRowDownscaler, fitWithin } from "../../../src/uploads/convert/resize";

function noise(width: number, height: number): Uint8Array {
  const pixels = new Uint8Array(width * height * 4);
  let seed = 7;
  for (let i = 0; i < pixels.length; i += 1) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    pixels[i] = i % 4 === 3 ? 255 : seed >>> 24;
  }
  return pixels;
}

function reduce(make: typeof createRowDownscaler, source: Uint8Array, sw: number, sh: number, tw: number, th: number) {
  const out = new Uint8Array(tw * th * 4);
  const scaler = make(sw, sh, tw, th, out);
  for (let y = 0; y < sh; y += 1) scaler.push(source, y * sw * 4);
  expect(scaler.rowsPushed).toBe(sh);
  return out;
}

describe("area-average downscaling", () => {
  it("gives exactly maxEdge on the long edge when the edge binds, the short edge rounded", () => {
    expect(fitWithin(4000, 3000, 2560)).toEqual({ width: 2560, height: 1920 });
    expect(fitWithin(6000, 4000, 2560)).toEqual({ width: 2560, height: 1707 });
    expect(fitWithin(3000, 4000, 2560)).toEqual({ width: 1920, height: 2560 });
    expect(fitWithin(20000, 10, 2560)).toEqual({ width: 2560, height: 1 });
    expect(fitWithin(800, 600, 2560)).toEqual({ width: 800, height: 600 }); // never upscaled
  });

  for (const [sw, sh, tw, th] of [
    [301, 157, 200, 104],
    [1000, 750, 640, 480],
    [7, 5, 3, 2],
    [10, 1, 3, 1],
    [333, 251, 333, 250],
  ] as const) {
    it(`the opaque fast path matches the general downscaler within one level (${sw}×${sh} → ${tw}×${th})`, () => {
      const source = noise(sw, sh);
      const general = reduce(createRowDownscaler, source, sw, sh, tw, th);
      const fast = reduce(createOpaqueRowDownscaler, source, sw, sh, tw, th);
      let worst = 0;
      for (let i = 0; i < general.length; i += 1)
        worst = Math.max(worst, Math.abs((general[i] as number) - (fast[i] as number)));
      expect(worst).toBeLessThanOrEqual(1);
    });
  }
});
