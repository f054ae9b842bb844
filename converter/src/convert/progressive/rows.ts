import { cmykChannel } from "../jpeg-header";
import { colourModel, type Geometry, type GeometryComponent, type ProgressivePlan, type Store } from "./plan";
import { damaged } from "./scans";

/**
 * From coefficients to rows: the N-point IDCT of each block's stored corner into component planes one MCU row
 * at a time, then colour conversion into RGBA (or ink) rows at the output size. The TypeScript path runs all
 * of it here; the WebAssembly path (core.ts) runs the IDCT and YCbCr rows in the core and shares the rest.
 */

export function idctMatrix(n: number): Float64Array {
  const m = new Float64Array(n * n);
  for (let x = 0; x < n; x += 1) {
    for (let u = 0; u < n; u += 1) {
      const c = u === 0 ? Math.SQRT1_2 : 1;
      m[x * n + u] = (c / 2) * Math.cos(((2 * x + 1) * u * Math.PI) / (2 * n));
    }
  }
  return m;
}

/**
 * Where component c's sample for output column x lies in its plane row: floor(x · (h·N_c) / (hMax·N)). For
 * 4:2:0 chroma that is x/2, for 4:4:4 chroma decoded at N/2 also x/2: the same repetition of samples.
 */
export function fillColumnMap(map: Int32Array, c: GeometryComponent, hMax: number, n: number) {
  for (let x = 0; x < map.length; x += 1) map[x] = Math.floor((x * c.h * c.n) / (hMax * n));
}

function sourceRow(c: GeometryComponent, vMax: number, n: number, ry: number) {
  return Math.floor((ry * c.v * c.n) / (vMax * n)) * c.paddedPerLine * c.n;
}

export function cornerQuantisers(table: Uint16Array | undefined, n: number, q: Float64Array): void {
  if (!table) throw damaged();
  for (let v = 0; v < n; v += 1) for (let u = 0; u < n; u += 1) q[v * n + u] = table[v * 8 + u] as number;
}

/** What turns one MCU row's component planes into output rows, in either path. */
export type RowEmitter = {
  plan: ProgressivePlan;
  g: Geometry;
  planes: Uint8Array[];
  columnMaps: Int32Array[];
  sourceRows: Int32Array;
  rgba: Uint8Array;
  outWidth: number;
  outHeight: number;
  /** YCbCr rows, the common case, by the TypeScript or the WebAssembly converter, into `rgba`. */
  yccRow: (sourceRows: Int32Array) => void;
  row: (rgba: Uint8Array) => void;
};

/** Emits the output rows of the MCU row in the planes (vMax·N, fewer at the bottom); answers the rows emitted in all. */
export function emitMcuRows(e: RowEmitter, emitted: number): number {
  const { plan, g, sourceRows } = e;
  const kind = colourModel(plan);
  const inverted = plan.adobeTransform !== null;
  const rowsHere = g.vMax * plan.n;
  let done = emitted;
  for (let ry = 0; ry < rowsHere && done < e.outHeight; ry += 1) {
    for (let ci = 0; ci < g.components.length; ci += 1)
      sourceRows[ci] = sourceRow(g.components[ci] as GeometryComponent, g.vMax, plan.n, ry);
    if (kind === "ycc") e.yccRow(sourceRows);
    else otherRow(kind, inverted, plan.inkRows === true, e.planes, sourceRows, e.columnMaps, e.rgba, e.outWidth);
    e.row(e.rgba);
    done += 1;
  }
  return done;
}

