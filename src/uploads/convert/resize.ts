/**
 * Area-average downscaling that consumes source rows one at a time, so a decoder never has to hold the
 * whole source image. Averaging happens on premultiplied alpha, so the colour of fully transparent
 * pixels does not bleed into their neighbours.
 */

/**
 * Target dimensions that keep the aspect ratio, never upscale, and fit `maxEdge` on the long edge and
 * `maxArea` in total. When the edge is what binds, the long edge is exactly `maxEdge` and the short edge is
 * rounded (±1 px of the exact ratio); when the area binds, both are floored so the area is never exceeded.
 */
export function fitWithin(
  width: number,
  height: number,
  maxEdge: number,
  maxArea = Number.POSITIVE_INFINITY,
): { width: number; height: number } {
  const edgeScale = maxEdge / Math.max(width, height);
  const areaScale = Math.sqrt(maxArea / (width * height));
  if (edgeScale >= 1 && areaScale >= 1) return { width, height };
  if (edgeScale <= areaScale) {
    return width >= height
      ? { width: maxEdge, height: Math.max(1, Math.round((height * maxEdge) / width)) }
      : { width: Math.max(1, Math.round((width * maxEdge) / height)), height: maxEdge };
  }
  // max(1, …) keeps very thin images at least one pixel wide.
  return { width: Math.max(1, Math.floor(width * areaScale)), height: Math.max(1, Math.floor(height * areaScale)) };
}

/** Source-pixel spans and weights of each output column, computed once per conversion. */
function horizontalTaps(sourceWidth: number, targetWidth: number) {
  const ratio = sourceWidth / targetWidth;
  const starts = new Int32Array(targetWidth);
  const counts = new Int32Array(targetWidth);
  const weights: number[] = [];
  for (let x = 0; x < targetWidth; x += 1) {
    const left = x * ratio;
    const right = Math.min(sourceWidth, (x + 1) * ratio);
    const first = Math.floor(left);
    starts[x] = weights.length;
    let count = 0;
    for (let source = first; source < right; source += 1) {
      const overlap = Math.min(source + 1, right) - Math.max(source, left);
      if (overlap <= 1e-9) continue;
      if (count === 0) starts[x] = weights.length;
      weights.push(source, overlap);
      count += 1;
    }
    counts[x] = count;
  }
  return { starts, counts, taps: Float64Array.from(weights) };
}

/** A downscaler fed with RGBA source rows top to bottom; writes RGBA rows of the target into `out`. */
export type RowDownscaler = {
  /** Adds source row `row` (RGBA, at least `sourceWidth * 4` bytes from `offset`). */
  push(row: Uint8Array, offset?: number): void;
  /** Number of source rows consumed so far. */
  readonly rowsPushed: number;
  /** Whether any written target pixel has alpha below 255. */
  readonly sawTransparency: boolean;
};

/**
 * Creates a downscaler from `sourceWidth × sourceHeight` to `targetWidth × targetHeight` writing into `out`.
 * `out` may overlap the source rows when both live in one buffer (in-place reduction): output row y is
 * written only after source row (y+1)·ratio − 1 ≥ y has been read, so unread source rows are never overwritten.
 */
export function createRowDownscaler(
  sourceWidth: number,
  sourceHeight: number,
  targetWidth: number,
  targetHeight: number,
  out: Uint8Array,
): RowDownscaler {
  if (targetWidth > sourceWidth || targetHeight > sourceHeight) throw new RangeError("downscaler never upscales");
  const { starts, counts, taps } = horizontalTaps(sourceWidth, targetWidth);
  const ratioY = sourceHeight / targetHeight;
  const columnWidths = new Float64Array(targetWidth);
  for (let x = 0; x < targetWidth; x += 1) {
    let total = 0;
    const begin = starts[x] as number;
    for (let t = begin; t < begin + (counts[x] as number) * 2; t += 2) total += taps[t + 1] as number;
    columnWidths[x] = total;
  }

  const horizontal = new Float64Array(targetWidth * 4);
  let current = new Float64Array(targetWidth * 4);
  let next = new Float64Array(targetWidth * 4);
  let weightCurrent = 0;
  let weightNext = 0;
  let outputRow = 0;
  let rowsPushed = 0;
  let sawTransparency = false;

  const reduceRow = (row: Uint8Array, offset: number) => {
    for (let x = 0; x < targetWidth; x += 1) {
      let r = 0;
      let g = 0;
      let b = 0;
      let a = 0;
      const begin = starts[x] as number;
      const end = begin + (counts[x] as number) * 2;
      for (let t = begin; t < end; t += 2) {
        const i = offset + (taps[t] as number) * 4;
        const w = taps[t + 1] as number;
        const alpha = (row[i + 3] as number) * w;
        r += (row[i] as number) * alpha;
        g += (row[i + 1] as number) * alpha;
        b += (row[i + 2] as number) * alpha;
        a += alpha;
      }
      const o = x * 4;
      horizontal[o] = r;
      horizontal[o + 1] = g;
      horizontal[o + 2] = b;
      horizontal[o + 3] = a;
    }
  };

  const emit = (sums: Float64Array, rowWeight: number) => {
    const base = outputRow * targetWidth * 4;
    for (let x = 0; x < targetWidth; x += 1) {
      const o = x * 4;
      const a = sums[o + 3] as number;
      const area = rowWeight * (columnWidths[x] as number);
      const i = base + o;
      if (a <= 0) {
        out[i] = 0;
        out[i + 1] = 0;
        out[i + 2] = 0;
        out[i + 3] = 0;
        sawTransparency = true;
        continue;
      }
      out[i] = Math.min(255, Math.round((sums[o] as number) / a));
      out[i + 1] = Math.min(255, Math.round((sums[o + 1] as number) / a));
      out[i + 2] = Math.min(255, Math.round((sums[o + 2] as number) / a));
      const alpha = Math.min(255, Math.round(a / area));
      out[i + 3] = alpha;
      if (alpha < 255) sawTransparency = true;
    }
    outputRow += 1;
  };

  return {
    push(row, offset = 0) {
      if (rowsPushed >= sourceHeight) throw new RangeError("more rows than the source height");
      const y = rowsPushed;
      rowsPushed += 1;
      reduceRow(row, offset);
      const bottom = Math.min(sourceHeight, (outputRow + 1) * ratioY);
      const inCurrent = Math.min(y + 1, bottom) - y;
      if (inCurrent > 0) {
        for (let i = 0; i < current.length; i += 1)
          current[i] = (current[i] as number) + (horizontal[i] as number) * inCurrent;
        weightCurrent += inCurrent;
      }
      const rest = 1 - Math.max(0, inCurrent);
      if (rest > 1e-9 && outputRow + 1 < targetHeight) {
        for (let i = 0; i < next.length; i += 1) next[i] = (next[i] as number) + (horizontal[i] as number) * rest;
        weightNext += rest;
      }
      if (y + 1 >= bottom - 1e-9 || rowsPushed === sourceHeight) {
        emit(current, weightCurrent);
        [current, next] = [next, current];
        next.fill(0);
        weightCurrent = weightNext;
        weightNext = 0;
      }
    },
    get rowsPushed() {
      return rowsPushed;
    },
    get sawTransparency() {
      return sawTransparency;
    },
  };
}

