/** EXIF orientation 1..8 (1 = upright); anything unreadable counts as upright, as browsers do. */
export type Orientation = 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8;

/** Reads the orientation tag (0x0112) of IFD0 from a TIFF block (the body of an `Exif\0\0` segment or chunk). */
function tiffOrientation(tiff: Uint8Array): Orientation {
  if (tiff.length < 8) return 1;
  const little = tiff[0] === 0x49 && tiff[1] === 0x49;
  const big = tiff[0] === 0x4d && tiff[1] === 0x4d;
  if (!little && !big) return 1;
  const view = new DataView(tiff.buffer, tiff.byteOffset, tiff.byteLength);
  if (view.getUint16(2, little) !== 42) return 1;
  const ifd = view.getUint32(4, little);
  if (ifd + 2 > tiff.length) return 1;
  const entries = view.getUint16(ifd, little);
  for (let i = 0; i < entries; i += 1) {
    const entry = ifd + 2 + i * 12;
    if (entry + 12 > tiff.length) return 1;
    if (view.getUint16(entry, little) !== 0x0112) continue;
    // SHORT (type 3) with count 1 keeps its value in the first two bytes of the value field.
    if (view.getUint16(entry + 2, little) !== 3) return 1;
    const value = view.getUint16(entry + 8, little);
    return value >= 1 && value <= 8 ? (value as Orientation) : 1;
  }
  return 1;
}

/** Reads the orientation from an `Exif\0\0`-prefixed payload (JPEG APP1, WebP EXIF) or a bare TIFF block (PNG eXIf). */
export function exifOrientation(payload: Uint8Array): Orientation {
  const hasPrefix =
    payload.length >= 6 &&
    payload[0] === 0x45 &&
    payload[1] === 0x78 &&
    payload[2] === 0x69 &&
    payload[3] === 0x66 &&
    payload[4] === 0 &&
    payload[5] === 0;
  return tiffOrientation(hasPrefix ? payload.subarray(6) : payload);
}
