/**
 * The output size of a conversion. The downscaling itself (an area average consuming source rows one at a
 * time, on premultiplied alpha) runs inside the codec's WebAssembly memory: converter/wasm/webp/resize.c, reached
 * through `WebpCodec.createResizer`.
 */

/**
 * Target dimensions that keep the aspect ratio, never upscale, and fit `maxEdge` on the long edge: the long
 * edge is exactly `maxEdge` and the short edge rounded (±1 px of the exact ratio, at least one pixel).
 */
export function fitWithin(width: number, height: number, maxEdge: number): { width: number; height: number } {
  if (Math.max(width, height) <= maxEdge) return { width, height };
  return width >= height
    ? { width: maxEdge, height: Math.max(1, Math.round((height * maxEdge) / width)) }
    : { width: Math.max(1, Math.round((width * maxEdge) / height)), height: maxEdge };
}
