/**
 * The conversion's memory plan (docs/conversion.md), from measurements. WebAssembly memory never shrinks and
 * the pipeline keeps its two instances for the isolate's life, so the isolate carries the sum of their
 * high-water marks; admission, decided from headers before anything is allocated, keeps each instance under
 * its share whatever sequence of images one isolate converts. With the JS side (the encoded file, at most
 * ~2.2 bytes per output pixel, and the app's own heap) the sum stays under ~110 MiB of the isolate's 128 MiB.
 */

const megabyte = 1_000_000;

/** Highest accepted quality: the codec's memory was measured up to quality 85 (higher needs more). */
export const maxQuality = 85;

/**
 * The scratch arena (the prebuilt libjpeg-turbo's memory, made only for a progressive JPEG): the file and the
 * progressive decoder's coefficients. A baseline JPEG decodes inside the codec and needs none.
 */
export const scratchShareBytes = 40 * megabyte;

/** Fixed allowance for libjpeg's own tables and row buffers, outside the scratch block. */
export const libjpegOverheadBytes = 2 * megabyte;

/**
 * What a progressive JPEG's scratch may grow to when its plan (file + coefficients) does not fit the share: a
 * 24 MP 4:4:4 file of 17 MB beside its 26.3 MB of coefficients needs ~44 MB. Bounded so that this scratch, a
 * JPEG conversion's codec (≤ 44.4 MB measured, at 2560 × 2560 with a 3.2 MB profile) and its JS side (the
 * app's heap, the encoded photo, the widths an isolate keeps) stay within ~110 MiB: 46 + 44.4 + ~23 MB. A
 * grown scratch is kept for later JPEGs and let go by the next conversion of another kind (instances.ts),
 * whose codec may fill its whole share.
 */
export const largeJpegScratchBytes = 46 * megabyte;

/**
 * Our libwebp build's memory: the target image, a lossy WebP input file (a lossless one streams through a
 * window), and the encoding (5.6 bytes per output pixel + 2 MiB: 38.8 MB at 2560 × 2560).
 */
export const codecShareBytes = 48 * megabyte;

/**
 * What a lossless or transparent WebP's decoding may take of the codec's memory past the codec's share: the
 * codec's cap (80 MiB, build.sh) less its first 2 MiB (static data, the fallback CMYK profile among it) and a
 * margin. Lossless: target, libwebp's ARGB plane (4 bytes per source pixel), its tables and a window of the
 * streamed file (never the file: 12 MP takes 48 MB of plane + 19.7 MB of 2560 × 1920 target + 2 MiB of window
 * + tables, whatever the file's size); lossy with alpha: file, target and 6 bytes per source pixel. Such a
 * conversion lets go of the scratch instance, and the next JPEG of the grown codec (instances.ts), so the isolate
 * never holds this beside the scratch.
 */
export const largeWebpCodecBytes = 81 * megabyte;

/**
 * What a baseline JPEG's decoding may take of the codec's memory past its share, for the same reason and on
 * the same terms as a large WebP: the file is read whole beside the target (a 12 MP file with 30 MB of other
 * segments does not fit the share), the scratch is let go first, and the grown codec by the next JPEG.
 */
export const largeJpegCodecBytes = largeWebpCodecBytes;

/**
 * Largest `MAX_IMAGE_EDGE` the plan holds: a 2560 × 2560 target and its encoding fit the codec's share with
 * room for a WebP input file; a larger edge would not fit the isolate whatever the input. Kept in the contract
 * with the API, whose configuration refuses a larger edge.
 */
export { maxSupportedEdge } from "../../../src/converter/contract";

/** Never decode more source pixels than this, whatever the memory would allow (decoding time). */
export const maxSourcePixels = 100_000_000;

/** Longest edge of any source image: bounds a row (a BMP or PNG row is read whole) whatever the area. */
export const maxSourceEdge = 65_535;

/** "12.3 MB" for messages. */
export function formatMegabytes(bytes: number): string {
  return `${(bytes / megabyte).toFixed(1)} MB`;
}

/** "24 megapixels" / "9.7 megapixels" for messages. */
export function formatMegapixels(pixels: number): string {
  const value = pixels / 1_000_000;
  return `${Number.isInteger(value) ? value : value.toFixed(1)} megapixels`;
}
