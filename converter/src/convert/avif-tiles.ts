import type { GridLayout } from "./avif-grid";

/**
 * How a picture too large for one AVIF encoding is cut into a grid's tiles (avif.ts, avif-grid.ts): equal tiles
 * within the encoder's pixel budget, the right column and bottom row padded by repeating their edge pixels.
 */

/** MIAF 7.3.11.4.2: a grid's tiles are at least 64 pixels wide and high. */
const minTileEdge = 64;
/** HEIF allows 256 columns and rows. */
const maxTilesPerEdge = 256;

/** `value` rounded up to a multiple of `step`. */
function roundUp(value: number, step: number): number {
  return Math.ceil(value / step) * step;
}

/** Tiles at most this much longer than wide or the other way: near the shapes whose memory was measured. */
const maxTileAspect = 2.5;

/** Every layout of tiles within `maxTilePixels` covering `width × height`, the last column and row overlapping it. */
function candidateLayouts(width: number, height: number, maxTilePixels: number, step: 1 | 2): GridLayout[] {
  const layouts: GridLayout[] = [];
  for (let columns = 1; columns <= Math.min(maxTilesPerEdge, width); columns += 1) {
    const tileWidth = Math.max(minTileEdge, roundUp(Math.ceil(width / columns), step));
    if ((columns - 1) * tileWidth >= width) break;
    for (let rows = 1; rows <= Math.min(maxTilesPerEdge, height); rows += 1) {
      const tileHeight = Math.max(minTileEdge, roundUp(Math.ceil(height / rows), step));
      if ((rows - 1) * tileHeight >= height) break;
      if (tileWidth * tileHeight <= maxTilePixels)
        layouts.push({ columns, rows, tileWidth, tileHeight, width, height });
    }
  }
  return layouts;
}

/** Fewest tiles (each an encoding), then the shortest seams between them, then the least padding. */
function cost(layout: GridLayout): number[] {
  const { columns, rows, tileWidth, tileHeight, width, height } = layout;
  const seams = (columns - 1) * height + (rows - 1) * width;
  return [columns * rows, seams, columns * tileWidth * rows * tileHeight];
}

function cheaper(a: GridLayout, b: GridLayout): boolean {
  const [costA, costB] = [cost(a), cost(b)];
  const differs = costA.findIndex((value, i) => value !== costB[i]);
  return differs >= 0 && (costA[differs] as number) < (costB[differs] as number);
}

/**
 * The layout of a grid of tiles of at most `maxTilePixels` covering `width × height`: fewest tiles, then
 * shortest seams, then least padding; tiles no more than {@link maxTileAspect} times longer than wide (unless
 * nothing else fits). `step` is 2 for 4:2:0, whose grid tiles have even widths and heights (MIAF 7.3.11.4.2),
 * 1 otherwise. The last column and row overlap the picture (no tile is only padding), as MIAF asks.
 */
export function gridLayout(width: number, height: number, maxTilePixels: number, step: 1 | 2): GridLayout {
  const all = candidateLayouts(width, height, maxTilePixels, step);
  const aspect = ({ tileWidth, tileHeight }: GridLayout) => Math.max(tileWidth / tileHeight, tileHeight / tileWidth);
  const shapely = all.filter((layout) => aspect(layout) <= maxTileAspect);
  const best = (shapely.length > 0 ? shapely : all).reduce<GridLayout | null>(
    (found, layout) => (!found || cheaper(layout, found) ? layout : found),
    null,
  );
  if (!best) throw new RangeError(`${width} × ${height} cannot be cut into tiles of at most ${maxTilePixels} pixels`);
  return best;
}

/**
 * The RGBA pixels of tile (`column`, `row`) of `rgba` (the whole picture) into `tile`: beyond the picture's
 * right and bottom edges, its last pixel of each row and its last row repeated, so the padding the grid crops
 * costs few bits and leaves no edge for the encoder to smear into the picture.
 */
export function cutTile(rgba: Uint8Array, layout: GridLayout, column: number, row: number, tile: Uint8Array): void {
  const { width, height, tileWidth, tileHeight } = layout;
  const [left, top] = [column * tileWidth, row * tileHeight];
  const inside = Math.min(tileWidth, width - left);
  for (let y = 0; y < tileHeight; y += 1) {
    const sourceRow = Math.min(top + y, height - 1);
    const from = (sourceRow * width + left) * 4;
    const to = y * tileWidth * 4;
    tile.set(rgba.subarray(from, from + inside * 4), to);
    const edge = rgba.subarray(from + (inside - 1) * 4, from + inside * 4);
    for (let x = inside; x < tileWidth; x += 1) tile.set(edge, to + x * 4);
  }
}

/** Whether every pixel of `rgba` is opaque. */
export function isOpaque(rgba: Uint8Array): boolean {
  for (let i = 3; i < rgba.length; i += 4) if (rgba[i] !== 255) return false;
  return true;
}

/**
 * Makes an opaque tile of a picture with alpha carry an alpha plane: the encoder leaves alpha out of an opaque
 * image, and a grid's tiles must all have it or none. Its last pixel (in the cropped padding when the tile has
 * any) becomes alpha 254, a difference no one sees and the lossy alpha coding mostly rounds away.
 */
export function keepAlphaPlane(tile: Uint8Array): void {
  tile[tile.length - 1] = 254;
}
