// The coarse picture the corpus compares (scripts/corpus-reference.mjs writes it for libvips and Chromium,
// test/uploads/corpus.test.ts computes it of the Worker's WebP): one module, so both sides agree.

/** Cells per edge of the grid (fewer for smaller images: one pixel a cell). */
const GRID = 8;

/**
 * Per-cell means of R·A, G·A, B·A (premultiplied, so colour under transparent pixels does not count) and A, of
 * RGBA pixels; cells split the image at floor(i · size / cells).
 */
export function grid(rgba, width, height) {
  const cols = Math.min(GRID, width);
  const rows = Math.min(GRID, height);
  const cells = [];
  for (let r = 0; r < rows; r += 1)
    for (let c = 0; c < cols; c += 1) {
      const x0 = Math.floor((c * width) / cols);
      const x1 = Math.floor(((c + 1) * width) / cols);
      const y0 = Math.floor((r * height) / rows);
      const y1 = Math.floor(((r + 1) * height) / rows);
      const sum = [0, 0, 0, 0];
      for (let y = y0; y < y1; y += 1)
        for (let x = x0; x < x1; x += 1) {
          const i = (y * width + x) * 4;
          const a = rgba[i + 3];
          sum[0] += (rgba[i] * a) / 255;
          sum[1] += (rgba[i + 1] * a) / 255;
          sum[2] += (rgba[i + 2] * a) / 255;
          sum[3] += a;
        }
      const n = (x1 - x0) * (y1 - y0);
      for (const v of sum) cells.push(v / n);
    }
  return { cols, rows, cells };
}

/** Mean absolute difference per channel (R, G, B, A) between two grids of one shape, to 0.1. */
export function gridDifference(a, b) {
  const out = [0, 0, 0, 0];
  for (let i = 0; i < a.cells.length; i += 1) out[i % 4] += Math.abs(a.cells[i] - b.cells[i]);
  return out.map((v) => Math.round((v / (a.cells.length / 4)) * 10) / 10);
}