/** The TypeScript path from the stores to the rows. */
export function emitRows(
  plan: ProgressivePlan,
  g: Geometry,
  stores: Store[],
  quant: (Uint16Array | undefined)[],
  row: (rgba: Uint8Array) => void,
): void {
  const { n } = plan;
  const outWidth = Math.ceil((plan.width * n) / 8);
  const matrices = g.components.map((c) => idctMatrix(c.n));
  const planes = g.components.map((c) => new Uint8Array(c.paddedPerLine * c.n * c.v * c.n));
  const tables = g.components.map((c) => {
    const q = new Float64Array(c.slots);
    cornerQuantisers(quant[c.tq], c.n, q);
    return q;
  });
  const columnMaps = g.components.map((c) => {
    const map = new Int32Array(outWidth);
    fillColumnMap(map, c, g.hMax, n);
    return map;
  });
  const work = new Float64Array(2 * 64);
  const rowEnds = new Int32Array(8);
  const rgba = new Uint8Array(outWidth * 4);
  const [p0, p1, p2] = planes as [Uint8Array, Uint8Array, Uint8Array];
  const [m0, m1, m2] = columnMaps as [Int32Array, Int32Array, Int32Array];
  const emitter: RowEmitter = {
    plan,
    g,
    planes,
    columnMaps,
    sourceRows: new Int32Array(g.components.length),
    rgba,
    outWidth,
    outHeight: Math.ceil((plan.height * n) / 8),
    yccRow: (sourceRows) => yccRow(p0, p1, p2, sourceRows, m0, m1, m2, rgba, outWidth),
    row,
  };
  let emitted = 0;
  for (let my = 0; my < g.mcusPerColumn && emitted < emitter.outHeight; my += 1) {
    g.components.forEach((c, ci) => {
      const block = { coefficients: (stores[ci] as Store).coefficients, q: tables[ci] as Float64Array };
      idctMcuRow(c, my, block, matrices[ci] as Float64Array, work, rowEnds, planes[ci] as Uint8Array);
    });
    emitted = emitMcuRows(emitter, emitted);
  }
}

/** The IDCT of component c's blocks in MCU row `my` into its plane (v rows of N_c-high block rows). */
function idctMcuRow(
  c: GeometryComponent,
  my: number,
  block: { coefficients: Int16Array; q: Float64Array },
  matrix: Float64Array,
  work: Float64Array,
  rowEnds: Int32Array,
  plane: Uint8Array,
): void {
  const planeWidth = c.paddedPerLine * c.n;
  for (let v = 0; v < c.v; v += 1) {
    const first = (my * c.v + v) * c.paddedPerLine * c.slots;
    for (let bx = 0; bx < c.paddedPerLine; bx += 1) {
      const target = v * c.n * planeWidth + bx * c.n;
      idctBlock(
        block.coefficients,
        first + bx * c.slots,
        block.q,
        matrix,
        c.n,
        work,
        rowEnds,
        plane,
        target,
        planeWidth,
      );
    }
  }
}

/**
 * Dequantises one block's N×N corner and writes its N-point IDCT (level-shifted, clamped, rounded) into
 * `plane` at `target` with stride `stride`. Rows of zero coefficients are skipped, and a block with only a DC
 * term (common once N is small) is filled directly; the arithmetic is the same as the full transform.
 */
function idctBlock(
  coefficients: Int16Array,
  base: number,
  q: Float64Array,
  matrix: Float64Array,
  n: number,
  work: Float64Array,
  rowEnds: Int32Array,
  plane: Uint8Array,
  target: number,
  stride: number,
): void {
  const slots = n * n;
  // Dequantise, noting the last row holding a non-zero coefficient and each row's last non-zero column.
  let lastRow = -1;
  for (let vy = 0; vy < n; vy += 1) {
    let lastU = -1;
    for (let u = 0; u < n; u += 1) {
      const value = (coefficients[base + vy * n + u] as number) * (q[vy * n + u] as number);
      work[vy * n + u] = value;
      if (value !== 0) lastU = u;
    }
    rowEnds[vy] = lastU;
    if (lastU >= 0) lastRow = vy;
  }
  if (lastRow <= 0 && (rowEnds[0] as number) <= 0) {
    // Only a DC term: M[x][0] is the same for every x, so every sample is 128 + M[0][0]·(F00·Q00·M[0][0]).
    const m0 = matrix[0] as number;
    const sum = 128 + m0 * ((work[0] as number) * m0);
    const value = sum < 0 ? 0 : sum > 255 ? 255 : (sum + 0.5) | 0;
    for (let y = 0; y < n; y += 1) {
      const out = target + y * stride;
      for (let x = 0; x < n; x += 1) plane[out + x] = value;
    }
    return;
  }
  // Rows first: partial[vy][x] = Σu F[vy][u]·M[x][u] (work[slots..]); then columns. Terms known to be zero
  // are skipped, which leaves every sum exactly as the full transform computes it.
  for (let vy = 0; vy <= lastRow; vy += 1) {
    const p = slots + vy * n;
    const lastU = rowEnds[vy] as number;
    for (let x = 0; x < n; x += 1) {
      let sum = 0;
      for (let u = 0; u <= lastU; u += 1) sum += (work[vy * n + u] as number) * (matrix[x * n + u] as number);
      work[p + x] = sum;
    }
  }
  for (let y = 0; y < n; y += 1) {
    const out = target + y * stride;
    for (let x = 0; x < n; x += 1) {
      let sum = 128;
      for (let vy = 0; vy <= lastRow; vy += 1)
        sum += (matrix[y * n + vy] as number) * (work[slots + vy * n + x] as number);
      plane[out + x] = sum < 0 ? 0 : sum > 255 ? 255 : (sum + 0.5) | 0;
    }
  }
}

