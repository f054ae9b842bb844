import { rgbaToThumbHash } from "thumbhash";
import { toBase64 } from "../../../src/lib/encoding";

/**
 * A converted image's placeholder and dominant colour (docs/conversion.md, "Placeholders"), from the pixels the
 * conversion already holds: the decoded target in the codec's memory, read once before the encoder takes it.
 * Nothing is decoded a second time.
 *
 * ThumbHash takes at most 100 × 100 pixels and keeps only the lowest frequencies (7 on the long edge). The
 * target (up to 2560 px on its long edge) is reduced to a grid of at most 32 cells on its long edge, each cell
 * the alpha-weighted mean of a stratified sample of at most 8 × 8 of its pixels (every pixel when a cell is at
 * most 8 px across). The hash is the one a 100-px grid gives (to a unit in one coefficient, measured), and
 * reading 49,000 pixels of a 2560 × 1920 target instead of 4.9 million, and a DCT over 768 cells instead of
 * 7,500, keeps the cost per complete under a millisecond (`npm run bench:avif`).
 */

/** The placeholder of an image: its ThumbHash (base64, alpha kept) and its colour, lowercase `#rrggbb`. */
export type Placeholder = { placeholder: string; dominantColor: string };

/** Longest edge of the grid handed to ThumbHash (at most its limit, 100). */
const gridEdge = 32;
/** Samples per cell along each axis, at most. */
const samplesPerAxis = 8;

/** Where the `count` samples along an axis of `cells` cells over `size` pixels fall: pixel indices per cell. */
function sampleCoordinates(size: number, cells: number): Int32Array[] {
  const per = Math.min(samplesPerAxis, Math.max(1, Math.ceil(size / cells)));
  const out: Int32Array[] = [];
  for (let cell = 0; cell < cells; cell++) {
    const start = (cell * size) / cells;
    const span = ((cell + 1) * size) / cells - start;
    const at = new Int32Array(per);
    for (let i = 0; i < per; i++) at[i] = Math.min(size - 1, Math.floor(start + ((i + 0.5) * span) / per));
    out.push(at);
  }
  return out;
}

function hex(value: number): string {
  return Math.round(Math.min(255, Math.max(0, value)))
    .toString(16)
    .padStart(2, "0");
}

/**
 * The placeholder of an RGBA image `width × height` (not premultiplied). The dominant colour is the mean of its
 * colour weighted by alpha (a fully transparent image's is black): what the sample's cells sum to.
 */
export function placeholderOf(rgba: Uint8Array, width: number, height: number): Placeholder {
  const scale = Math.min(1, gridEdge / Math.max(width, height));
  const cellsX = Math.max(1, Math.round(width * scale));
  const cellsY = Math.max(1, Math.round(height * scale));
  const xs = sampleCoordinates(width, cellsX);
  const ys = sampleCoordinates(height, cellsY);
  const pixels = new Uint32Array(rgba.buffer, rgba.byteOffset, width * height);
  const grid = new Uint8Array(cellsX * cellsY * 4);
  let [red, green, blue, alpha] = [0, 0, 0, 0];
  for (let cy = 0; cy < cellsY; cy++) {
    const rows = ys[cy] as Int32Array;
    for (let cx = 0; cx < cellsX; cx++) {
      const columns = xs[cx] as Int32Array;
      let [r, g, b, a] = [0, 0, 0, 0];
      for (const y of rows) {
        const row = y * width;
        for (const x of columns) {
          const pixel = pixels[row + x] as number; // little-endian: R in the low byte, A in the high one
          const weight = pixel >>> 24;
          r += (pixel & 0xff) * weight;
          g += ((pixel >>> 8) & 0xff) * weight;
          b += ((pixel >>> 16) & 0xff) * weight;
          a += weight;
        }
      }
      const at = (cy * cellsX + cx) * 4;
      const n = rows.length * columns.length;
      grid[at] = a ? Math.round(r / a) : 0;
      grid[at + 1] = a ? Math.round(g / a) : 0;
      grid[at + 2] = a ? Math.round(b / a) : 0;
      grid[at + 3] = Math.round(a / n);
      // Cells are the same size and sampled alike, so the image's mean is their sums added up.
      [red, green, blue, alpha] = [red + r, green + g, blue + b, alpha + a];
    }
  }
  const hash = rgbaToThumbHash(cellsX, cellsY, grid);
  const dominantColor = alpha ? `#${hex(red / alpha)}${hex(green / alpha)}${hex(blue / alpha)}` : "#000000";
  return { placeholder: toBase64(hash), dominantColor };
}
