import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { convertToWebp, encodeHostedAvif } from "../src/convert";
import { avif444TilePixels, avifGridLayout, avifMaxPixels, avifMemoryBytes } from "../src/convert/avif";
import { decodeAvif, decodeWebp, meanDifference, paint, photoLike, writeRgbaPng } from "./images";

/**
 * The full-size AVIF of a picture past the encoder's pixel budget: a grid of tiles each within the budget
 * (converter/src/convert/avif.ts, avif-grid.ts), decoded here by @jsquash/avif's decoder (libavif and dav1d:
 * another library than the encoder's libaom, and one that checks what MIAF asks of a grid).
 */

/** A hosted image as the conversion makes it: the WebP of `rgba`. */
async function hosted(rgba: Uint8Array, width: number, height: number) {
  return (await convertToWebp(await writeRgbaPng(rgba, width, height), "png", { maxEdge: 2560 })).bytes;
}

/** The AVIF's primary item's type and the types of all its items, from its meta box (pitm, iinf). */
function itemsOf(avif: Uint8Array): { primary: string; types: string[] } {
  const view = new DataView(avif.buffer, avif.byteOffset, avif.byteLength);
  const tag = (at: number) => String.fromCharCode(...avif.subarray(at, at + 4));
  const types = new Map<number, string>();
  let primaryId = 0;
  const walk = (start: number, end: number) => {
    for (let at = start; at < end; at += view.getUint32(at)) {
      const type = tag(at + 4);
      if (type === "meta") walk(at + 12, at + view.getUint32(at));
      if (type === "iinf") walk(at + 14, at + view.getUint32(at));
      if (type === "pitm") primaryId = view.getUint16(at + 12);
      if (type === "infe") types.set(view.getUint16(at + 12), tag(at + 16));
    }
  };
  walk(0, avif.length);
  return { primary: types.get(primaryId) ?? "none", types: [...types.values()] };
}

/** Mean SSIM of the luma of two RGBA images of one size, over 8 × 8 windows. */
function lumaSsim(a: ArrayLike<number>, b: ArrayLike<number>, width: number, height: number): number {
  const luma = (image: ArrayLike<number>, i: number) =>
    0.299 * (image[i] as number) + 0.587 * (image[i + 1] as number) + 0.114 * (image[i + 2] as number);
  const [c1, c2] = [(0.01 * 255) ** 2, (0.03 * 255) ** 2];
  let [total, windows] = [0, 0];
  for (let top = 0; top + 8 <= height; top += 8)
    for (let left = 0; left + 8 <= width; left += 8) {
      let [sa, sb, saa, sbb, sab] = [0, 0, 0, 0, 0];
      for (let y = top; y < top + 8; y += 1)
        for (let x = left; x < left + 8; x += 1) {
          const [va, vb] = [luma(a, (y * width + x) * 4), luma(b, (y * width + x) * 4)];
          [sa, sb, saa, sbb, sab] = [sa + va, sb + vb, saa + va * va, sbb + vb * vb, sab + va * vb];
        }
      const [ma, mb] = [sa / 64, sb / 64];
      const [va, vb, cov] = [saa / 64 - ma * ma, sbb / 64 - mb * mb, sab / 64 - ma * mb];
      total += ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2));
      windows += 1;
    }
  return total / windows;
}

/**
 * How `decoded` departs from `reference` (RGBA, `width × height`) at a line between pixels: vertical (`axis`
 * "x", between columns `at − 1` and `at`) or horizontal. `band`: the mean absolute difference in the 4 pixels
 * across it; `jump`: the mean change of the signed difference across it, which a seam between tiles coded
 * apart shows as a step.
 */
function acrossLine(
  decoded: ArrayLike<number>,
  reference: ArrayLike<number>,
  size: { width: number; height: number },
  axis: "x" | "y",
  at: number,
): { band: number; jump: number } {
  const length = axis === "x" ? size.height : size.width;
  const index = (along: number, across: number, channel: number) =>
    ((axis === "x" ? along * size.width + across : across * size.width + along) * 4 + channel) as number;
  const error = (i: number) => (decoded[i] as number) - (reference[i] as number);
  let [band, jump] = [0, 0];
  for (let along = 0; along < length; along += 1)
    for (let channel = 0; channel < 3; channel += 1) {
      for (let across = at - 2; across < at + 2; across += 1) band += Math.abs(error(index(along, across, channel)));
      jump += Math.abs(error(index(along, at, channel)) - error(index(along, at - 1, channel)));
    }
  return { band: band / (length * 12), jump: jump / (length * 3) };
}

/** A 2560 × 1920 photo, transparent in a soft gradient across its bottom right (the other tiles opaque). */
function photoWithAlpha(width: number, height: number): Uint8Array {
  const pixels = photoLike(width, height);
  for (let y = Math.floor(height * 0.6); y < height; y += 1)
    for (let x = Math.floor(width * 0.6); x < width; x += 1)
      pixels[(y * width + x) * 4 + 3] = Math.round(
        255 - (200 * (x + y - width * 0.6 - height * 0.6)) / (width + height),
      );
  return pixels;
}