/**
 * The same area average for sources that are opaque by their format (JPEG, PNG without alpha or tRNS, BMP
 * without an alpha mask): no alpha weighting, taps pre-divided by their span and Float32 sums, so there is
 * no division per pixel. About 3× faster than the general downscaler, within one level of its output.
 */
export function createOpaqueRowDownscaler(
  sourceWidth: number,
  sourceHeight: number,
  targetWidth: number,
  targetHeight: number,
  out: Uint8Array,
): RowDownscaler {
  if (targetWidth > sourceWidth || targetHeight > sourceHeight) throw new RangeError("downscaler never upscales");
  const ratioX = sourceWidth / targetWidth;
  const firstSource = new Int32Array(targetWidth);
  const tapCount = new Int32Array(targetWidth);
  const weights: number[] = [];
  for (let x = 0; x < targetWidth; x += 1) {
    const left = x * ratioX;
    const right = Math.min(sourceWidth, (x + 1) * ratioX);
    firstSource[x] = Math.floor(left);
    let count = 0;
    for (let source = Math.floor(left); source < right; source += 1) {
      weights.push((Math.min(source + 1, right) - Math.max(source, left)) / (right - left));
      count += 1;
    }
    tapCount[x] = count;
  }
  const taps = Float32Array.from(weights);
  const ratioY = sourceHeight / targetHeight;
  const horizontal = new Float32Array(targetWidth * 3);
  let sums = new Float32Array(targetWidth * 3);
  let carried = new Float32Array(targetWidth * 3);
  let outputRow = 0;
  let rowsPushed = 0;
  const rowSpan = (row: number) => Math.min(sourceHeight, (row + 1) * ratioY) - row * ratioY;

  return {
    push(row, offset = 0) {
      if (rowsPushed >= sourceHeight) throw new RangeError("more rows than the source height");
      const y = rowsPushed;
      rowsPushed += 1;
      for (let x = 0, k = 0; x < targetWidth; x += 1) {
        let r = 0;
        let g = 0;
        let b = 0;
        let i = offset + (firstSource[x] as number) * 4;
        for (let t = tapCount[x] as number; t > 0; t -= 1, i += 4, k += 1) {
          const w = taps[k] as number;
          r += (row[i] as number) * w;
          g += (row[i + 1] as number) * w;
          b += (row[i + 2] as number) * w;
        }
        horizontal[x * 3] = r;
        horizontal[x * 3 + 1] = g;
        horizontal[x * 3 + 2] = b;
      }
      const top = outputRow * ratioY;
      const bottom = Math.min(sourceHeight, (outputRow + 1) * ratioY);
      const inCurrent = (Math.min(y + 1, bottom) - Math.max(y, top)) / (bottom - top);
      for (let i = 0; i < sums.length; i += 1) sums[i] = (sums[i] as number) + (horizontal[i] as number) * inCurrent;
      // A source row straddling an output row's bottom gives the rest of its weight to the next output row.
      const rest = y + 1 - bottom;
      if (rest > 1e-9 && outputRow + 1 < targetHeight) {
        const share = rest / rowSpan(outputRow + 1);
        for (let i = 0; i < carried.length; i += 1) carried[i] = (horizontal[i] as number) * share;
      }
      if (y + 1 >= bottom - 1e-9 || rowsPushed === sourceHeight) {
        const base = outputRow * targetWidth * 4;
        for (let x = 0; x < targetWidth; x += 1) {
          const o = base + x * 4;
          out[o] = (sums[x * 3] as number) + 0.5;
          out[o + 1] = (sums[x * 3 + 1] as number) + 0.5;
          out[o + 2] = (sums[x * 3 + 2] as number) + 0.5;
          out[o + 3] = 255;
        }
        outputRow += 1;
        [sums, carried] = [carried, sums];
        carried.fill(0);
      }
    },
    get rowsPushed() {
      return rowsPushed;
    },
    sawTransparency: false,
  };
}
