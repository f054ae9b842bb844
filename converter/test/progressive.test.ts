import turboWasm from "@cwasm/jpeg-turbo/jpeg-turbo.wasm";
import { describe, expect, it } from "vitest";
import { UnconvertibleImageError } from "../src/convert/errors";
import { readJpegHeader } from "../src/convert/jpeg-header";
import { createJpegTurbo, decompressInto, pixelFormat } from "../src/convert/native";
import { decodeProgressive, progressiveStorageBytes } from "../src/convert/progressive";
import { encodeJpeg, photoLike } from "./images";

/**
 * The progressive decoder against libjpeg-turbo's decode of the same file at the same N/8 scale, through both
 * of its paths: TypeScript (plain storage) and the WebAssembly core (file and storage in the arena's memory,
 * as the conversion runs it), which must give the same pixels and write nothing outside its storage.
 */

const turbo = createJpegTurbo(turboWasm);
const guard = 64;

type Decoded = { pixels: Uint8Array; width: number; height: number };

function planOf(jpeg: Uint8Array, n: number) {
  const header = readJpegHeader(jpeg);
  return {
    width: header.width,
    height: header.height,
    components: header.components,
    n,
    adobeTransform: header.adobeTransform,
  };
}

function collect(width: number, height: number, run: (row: (rgba: Uint8Array) => void) => void): Decoded {
  const pixels = new Uint8Array(width * height * 4);
  let y = 0;
  run((rgba) => {
    expect(y).toBeLessThan(height);
    pixels.set(rgba.subarray(0, width * 4), y * width * 4);
    y += 1;
  });
  expect(y).toBe(height);
  return { pixels, width, height };
}

function decodeWithTypeScript(jpeg: Uint8Array, n: number): Decoded {
  const plan = planOf(jpeg, n);
  const storage = new Uint8Array(progressiveStorageBytes(plan));
  return collect(Math.ceil((plan.width * n) / 8), Math.ceil((plan.height * n) / 8), (row) =>
    decodeProgressive(jpeg, plan, storage, row),
  );
}

/** Runs `use` with `jpeg` copied into the arena and `extra` bytes after it; frees both afterwards. */
function inArena<T>(jpeg: Uint8Array, extra: number, use: (file: number, block: number) => T): T {
  const { malloc, free } = turbo.exports;
  const file = malloc(jpeg.length);
  const block = malloc(extra);
  try {
    new Uint8Array(turbo.exports.memory.buffer, file, jpeg.length).set(jpeg);
    return use(file, block);
  } finally {
    free(block);
    free(file);
  }
}

/** The WebAssembly path, with guard bytes around its storage and a check that the file was left intact. */
function decodeWithCore(jpeg: Uint8Array, n: number): Decoded {
  const plan = planOf(jpeg, n);
  const size = progressiveStorageBytes(plan);
  return inArena(jpeg, size + 2 * guard, (file, block) => {
    const memory = turbo.exports.memory;
    const all = new Uint8Array(memory.buffer, block, size + 2 * guard);
    all.fill(0xa5);
    const storage = new Uint8Array(memory.buffer, block + guard, size);
    const bytes = new Uint8Array(memory.buffer, file, jpeg.length);
    try {
      return collect(Math.ceil((plan.width * n) / 8), Math.ceil((plan.height * n) / 8), (row) =>
        decodeProgressive(bytes, plan, storage, row, memory),
      );
    } finally {
      expect(all.subarray(0, guard).every((b) => b === 0xa5)).toBe(true);
      expect(all.subarray(guard + size).every((b) => b === 0xa5)).toBe(true);
      expect(bytes).toEqual(jpeg);
    }
  });
}

function decodeWithLibjpeg(jpeg: Uint8Array, n: number): Decoded {
  const plan = planOf(jpeg, n);
  const width = Math.ceil((plan.width * n) / 8);
  const height = Math.ceil((plan.height * n) / 8);
  return inArena(jpeg, width * height * 4, (file, out) => {
    decompressInto(turbo, file, jpeg.length, out, width, height, pixelFormat.rgba);
    return { pixels: new Uint8Array(turbo.exports.memory.buffer, out, width * height * 4).slice(), width, height };
  });
}

