import { describe, expect, it } from "vitest";
import { convertToWebp } from "../../../src/uploads/convert";
import { decodeWebp, near, pixelAt, writePng, writeRgbaPng } from "./images";

const alphaAt = (image: { data: Uint8ClampedArray; width: number }, x: number, y: number) =>
  image.data[(y * image.width + x) * 4 + 3];

describe("transparency: nothing of the colour under fully transparent pixels shows", () => {
  it("keeps an opaque yellow pixel yellow beside tRNS-transparent black ones (2×2 RGB PNG)", async () => {
    const png = await writePng({
      width: 2,
      height: 2,
      colorType: 2,
      bitDepth: 8,
      samples: (x, y) => (x === 0 && y === 0 ? [255, 255, 0] : [0, 0, 0]),
      transparency: [0, 0, 0, 0, 0, 0],
    });
    const decoded = await decodeWebp((await convertToWebp(png, "png", { maxEdge: 64 })).bytes);
    expect(alphaAt(decoded, 0, 0)).toBe(255);
    expect(alphaAt(decoded, 1, 1)).toBe(0);
    expect(near(pixelAt(decoded, 0, 0), [255, 255, 0], 6), `${pixelAt(decoded, 0, 0)}`).toBe(true);
  });

  it("keeps opaque green stripes green between transparent magenta stripes (RGBA PNG, every other column)", async () => {
    const width = 48;
    const height = 32;
    const rgba = new Uint8Array(width * height * 4);
    for (let i = 0; i < width * height; i += 1) {
      const visible = (i % width) % 2 === 0;
      rgba.set(visible ? [0, 160, 0, 255] : [255, 0, 255, 0], i * 4);
    }
    const decoded = await decodeWebp(
      (await convertToWebp(await writeRgbaPng(rgba, width, height), "png", { maxEdge: 64 })).bytes,
    );
    for (const [x, y] of [
      [0, 0],
      [10, 7],
      [46, 31],
    ] as const) {
      expect(near(pixelAt(decoded, x, y), [0, 160, 0], 6), `${x},${y}: ${pixelAt(decoded, x, y)}`).toBe(true);
    }
  });
});
