/**
 * Memory budget of a conversion, from measurements (docs/conversion.md). WebAssembly memory never
 * shrinks, and the pipeline keeps one instance of each codec per isolate, so what the isolate carries is the
 * sum of each instance's high-water mark. Every limit below keeps its own instance under its share, so the
 * sum stays under ~110 MB of the isolate's 128 MB whatever sequence of images one isolate converts.
 */

export const megabyte = 1_000_000;

/**
 * Output area cap, 2560 × 1600 (4.1 MP). libwebp's encoder needs 11–13 bytes per output pixel (pure noise
 * at quality 80 is the worst case: 52 MB at this area), and its memory grows in +20% steps; at 2560 × 1920
 * the worst case reached 68 MB. So the long edge reaches 2560 for 16:10 and wider; a 4:3 photo gets 2336 × 1752.
 */
export const maxOutputPixels = 2560 * 1600;

/** Highest accepted quality: the encoder's memory share was measured at quality 80 (higher needs more). */
export const maxQuality = 80;

/**
 * Output area cap for images with real transparency: libwebp codes alpha with its lossless coder, which
 * needs ~22–35 bytes per pixel, so transparent images get fewer pixels within the same encoder memory.
 */
export const maxTransparentOutputPixels = 1_500_000;

/** The encoder is grown once, by encoding 2560 × 1600 of noise at quality 80, to this size (measured 56.95 MB). */
export const encoderShareBytes = 57 * megabyte;

/** libjpeg-turbo's memory, which is also the pixel arena of every format. */
export const arenaShareBytes = 40 * megabyte;

/** The WebP decoder's memory: the file plus its full-size RGBA. */
export const webpDecoderShareBytes = 13 * megabyte;

/** Never decode more source pixels than this, whatever the memory would allow (decoding time). */
export const maxSourcePixels = 100_000_000;

/** Fixed allowance for libjpeg's own tables and row buffers during a baseline decode. */
export const libjpegOverheadBytes = 2 * megabyte;

/** Interlaced PNGs and GIFs are decoded at full size into the arena, 4 bytes per pixel. */
export const maxFullSizePixels = Math.floor((arenaShareBytes - 1 * megabyte) / 4);

/** "12.3 MB" for messages. */
export function formatMegabytes(bytes: number): string {
  return `${(bytes / megabyte).toFixed(1)} MB`;
}

/** "24 megapixels" / "9.7 megapixels" for messages. */
export function formatMegapixels(pixels: number): string {
  const value = pixels / 1_000_000;
  return `${Number.isInteger(value) ? value : value.toFixed(1)} megapixels`;
}

/** Longest edge of any source image: bounds a row (a BMP or PNG row is read whole) whatever the area. */
export const maxSourceEdge = 65_535;

/**
 * Largest `MAX_IMAGE_EDGE` the conversion's memory plan holds: a 2560 × 2560 target and its encoding fit
 * the codec's share; a larger edge would not fit the isolate whatever the input.
 */
export const maxSupportedEdge = 2560;