function difference(a: Decoded, b: Decoded): { mean: number; within8: number } {
  expect([a.width, a.height]).toEqual([b.width, b.height]);
  let total = 0;
  let close = 0;
  let count = 0;
  for (let i = 0; i < a.pixels.length; i += 1) {
    if (i % 4 === 3) continue;
    const d = Math.abs((a.pixels[i] as number) - (b.pixels[i] as number));
    total += d;
    if (d <= 8) close += 1;
    count += 1;
  }
  return { mean: total / count, within8: close / count };
}

/** Mean absolute difference of the luma (BT.601) of two decodes. */
function lumaDifference(a: Decoded, b: Decoded): number {
  expect([a.width, a.height]).toEqual([b.width, b.height]);
  let total = 0;
  for (let i = 0; i < a.pixels.length; i += 4) {
    const ya =
      0.299 * (a.pixels[i] as number) + 0.587 * (a.pixels[i + 1] as number) + 0.114 * (a.pixels[i + 2] as number);
    const yb =
      0.299 * (b.pixels[i] as number) + 0.587 * (b.pixels[i + 1] as number) + 0.114 * (b.pixels[i + 2] as number);
    total += Math.abs(ya - yb);
  }
  return total / (a.pixels.length / 4);
}

/** 2×2 box average (what the eye sees, and roughly what the downscale to the target does). */
function boxed(a: Decoded): Decoded {
  const width = Math.floor(a.width / 2);
  const height = Math.floor(a.height / 2);
  const pixels = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y += 1)
    for (let x = 0; x < width; x += 1)
      for (let ch = 0; ch < 4; ch += 1) {
        let sum = 0;
        for (let dy = 0; dy < 2; dy += 1)
          for (let dx = 0; dx < 2; dx += 1) sum += a.pixels[((2 * y + dy) * a.width + 2 * x + dx) * 4 + ch] as number;
        pixels[(y * width + x) * 4 + ch] = Math.round(sum / 4);
      }
  return { pixels, width, height };
}

/** photoLike with its noise the same in R, G and B: luma detail at every pixel, smooth chroma. */
function smoothChroma(width: number, height: number): Uint8Array {
  const data = new Uint8Array(width * height * 4).fill(255);
  let seed = 99;
  for (let i = 0; i < data.length; i += 4) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    const noise = (seed >>> 27) - 16;
    const x = (i / 4) % width;
    const y = Math.floor(i / 4 / width);
    const ring = Math.sin(Math.hypot(x - width / 3, y - height / 2) / 40) * 60;
    data[i] = Math.max(0, Math.min(255, (x * 255) / width + noise));
    data[i + 1] = Math.max(0, Math.min(255, 128 + ring + noise));
    data[i + 2] = Math.max(0, Math.min(255, (y * 255) / height + noise));
  }
  return data;
}

describe("progressive JPEG decoder: 4:2:0 and 4:4:4 decode like libjpeg-turbo at every N/8 scale, the same through both paths", () => {
  it.each([
    // libjpeg upsamples 4:2:0 chroma with a triangle filter where this decoder repeats samples, and its 2×2 and
    // 4×4 IDCTs are approximations where this one is exact: measured means 0.9–2.8 (4:2:0), ≤ 1.4 (grey).
    // 4:4:4 (chroma decoded at N/2) has its own test below.
    ["4:2:0", { chromaSubsample: 2 }, { mean: 3.2, within8: 0.95 }],
    ["grayscale", { grayscale: true }, { mean: 1.6, within8: 0.99 }],
  ])(
    "decodes a progressive %s JPEG like libjpeg-turbo at every N/8 scale, the same through both paths",
    async (_name, extra, bound) => {
      const width = 333;
      const height = 251;
      const jpeg = await encodeJpeg(photoLike(width, height), width, height, {
        progressive: true,
        quality: 90,
        ...extra,
      });
      expect(readJpegHeader(jpeg).progressive).toBe(true);
      for (let n = 1; n <= 8; n += 1) {
        const typescript = decodeWithTypeScript(jpeg, n);
        const core = decodeWithCore(jpeg, n);
        expect(core.pixels).toEqual(typescript.pixels);
        const { mean, within8 } = difference(core, decodeWithLibjpeg(jpeg, n));
        expect(mean, `N = ${n}`).toBeLessThan(bound.mean);
        expect(within8, `N = ${n}`).toBeGreaterThan(bound.within8);
      }
    },
  );

  it("decodes a progressive 4:4:4 JPEG with its chroma at N/2 like libjpeg-turbo at every N/8 scale, the same through both paths", async () => {
    const width = 333;
    const height = 251;
    // Measured against libjpeg (full chroma): luma means ≤ 1.9 (its approximate 2×2 and 4×4 IDCTs, as for
    // 4:2:0); the photo's pixel-level chroma noise is what half-resolution chroma drops, so it is compared after a 2×2
    // box average (means ≤ 1.9, ≥ 96 % within 8); with smooth chroma the pixels themselves (means ≤ 2.1).
    for (const [name, pixels] of [
      ["photo", photoLike(width, height)],
      ["smooth chroma", smoothChroma(width, height)],
    ] as const) {
      const jpeg = await encodeJpeg(pixels, width, height, { progressive: true, quality: 90, chromaSubsample: 1 });
      const header = readJpegHeader(jpeg);
      expect(header.progressive).toBe(true);
      expect(header.components.map((c) => [c.h, c.v])).toEqual([
        [1, 1],
        [1, 1],
        [1, 1],
      ]);
      for (let n = 1; n <= 8; n += 1) {
        const label = `${name}, N = ${n}`;
        const typescript = decodeWithTypeScript(jpeg, n);
        const core = decodeWithCore(jpeg, n);
        expect(core.pixels, label).toEqual(typescript.pixels);
        const libjpeg = decodeWithLibjpeg(jpeg, n);
        expect(lumaDifference(core, libjpeg), label).toBeLessThan(2.1);
        if (name === "photo") {
          if (n === 1) continue; // a 1-pixel-per-block decode has no chroma to halve
          const { mean, within8 } = difference(boxed(core), boxed(libjpeg));
          expect(mean, label).toBeLessThan(2.2);
          expect(within8, label).toBeGreaterThan(0.95);
        } else {
          const { mean, within8 } = difference(core, libjpeg);
          expect(mean, label).toBeLessThan(2.3);
          expect(within8, label).toBeGreaterThan(0.99);
        }
      }
    }
  });
});

