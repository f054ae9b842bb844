import type { JpegComponent } from "../jpeg-header";

/**
 * The progressive decoder's plan and geometry: what it needs from the frame, the blocks each component has
 * at its decode scale, and the bytes of its coefficient store and of the WebAssembly path's scratch.
 */

export type ProgressivePlan = {
  width: number;
  height: number;
  components: JpegComponent[];
  /**
   * Decode scale numerator: the output is ceil(width·N/8) × ceil(height·N/8). Chroma sampled as densely as
   * the densest component (4:4:4) is decoded at ceil(N/2) instead (see `geometry`).
   */
  n: number;
  adobeTransform: number | null;
  /**
   * CMYK and YCCK rows leave as their four ink bytes, as stored (YCCK's colour turned back into CMY), the
   * way libjpeg delivers CMYK, for an ICC transform to turn into RGB (colour.ts); otherwise as RGBA by formula.
   */
  inkRows?: boolean;
};

/**
 * Per-component precision: the chroma of a YCbCr (or YCCK) file sampled as densely as the densest component
 * (4:4:4) is decoded at ceil(N/2) — (N/2)² coefficients a block — and treated as subsampled by about 2 when
 * converting colour, which is the chroma resolution a 4:2:0 file gives (and what libjpeg's fancy upsampling
 * of 4:2:0 reconstructs). It halves the chroma's coefficient store: a 24 MP 4:4:4 photo at N = 4 needs
 * ~27 MB instead of ~45 MB. Luma, K, RGB and already subsampled chroma keep N.
 */
function componentScale(plan: ProgressivePlan, index: number, hMax: number, vMax: number): number {
  const kind = colourModel(plan);
  const c = plan.components[index] as JpegComponent;
  const chroma = (kind === "ycc" || kind === "ycck") && (index === 1 || index === 2);
  return chroma && c.h === hMax && c.v === vMax ? Math.ceil(plan.n / 2) : plan.n;
}

export function geometry(plan: ProgressivePlan) {
  const hMax = Math.max(...plan.components.map((c) => c.h));
  const vMax = Math.max(...plan.components.map((c) => c.v));
  const single = plan.components.length === 1;
  const mcusPerLine = Math.ceil(plan.width / (8 * (single ? 1 : hMax)));
  const mcusPerColumn = Math.ceil(plan.height / (8 * (single ? 1 : vMax)));
  const components = plan.components.map((c, index) => {
    const h = single ? 1 : c.h;
    const v = single ? 1 : c.v;
    const n = componentScale(plan, index, hMax, vMax);
    return {
      h,
      v,
      /** This component's decode scale numerator (N, or ceil(N/2) for 4:4:4 chroma) and its N_c² slots. */
      n,
      slots: n * n,
      tq: c.tq,
      id: c.id,
      blocksPerLine: Math.ceil(Math.ceil((plan.width * h) / (single ? 1 : hMax)) / 8),
      blocksPerColumn: Math.ceil(Math.ceil((plan.height * v) / (single ? 1 : vMax)) / 8),
      paddedPerLine: mcusPerLine * h,
      paddedPerColumn: mcusPerColumn * v,
    };
  });
  return { hMax: single ? 1 : hMax, vMax: single ? 1 : vMax, mcusPerLine, mcusPerColumn, components };
}

export type Geometry = ReturnType<typeof geometry>;
export type GeometryComponent = Geometry["components"][number];

function historyWords(n: number): number {
  return Math.ceil((64 - n * n) / 16);
}

/**
 * Bytes of the coefficient store: each component's blocks × (2·N_c² + 2·ceil((64 - N_c²)/16)), coefficients and
 * the non-zero history of the coefficients not stored.
 */
export function storeBytes(g: Geometry): number {
  return g.components.reduce(
    (sum, c) => sum + c.paddedPerLine * c.paddedPerColumn * 2 * (c.slots + historyWords(c.n)),
    0,
  );
}

/**
 * Bytes of storage the decoder asks for: each component's blocks × 2·(N_c² + ceil((64 - N_c²)/16)) of
 * coefficients and non-zero history (N_c = ceil(N/2) for 4:4:4 chroma, else N), plus the scratch of the WebAssembly path (tables, one MCU
 * row of samples, one RGBA row: ~16 kB + ~N²·2·width·vMax/8).
 */
export function progressiveStorageBytes(plan: ProgressivePlan): number {
  const g = geometry(plan);
  return storeBytes(g) + 16 + scratchLayout(plan, g).size;
}