/** Encoding a grid takes seconds: the 2560 × 1920 photo's hosted WebP and full-size AVIF are made once. */
const photo = { width: 2560, height: 1920 };
let photoMade: Promise<{ webp: Uint8Array; avif: { bytes: Uint8Array; width: number; height: number } }> | null = null;
function photoAvif() {
  photoMade ??= (async () => {
    const webp = await hosted(photoLike(photo.width, photo.height), photo.width, photo.height);
    return { webp, avif: await encodeHostedAvif(webp, photo) };
  })();
  return photoMade;
}

/** Generous: a grid is several encodings, and the test machine is shared. */
const gridTimeout = 240_000;

/** `rgba` hosted (its WebP), its full-size AVIF, and both decoded: what the AVIF shows against what the WebP shows. */
async function hostedAndAvif(rgba: Uint8Array, size: { width: number; height: number }) {
  const webp = await hosted(rgba, size.width, size.height);
  const avif = await encodeHostedAvif(webp, size);
  const [decoded, reference] = [await decodeAvif(avif.bytes), await decodeWebp(webp)];
  return { avif, decoded, reference };
}

describe("a picture past the encoder's pixel budget: its full-size AVIF is a grid that shows the hosted WebP at exactly its size", () => {
  it(
    "a 2560 × 1920 photo's AVIF decodes at exactly its size, shows the hosted WebP (mean difference < 6, luma SSIM > 0.9), as a 2 × 2 grid of tiles within the budget, the encoder at ≤ 51 MB",
    async () => {
      const { width, height } = photo;
      const { webp, avif } = await photoAvif();
      expect([avif.width, avif.height]).toEqual([width, height]);
      const [decoded, reference] = [await decodeAvif(avif.bytes), await decodeWebp(webp)];
      expect([decoded.width, decoded.height]).toEqual([width, height]);
      expect(meanDifference(decoded.data, reference.data)).toBeLessThan(6);
      expect(lumaSsim(decoded.data, reference.data, width, height)).toBeGreaterThan(0.9);
      expect(itemsOf(avif.bytes)).toEqual({ primary: "grid", types: ["grid", "av01", "av01", "av01", "av01"] });
      expect(await avifMemoryBytes()).toBeLessThanOrEqual(51 * 1024 * 1024);
    },
    gridTimeout,
  );

  it(
    "its tile seams are invisible: across the boundaries between tiles the error, and its step, are no worse than across the codec's own block edges inside the tiles",
    async () => {
      // A smooth picture: a photo's grain would hide a step the eye sees on a sky.
      const { width, height } = photo;
      const smooth = paint(width, height, (x, y) => [
        (x * 255) / width,
        128 + Math.sin(Math.hypot(x - width / 3, y - height / 2) / 40) * 60,
        (y * 255) / height,
      ]);
      const { decoded, reference } = await hostedAndAvif(smooth, photo);
      const { layout } = avifGridLayout(width, height);
      // Each seam against the codec's own block edges (every 8 px) inside the tiles, along the same axis.
      const seams = { x: layout.tileWidth, y: layout.tileHeight };
      for (const axis of ["x", "y"] as const) {
        const [tile, extent] = [seams[axis], axis === "x" ? width : height];
        const insideTiles: { band: number; jump: number }[] = [];
        for (let at = 8; at < extent; at += 8)
          if (at % tile !== 0) insideTiles.push(acrossLine(decoded.data, reference.data, photo, axis, at));
        const worst = (key: "band" | "jump") => Math.max(...insideTiles.map((line) => line[key]));
        for (let at = tile; at < extent; at += tile) {
          const seam = acrossLine(decoded.data, reference.data, photo, axis, at);
          expect(seam.band, `${axis} = ${at}`).toBeLessThanOrEqual(worst("band"));
          expect(seam.jump, `${axis} = ${at}`).toBeLessThanOrEqual(worst("jump"));
        }
      }
    },
    gridTimeout,
  );

  it(
    "an odd size (2560 × 1707, what a 3:2 photo becomes) is a 4:4:4 grid and decodes at exactly its size, showing the WebP",
    async () => {
      const [width, height] = [2560, 1707];
      const { avif, decoded, reference } = await hostedAndAvif(photoLike(width, height), { width, height });
      expect([decoded.width, decoded.height]).toEqual([width, height]);
      expect(meanDifference(decoded.data, reference.data)).toBeLessThan(6);
      expect(lumaSsim(decoded.data, reference.data, width, height)).toBeGreaterThan(0.9);
      expect(itemsOf(avif.bytes).primary).toBe("grid");
      expect(await avifMemoryBytes()).toBeLessThanOrEqual(51 * 1024 * 1024);
    },
    gridTimeout,
  );
});