describe("progressive JPEG decoder: long scans decode and damaged scans are refused the same way through both paths", () => {
  // A 1.1 MP photo decoded at three scales by each of three decoders: 17.5 s on two cores shared with other work.
  it("decodes a larger 4:2:0 photo (many MCU rows, long scans) the same through both paths", {
    timeout: 30_000,
  }, async () => {
    const width = 1203;
    const height = 917;
    const jpeg = await encodeJpeg(photoLike(width, height), width, height, { progressive: true, quality: 95 });
    for (const n of [3, 5, 8]) {
      const core = decodeWithCore(jpeg, n);
      expect(core.pixels).toEqual(decodeWithTypeScript(jpeg, n).pixels);
      expect(difference(core, decodeWithLibjpeg(jpeg, n)).mean, `N = ${n}`).toBeLessThan(3.2);
    }
  });

  it("refuses damaged scan data (4:2:0 and 4:4:4) the same way through both paths, writing nothing outside its storage", async () => {
    const width = 256;
    const height = 192;
    for (const chromaSubsample of [2, 1]) {
      const jpeg = await encodeJpeg(photoLike(width, height), width, height, { progressive: true, chromaSubsample });
      let seed = 7;
      for (let trial = 0; trial < 6; trial += 1) {
        const damaged = jpeg.slice();
        // Overwrite a stretch of the entropy-coded data (never with 0xff, so the marker chain stays intact).
        const from = Math.floor(jpeg.length * (0.2 + 0.1 * trial));
        for (let i = from; i < from + 400 && i < jpeg.length - 2; i += 1) {
          if (damaged[i] === 0xff || damaged[i - 1] === 0xff) continue;
          seed = (seed * 1103515245 + 12345) >>> 0;
          damaged[i] = (seed >>> 24) % 255;
        }
        for (const n of [2, 5, 8]) {
          const outcome = (decode: () => Decoded) => {
            try {
              return decode().pixels;
            } catch (error) {
              expect(error).toBeInstanceOf(UnconvertibleImageError);
              return "refused";
            }
          };
          const typescript = outcome(() => decodeWithTypeScript(damaged, n));
          const core = outcome(() => decodeWithCore(damaged, n));
          expect(core).toEqual(typescript);
        }
      }
    }
  });
});