/**
 * YCbCr → RGBA for one output row (the common case, kept free of per-pixel branches on the colour model), in
 * libjpeg's 16-bit fixed point (jdcolor.c: FIX(1.402) = 91881, FIX(0.34414) = 22554, FIX(0.71414) = 46802,
 * FIX(1.772) = 116130), as the WebAssembly core does.
 */
function yccRow(
  p0: Uint8Array,
  p1: Uint8Array,
  p2: Uint8Array,
  sourceRows: Int32Array,
  m0: Int32Array,
  m1: Int32Array,
  m2: Int32Array,
  rgba: Uint8Array,
  width: number,
): void {
  const r0 = sourceRows[0] as number;
  const r1 = sourceRows[1] as number;
  const r2 = sourceRows[2] as number;
  for (let x = 0; x < width; x += 1) {
    const y = p0[r0 + (m0[x] as number)] as number;
    const cb = (p1[r1 + (m1[x] as number)] as number) - 128;
    const cr = (p2[r2 + (m2[x] as number)] as number) - 128;
    const r = y + ((91881 * cr + 32768) >> 16);
    const g = y + ((-22554 * cb - 46802 * cr + 32768) >> 16);
    const b = y + ((116130 * cb + 32768) >> 16);
    const o = x * 4;
    rgba[o] = Math.max(0, Math.min(255, r));
    rgba[o + 1] = Math.max(0, Math.min(255, g));
    rgba[o + 2] = Math.max(0, Math.min(255, b));
    rgba[o + 3] = 255;
  }
}

function otherRow(
  kind: ReturnType<typeof colourModel>,
  inverted: boolean,
  inkRows: boolean,
  planes: Uint8Array[],
  sourceRows: Int32Array,
  columnMaps: Int32Array[],
  rgba: Uint8Array,
  width: number,
): void {
  const sample = (ci: number, x: number) =>
    (planes[ci] as Uint8Array)[(sourceRows[ci] as number) + ((columnMaps[ci] as Int32Array)[x] as number)] as number;
  for (let x = 0; x < width; x += 1) {
    let r: number;
    let gg: number;
    let b: number;
    if (kind === "gray") {
      r = gg = b = sample(0, x);
    } else if (kind === "rgb") {
      r = sample(0, x);
      gg = sample(1, x);
      b = sample(2, x);
    } else if (inkRows) {
      const o = x * 4;
      if (kind === "cmyk") {
        rgba[o] = sample(0, x);
        rgba[o + 1] = sample(1, x);
        rgba[o + 2] = sample(2, x);
      } else {
        // YCCK: YCbCr of the inverted CMY bytes, as libjpeg turns it back.
        const y = sample(0, x);
        const cb = sample(1, x) - 128;
        const cr = sample(2, x) - 128;
        rgba[o] = 255 - clamp(y + 1.402 * cr);
        rgba[o + 1] = 255 - clamp(y - 0.344136 * cb - 0.714136 * cr);
        rgba[o + 2] = 255 - clamp(y + 1.772 * cb);
      }
      rgba[o + 3] = sample(3, x);
      continue;
    } else if (kind === "cmyk") {
      const k = sample(3, x);
      r = cmykChannel(sample(0, x), k, inverted);
      gg = cmykChannel(sample(1, x), k, inverted);
      b = cmykChannel(sample(2, x), k, inverted);
    } else {
      const y = sample(0, x);
      const cb = sample(1, x) - 128;
      const cr = sample(2, x) - 128;
      // YCCK is YCbCr of inverted CMY plus K; Adobe stores all four inverted.
      const k = sample(3, x);
      r = ((255 - clamp(y + 1.402 * cr)) * k) / 255;
      gg = ((255 - clamp(y - 0.344136 * cb - 0.714136 * cr)) * k) / 255;
      b = ((255 - clamp(y + 1.772 * cb)) * k) / 255;
    }
    const o = x * 4;
    rgba[o] = clamp(r);
    rgba[o + 1] = clamp(gg);
    rgba[o + 2] = clamp(b);
    rgba[o + 3] = 255;
  }
}

function clamp(value: number): number {
  return value < 0 ? 0 : value > 255 ? 255 : Math.round(value);
}
