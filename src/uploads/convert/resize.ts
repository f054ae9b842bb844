/**
 * The output size of a conversion. The downscaling itself (an area average consuming source rows one at a
 * time, on premultiplied alpha) runs inside the codec's WebAssembly memory: wasm/webp/resize.c, reached
 * through `WebpCodec.createResizer`.
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