export const huffmanBytes = 512 * 4 + 18 * 4 + 18 * 4 + 256;
/** Scan descriptor: 16 words for the scan, then `componentWords` per scan component (progressive.c's D_ and C_). */
export const componentWords = 12;
export const descriptorWords = 16 + 4 * componentWords;

export function scratchLayout(plan: ProgressivePlan, g: Geometry) {
  const { n } = plan;
  const outWidth = Math.ceil((plan.width * n) / 8);
  const count = g.components.length;
  let size = 0;
  const take = (bytes: number) => {
    const at = size;
    size += Math.ceil(bytes / 16) * 16;
    return at;
  };
  const descriptor = take(descriptorWords * 4);
  const slotOf = g.components.map(() => take(128 * 4));
  const tables = take(5 * huffmanBytes);
  // Each component's IDCT matrix, then its transpose (the core's row pass runs along its rows).
  const matrix = g.components.map(() => take(128 * 8));
  const quant = g.components.map(() => take(64 * 8));
  const work = take(136 * 8);
  const rowEnds = take(8 * 4);
  const columnMaps = g.components.map(() => take(outWidth * 4));
  const planes = g.components.map((c) => take(c.paddedPerLine * c.n * c.v * c.n));
  const rgba = take(outWidth * 4);
  return { size, descriptor, slotOf, tables, matrix, quant, work, rowEnds, columnMaps, planes, rgba, outWidth, count };
}

export type ScratchLayout = ReturnType<typeof scratchLayout>;

export function colourModel(plan: ProgressivePlan): "gray" | "rgb" | "ycc" | "cmyk" | "ycck" {
  const count = plan.components.length;
  if (count === 1) return "gray";
  if (count === 3) return plan.adobeTransform === 0 ? "rgb" : "ycc";
  return plan.adobeTransform === 2 ? "ycck" : "cmyk";
}

export type Store = {
  coefficients: Int16Array;
  /**
   * Non-zero history of the coefficients not stored, `words` 16-bit words a block (a stored coefficient's
   * history is its value being non-zero): bit b of a block's words for the b-th unstored zigzag index.
   */
  nonzero: Uint16Array;
  /** Slot of zigzag index k in a block's N×N store, or -1 - b when it is not stored (b: its history bit). */
  slotOf: Int32Array;
  slots: number;
  words: number;
};

/** The coefficient stores of every component in `storage`, zeroed: all non-zero history words, then each component's coefficients. */
export function makeStores(g: Geometry, storage: Uint8Array, zigzag: Int32Array): Store[] {
  const blockCounts = g.components.map((c) => c.paddedPerLine * c.paddedPerColumn);
  const totalWords = g.components.reduce((sum, c, ci) => sum + (blockCounts[ci] as number) * historyWords(c.n), 0);
  const totalCoefficients = g.components.reduce((sum, c, ci) => sum + (blockCounts[ci] as number) * c.slots, 0);
  const nonzero = new Uint16Array(storage.buffer, storage.byteOffset, totalWords);
  const coefficients = new Int16Array(storage.buffer, storage.byteOffset + totalWords * 2, totalCoefficients);
  nonzero.fill(0);
  coefficients.fill(0);
  // One store per component, its block indices local to it.
  let firstWord = 0;
  let firstCoefficient = 0;
  return g.components.map((c, ci) => {
    const blocks = blockCounts[ci] as number;
    const words = historyWords(c.n);
    const store = {
      coefficients: coefficients.subarray(firstCoefficient, firstCoefficient + blocks * c.slots),
      nonzero: nonzero.subarray(firstWord, firstWord + blocks * words),
      slotOf: slotsOf(c.n, zigzag),
      slots: c.slots,
      words,
    };
    firstWord += blocks * words;
    firstCoefficient += blocks * c.slots;
    return store;
  });
}

/** Slots of the stored zigzag indices, then (for the WebAssembly path) the stored indices in ascending order. */
function slotsOf(n: number, zigzag: Int32Array): Int32Array {
  const slotOf = new Int32Array(128);
  let stored = 0;
  for (let k = 0; k < 64; k += 1) {
    const natural = zigzag[k] as number;
    if (natural >> 3 < n && (natural & 7) < n) {
      slotOf[k] = (natural >> 3) * n + (natural & 7);
      slotOf[64 + stored] = k;
      stored += 1;
    } else {
      slotOf[k] = -1 - (k - stored);
    }
  }
  return slotOf;
}