describe("progressive JPEG decoder: its storage is bounded and checked before decoding", () => {
  it("refuses, before decoding, storage without room for the WebAssembly path's scratch", async () => {
    const jpeg = await encodeJpeg(photoLike(64, 48), 64, 48, { progressive: true });
    const plan = planOf(jpeg, 8);
    const coefficientsOnly = (8 * 6 + 2 * 4 * 3) * (2 * 64 + 8);
    expect(progressiveStorageBytes(plan)).toBeGreaterThan(coefficientsOnly);
    inArena(jpeg, coefficientsOnly, (file, block) => {
      const memory = turbo.exports.memory;
      const bytes = new Uint8Array(memory.buffer, file, jpeg.length);
      const storage = new Uint8Array(memory.buffer, block, coefficientsOnly);
      expect(() => decodeProgressive(bytes, plan, storage, () => {}, memory)).toThrow(RangeError);
    });
  });

  it("keeps its storage bound: only the N×N coefficients, the non-zero bits and a small scratch", () => {
    const plan = {
      width: 6000,
      height: 4000,
      components: [
        { id: 1, h: 2, v: 2, tq: 0 },
        { id: 2, h: 1, v: 1, tq: 1 },
        { id: 3, h: 1, v: 1, tq: 1 },
      ],
      n: 3,
      adobeTransform: null,
    };
    const blocks = 750 * 500 + 2 * 375 * 250;
    const bytes = progressiveStorageBytes(plan);
    // N = 3: 9 coefficients and 55 history bits (four 16-bit words) a block.
    expect(bytes).toBeGreaterThanOrEqual(blocks * 2 * (9 + 4));
    // Scratch: tables plus one MCU row of samples and one RGBA row, well under 1 MB for a 6000 px wide photo.
    expect(bytes - blocks * 2 * (9 + 4)).toBeLessThan(1_000_000);
  });

  it("keeps 4:4:4 chroma at N/2: (N/2)² coefficients a chroma block, N² a luma block", () => {
    const plan444 = (width: number, height: number, n: number, h = 1) => ({
      width,
      height,
      components: [1, 2, 3].map((id) => ({ id, h, v: h, tq: id === 1 ? 0 : 1 })),
      n,
      adobeTransform: null,
    });
    // A block stores N_c² coefficients and one history bit per coefficient not stored, in 16-bit words:
    // 2·(N_c² + ceil((64 - N_c²)/16)) bytes. 24 MP at N = 4: 750 × 500 blocks a component; luma 2·(16 + 3)
    // bytes a block, chroma (N_c = 2) 2·(4 + 4).
    const blocks24 = 750 * 500;
    const store24 = blocks24 * 2 * (16 + 3) + 2 * blocks24 * 2 * (4 + 4);
    expect(store24).toBe(26_250_000);
    const bytes24 = progressiveStorageBytes(plan444(6000, 4000, 4));
    expect(bytes24).toBeGreaterThanOrEqual(store24);
    expect(bytes24 - store24).toBeLessThan(1_000_000);
    // 12 MP at N = 6: 500 × 375 blocks; luma 2·(36 + 2), chroma (N_c = 3) 2·(9 + 4).
    const blocks12 = 500 * 375;
    const store12 = blocks12 * 2 * (36 + 2) + 2 * blocks12 * 2 * (9 + 4);
    expect(store12).toBe(24_000_000);
    const bytes12 = progressiveStorageBytes(plan444(4000, 3000, 6));
    expect(bytes12).toBeGreaterThanOrEqual(store12);
    expect(bytes12 - store12).toBeLessThan(1_000_000);
    // Odd N rounds the chroma up (never below half the luma's resolution), and 2×2 sampling everywhere is 4:4:4 too.
    const blocks = 63 * 47;
    const small = progressiveStorageBytes(plan444(500, 375, 5));
    const storeSmall = blocks * 2 * (25 + 3) + 2 * blocks * 2 * (9 + 4);
    expect(small).toBeGreaterThanOrEqual(storeSmall);
    expect(small - storeSmall).toBeLessThan(100_000);
    const blocks2x2 = 64 * 48;
    const store2x2 = blocks2x2 * 2 * (16 + 3) + 2 * blocks2x2 * 2 * (4 + 4);
    expect(progressiveStorageBytes(plan444(512, 384, 4, 2))).toBeGreaterThanOrEqual(store2x2);
    expect(progressiveStorageBytes(plan444(512, 384, 4, 2)) - store2x2).toBeLessThan(100_000);
    // An Adobe RGB file (transform 0) has no chroma: every component keeps N.
    const rgb = { ...plan444(6000, 4000, 4), adobeTransform: 0 };
    expect(progressiveStorageBytes(rgb)).toBeGreaterThanOrEqual(3 * blocks24 * 2 * (16 + 3));
  });
});