describe("a picture past the budget keeps its alpha in the grid AVIF", () => {
  it(
    "keeps alpha: a 2560 × 1920 photo transparent in one corner has the same alpha in its AVIF (an alpha grid beside the colour grid, opaque tiles included)",
    async () => {
      const [width, height] = [2560, 1920];
      const pixels = photoWithAlpha(width, height);
      const { avif, decoded, reference } = await hostedAndAvif(pixels, { width, height });
      expect([decoded.width, decoded.height]).toEqual([width, height]);
      const alpha = (image: ArrayLike<number>) =>
        Uint8ClampedArray.from({ length: width * height }, (_, i) => image[i * 4 + 3] as number);
      expect(meanDifference(alpha(decoded.data), alpha(pixels))).toBeLessThan(1);
      expect(decoded.data[(100 * width + 100) * 4 + 3]).toBe(255);
      const corner = ((height - 2) * width + width - 2) * 4 + 3;
      expect(pixels[corner]).toBeLessThan(200);
      expect(Math.abs((decoded.data[corner] as number) - (pixels[corner] as number))).toBeLessThanOrEqual(8);
      expect(meanDifference(decoded.data, reference.data)).toBeLessThan(6);
      expect(lumaSsim(decoded.data, reference.data, width, height)).toBeGreaterThan(0.9);
      const { primary, types } = itemsOf(avif.bytes);
      expect([primary, types.filter((type) => type === "grid").length, types.length]).toEqual(["grid", 2, 10]);
    },
    gridTimeout,
  );
});

describe("the AVIF encoder's memory stays within the plan (≤ 51 MB)", () => {
  it(
    "the largest hosted image (2560 × 2560, with alpha) keeps the encoder's memory within the plan (≤ 51 MB)",
    async () => {
      const [width, height] = [2560, 2560];
      const webp = await hosted(photoWithAlpha(width, height), width, height);
      const avif = await encodeHostedAvif(webp, { width, height });
      expect(await avifMemoryBytes()).toBeLessThanOrEqual(51 * 1024 * 1024);
      expect(await decodeAvif(avif.bytes)).toMatchObject({ width, height });
    },
    gridTimeout,
  );
});

describe("only a picture past the budget is a grid", () => {
  it(
    "an image within the budget keeps the single-item AVIF (no grid), with or without alpha",
    async () => {
      const [width, height] = [1280, 1024];
      const opaque = await encodeHostedAvif(await hosted(photoLike(width, height), width, height), { width, height });
      expect(itemsOf(opaque.bytes)).toEqual({ primary: "av01", types: ["av01"] });
      const transparent = await encodeHostedAvif(await hosted(photoWithAlpha(width, height), width, height), {
        width,
        height,
      });
      expect(itemsOf(transparent.bytes)).toEqual({ primary: "av01", types: ["av01", "av01"] });
      expect(await decodeAvif(transparent.bytes)).toMatchObject({ width, height });
    },
    gridTimeout,
  );
});

describe("how a picture past the budget is cut into tiles", () => {
  it("any size up to 2560 × 2560 past the budget: equal tiles within their budget, at least 64 px, even for 4:2:0 (used only for an even size), covering the picture with every tile overlapping it", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2560 }), fc.integer({ min: 1, max: 2560 }), (width, height) => {
        fc.pre(width * height > avifMaxPixels);
        const { layout, chroma } = avifGridLayout(width, height);
        const yuv420 = chroma === 1;
        expect(yuv420).toBe(width % 2 === 0 && height % 2 === 0);
        expect(layout.tileWidth * layout.tileHeight).toBeLessThanOrEqual(yuv420 ? avifMaxPixels : avif444TilePixels);
        expect(Math.min(layout.tileWidth, layout.tileHeight)).toBeGreaterThanOrEqual(64);
        if (yuv420) expect([layout.tileWidth % 2, layout.tileHeight % 2]).toEqual([0, 0]);
        expect(layout.columns * layout.tileWidth).toBeGreaterThanOrEqual(width);
        expect(layout.rows * layout.tileHeight).toBeGreaterThanOrEqual(height);
        expect((layout.columns - 1) * layout.tileWidth).toBeLessThan(width);
        expect((layout.rows - 1) * layout.tileHeight).toBeLessThan(height);
        expect([layout.width, layout.height]).toEqual([width, height]);
      }),
      { numRuns: 300 },
    );
    expect(avifGridLayout(2560, 1920).layout).toMatchObject({ columns: 2, rows: 2, tileWidth: 1280, tileHeight: 960 });
  });

  it(
    "an opaque tile of a picture with alpha still carries alpha (a grid's tiles all have it or none): a picture transparent only in a 16-px corner decodes with that alpha",
    async () => {
      const [width, height] = [2560, 1920];
      const corner = (x: number, y: number) => x >= width - 16 && y >= height - 16;
      const pixels = paint(width, height, (x, y) => [x % 256, y % 256, 128, corner(x, y) ? 0 : 255]);
      const webp = await hosted(pixels, width, height);
      const decoded = await decodeAvif((await encodeHostedAvif(webp, { width, height })).bytes);
      expect(decoded.data[((height - 8) * width + width - 8) * 4 + 3]).toBeLessThan(16);
      expect(decoded.data[3]).toBeGreaterThanOrEqual(254);
      expect(decoded.data[(100 * width + 2000) * 4 + 3]).toBeGreaterThanOrEqual(254);
    },
    gridTimeout,
  );
});
