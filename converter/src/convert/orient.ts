import type { Orientation } from "./exif";

/**
 * Applies an EXIF orientation to an RGBA image in place, so no second image-sized buffer is needed.
 * Returns the upright dimensions. Orientations 5–8 are a transpose followed by a flip; the transpose
 * follows the permutation's cycles, marking visited pixels in a bitmap of one bit per pixel.
 */
export function orientInPlace(
  pixels: Uint8Array,
  width: number,
  height: number,
  orientation: Orientation,
): { width: number; height: number } {
  if (orientation === 1) return { width, height };
  if (pixels.byteOffset % 4 !== 0) throw new RangeError("pixel buffer must be 4-byte aligned");
  const words = new Uint32Array(pixels.buffer, pixels.byteOffset, width * height);
  switch (orientation) {
    case 2:
      flipHorizontal(words, width, height);
      return { width, height };
    case 3:
      words.reverse();
      return { width, height };
    case 4:
      flipVertical(words, width, height);
      return { width, height };
    case 5:
      transpose(words, width, height);
      return { width: height, height: width };
    case 6:
      transpose(words, width, height);
      flipHorizontal(words, height, width);
      return { width: height, height: width };
    case 7:
      transpose(words, width, height);
      words.reverse();
      return { width: height, height: width };
    case 8:
      transpose(words, width, height);
      flipVertical(words, height, width);
      return { width: height, height: width };
  }
}

function flipHorizontal(words: Uint32Array, width: number, height: number): void {
  for (let y = 0; y < height; y += 1) words.subarray(y * width, (y + 1) * width).reverse();
}

function flipVertical(words: Uint32Array, width: number, height: number): void {
  const row = new Uint32Array(width);
  for (let top = 0, bottom = height - 1; top < bottom; top += 1, bottom -= 1) {
    row.set(words.subarray(top * width, (top + 1) * width));
    words.copyWithin(top * width, bottom * width, (bottom + 1) * width);
    words.set(row, bottom * width);
  }
}

/** Row-major `width × height` becomes row-major `height × width`: element i moves to (i·height) mod (n−1). */
function transpose(words: Uint32Array, width: number, height: number): void {
  const n = width * height;
  if (width === 1 || height === 1) return;
  const last = n - 1;
  const visited = new Uint8Array((n + 7) >> 3);
  for (let start = 1; start < last; start += 1) {
    if ((visited[start >> 3] as number) & (1 << (start & 7))) continue;
    let index = start;
    let carried = words[start] as number;
    do {
      const target = (index * height) % last;
      const displaced = words[target] as number;
      words[target] = carried;
      carried = displaced;
      visited[target >> 3] = (visited[target >> 3] as number) | (1 << (target & 7));
      index = target;
    } while (index !== start);
  }
}
