import { thumbHashToRGBA } from "thumbhash";
import { concatBytes, toBase64 } from "../lib/encoding";

/**
 * `placeholder_url`: a converted image's ThumbHash rendered as a `data:image/png;base64,` URL of at most
 * {@link maxPlaceholderUrlLength} characters, which a page can put in an `<img src>` or hand to Next.js as
 * `blurDataURL` before the image's first byte arrives (docs/responsive-images.md, "Placeholders").
 *
 * ThumbHash renders at most 32 px on its long edge; uncompressed, that PNG is 3 to 5 kB. The URL is kept short
 * by drawing the render smaller (area average, colour weighted by alpha) until its uncompressed PNG fits: about
 * 16 × 12 px for an opaque image (RGB), 14 × 10 with alpha (RGBA). A placeholder is blurred by whoever shows it,
 * so no detail is lost that a page would show, and a PNG without compression is a few lines of code that
 * always produces the same bytes.
 */

export const maxPlaceholderUrlLength = 1000;
const prefix = "data:image/png;base64,";
/** PNG bytes besides the pixel rows: signature, IHDR, IDAT's framing, zlib's header and stored block, IEND. */
const pngOverhead = 8 + 25 + 12 + 2 + 5 + 4 + 12;

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}

/** The largest size of the render's aspect whose PNG (`channels` bytes a pixel) keeps the URL within bounds. */
function fittingSize(width: number, height: number, channels: number): { width: number; height: number } {
  const maxPngBytes = Math.floor(((maxPlaceholderUrlLength - prefix.length) / 4) * 3);
  for (let w = width; w > 1; w -= 1) {
    const h = Math.max(1, Math.round((height * w) / width));
    if (pngOverhead + h * (1 + w * channels) <= maxPngBytes) return { width: w, height: h };
  }
  return { width: 1, height: 1 };
}

/** `rgba` (`w × h`, not premultiplied) reduced to `size` by area average, colour weighted by alpha. */
function reduce(rgba: Uint8Array, w: number, h: number, size: { width: number; height: number }): Uint8Array {
  const out = new Uint8Array(size.width * size.height * 4);
  const [rx, ry] = [w / size.width, h / size.height];
  const overlap = (i: number, from: number, to: number) => Math.min(i + 1, to) - Math.max(i, from);
  for (let y = 0; y < size.height; y += 1)
    for (let x = 0; x < size.width; x += 1) {
      const sums = [0, 0, 0, 0];
      let area = 0;
      for (let sy = Math.floor(y * ry); sy < Math.min(h, (y + 1) * ry); sy += 1)
        for (let sx = Math.floor(x * rx); sx < Math.min(w, (x + 1) * rx); sx += 1) {
          const weight = overlap(sy, y * ry, (y + 1) * ry) * overlap(sx, x * rx, (x + 1) * rx);
          const at = (sy * w + sx) * 4;
          const alpha = (rgba[at + 3] as number) * weight;
          for (let c = 0; c < 3; c += 1) sums[c] = (sums[c] as number) + (rgba[at + c] as number) * alpha;
          sums[3] = (sums[3] as number) + alpha;
          area += weight;
        }
      const o = (y * size.width + x) * 4;
      const alphaSum = sums[3] as number;
      for (let c = 0; c < 3; c += 1) out[o + c] = alphaSum > 0 ? Math.round((sums[c] as number) / alphaSum) : 0;
      out[o + 3] = Math.round(alphaSum / area);
    }
  return out;
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = (crcTable[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function adler32(bytes: Uint8Array): number {
  let [a, b] = [1, 0];
  for (const byte of bytes) [a, b] = [(a + byte) % 65521, (b + a + byte) % 65521];
  return ((b << 16) | a) >>> 0;
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** A PNG of `rgba` (`width × height`), RGB or RGBA, its rows unfiltered in one stored deflate block. */
function png(rgba: Uint8Array, width: number, height: number, alpha: boolean): Uint8Array {
  const channels = alpha ? 4 : 3;
  const rows = new Uint8Array(height * (1 + width * channels)); // filter byte 0 (none) before every row
  for (let y = 0, at = 0; y < height; y += 1) {
    at += 1;
    for (let x = 0; x < width; x += 1, at += channels)
      rows.set(rgba.subarray((y * width + x) * 4, (y * width + x) * 4 + channels), at);
  }
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  header.set([8, alpha ? 6 : 2, 0, 0, 0], 8);
  const zlib = new Uint8Array(2 + 5 + rows.length + 4);
  const zview = new DataView(zlib.buffer);
  zlib.set([0x78, 0x01, 0x01], 0); // zlib header; a final stored block
  zview.setUint16(3, rows.length, true);
  zview.setUint16(5, ~rows.length & 0xffff, true);
  zlib.set(rows, 7);
  zview.setUint32(7 + rows.length, adler32(rows));
  return concatBytes([
    new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk("IHDR", header),
    chunk("IDAT", zlib),
    chunk("IEND", new Uint8Array(0)),
  ]);
}

/** The data URL of a ThumbHash (base64): RGB when every pixel of its render is opaque, RGBA otherwise. */
export function placeholderUrl(placeholder: string): string {
  const render = thumbHashToRGBA(fromBase64(placeholder));
  const rgba = Uint8Array.from(render.rgba);
  let alpha = false;
  for (let i = 3; i < rgba.length; i += 4) if (rgba[i] !== 255) alpha = true;
  const size = fittingSize(render.w, render.h, alpha ? 4 : 3);
  const pixels = reduce(rgba, render.w, render.h, size);
  return `${prefix}${toBase64(png(pixels, size.width, size.height, alpha))}`;
}
