/** A single byte range of an object of known size, or why the Range header cannot be served. */
type ByteRange = { offset: number; length: number };

/**
 * Kept by hand, not left to R2's `get(key, { range: request.headers })`: R2 (workerd 2026-11) answers an
 * unsatisfiable range (`bytes=5000-` of 1000 bytes, `bytes=-0`) with the whole object and the same
 * `range` it gives an ignored one, so it cannot tell 416 from 200; and HEAD and 416 are answered from
 * `head()` alone, before any bytes are read.
 *
 * Parses a `Range` header for an object of `size` bytes. Returns null to serve the whole object
 * (no header, another unit, several ranges: RFC 9110 lets a server ignore those), or "unsatisfiable".
 */
export function parseRange(header: string | undefined, size: number): ByteRange | "unsatisfiable" | null {
  if (!header) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return null;
  const [, startText = "", endText = ""] = match;
  if (startText === "" && endText === "") return null;
  if (startText === "") {
    const suffix = Number(endText);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    const length = Math.min(suffix, size);
    return { offset: size - length, length };
  }
  const start = Number(startText);
  if (start >= size) return "unsatisfiable";
  const end = endText === "" ? size - 1 : Math.min(Number(endText), size - 1);
  if (end < start) return null;
  return { offset: start, length: end - start + 1 };
}
