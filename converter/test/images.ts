import avifDecoderFactory from "@jsquash/avif/codec/dec/avif_dec.js";
import avifDecoderWasm from "@jsquash/avif/codec/dec/avif_dec.wasm";
import jpegEncoderFactory from "@jsquash/jpeg/codec/enc/mozjpeg_enc.js";
import jpegEncoderWasm from "@jsquash/jpeg/codec/enc/mozjpeg_enc.wasm";
import { defaultOptions as jpegDefaults } from "@jsquash/jpeg/meta";
import webpDecoderFactory from "@jsquash/webp/codec/dec/webp_dec.js";
import webpDecoderWasm from "@jsquash/webp/codec/dec/webp_dec.wasm";
import webpEncoderFactory from "@jsquash/webp/codec/enc/webp_enc.js";
import webpEncoderWasm from "@jsquash/webp/codec/enc/webp_enc.wasm";
import { defaultOptions as webpDefaults } from "@jsquash/webp/meta";
import { concatBytes } from "../../src/lib/encoding";

/** Test images made from code: real encoders (MozJPEG) and small writers, so every byte is known. */

type Emscripten = { encode?: unknown; decode?: unknown };
function instantiate<T extends Emscripten>(factory: unknown, module: WebAssembly.Module): Promise<T> {
  return (factory as (o: object) => Promise<T>)({
    noInitialRun: true,
    instantiateWasm: (imports: WebAssembly.Imports, done: (i: WebAssembly.Instance) => void) => {
      const instance = new WebAssembly.Instance(module, imports);
      done(instance);
      return instance.exports;
    },
  });
}

type JpegEncoder = { encode(data: Uint8Array, w: number, h: number, o: object): Uint8Array };
type WebpDecoder = { decode(data: Uint8Array): { data: Uint8ClampedArray; width: number; height: number } | null };
let jpegEncoder: Promise<JpegEncoder> | undefined;
let webpDecoder: Promise<WebpDecoder> | undefined;
type WebpEncoder = { encode(data: Uint8Array, w: number, h: number, o: object): Uint8Array | null };
let webpEncoder: Promise<WebpEncoder> | undefined;

/** RGBA pixels with a function per pixel. */
export function paint(
  width: number,
  height: number,
  colour: (x: number, y: number) => [number, number, number, number?],
) {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const [r, g, b, a = 255] = colour(x, y);
      data.set([r, g, b, a], (y * width + x) * 4);
    }
  }
  return data;
}

/** Photo-like content: smooth gradients, edges and fine noise (what phone photos cost an encoder). */
export function photoLike(width: number, height: number): Uint8Array {
  const data = new Uint8Array(width * height * 4);
  let seed = 12345;
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      const noise = (seed >>> 27) - 16;
      const i = (y * width + x) * 4;
      const ring = Math.sin(Math.hypot(x - width / 3, y - height / 2) / 40) * 60;
      data[i] = Math.max(0, Math.min(255, (x * 255) / width + noise));
      data[i + 1] = Math.max(0, Math.min(255, 128 + ring + noise));
      data[i + 2] = Math.max(0, Math.min(255, (y * 255) / height - noise));
      data[i + 3] = 255;
    }
  }
  return data;
}

/** Quadrants red (top left), green (top right), blue (bottom left), white (bottom right). */
export const quadrantColours = {
  topLeft: [255, 0, 0],
  topRight: [0, 255, 0],
  bottomLeft: [0, 0, 255],
  bottomRight: [255, 255, 255],
} as const;
export function quadrants(width: number, height: number): Uint8Array {
  return paint(width, height, (x, y) => {
    const top = y < height / 2;
    const left = x < width / 2;
    return [
      ...(top
        ? left
          ? quadrantColours.topLeft
          : quadrantColours.topRight
        : left
          ? quadrantColours.bottomLeft
          : quadrantColours.bottomRight),
    ] as [number, number, number];
  });
}

/** Encodes RGBA as a JPEG with MozJPEG: baseline or progressive (with successive approximation scans). */
export async function encodeJpeg(
  rgba: Uint8Array,
  width: number,
  height: number,
  options: { progressive: boolean; quality?: number; grayscale?: boolean; chromaSubsample?: number },
): Promise<Uint8Array> {
  jpegEncoder ??= instantiate<JpegEncoder>(jpegEncoderFactory, jpegEncoderWasm);
  const encoder = await jpegEncoder;
  const out = encoder.encode(rgba, width, height, {
    ...jpegDefaults,
    quality: options.quality ?? 85,
    progressive: options.progressive,
    baseline: !options.progressive,
    color_space: options.grayscale ? 1 : 3,
    auto_subsample: false,
    chroma_subsample: options.chromaSubsample ?? 2,
  });
  return new Uint8Array(out);
}

/** Inserts an EXIF APP1 segment carrying `orientation` right after the JPEG's SOI marker. */
export function withExifOrientation(jpeg: Uint8Array, orientation: number, bigEndian = false): Uint8Array {
  const tiff = new Uint8Array(26);
  const view = new DataView(tiff.buffer);
  const little = !bigEndian;
  tiff.set(bigEndian ? [0x4d, 0x4d] : [0x49, 0x49]);
  view.setUint16(2, 42, little);
  view.setUint32(4, 8, little);
  view.setUint16(8, 1, little);
  view.setUint16(10, 0x0112, little);
  view.setUint16(12, 3, little);
  view.setUint32(14, 1, little);
  view.setUint16(18, orientation, little);
  view.setUint32(22, 0, little);
  const body = new Uint8Array([0x45, 0x78, 0x69, 0x66, 0, 0, ...tiff]);
  const segment = new Uint8Array([0xff, 0xe1, (body.length + 2) >> 8, (body.length + 2) & 255, ...body]);
  const out = new Uint8Array(jpeg.length + segment.length);
  out.set(jpeg.subarray(0, 2));
  out.set(segment, 2);
  out.set(jpeg.subarray(2), 2 + segment.length);
  return out;
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = (crcTable[(c ^ b) & 255] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
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

async function deflate(raw: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([raw]).stream().pipeThrough(new CompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * Writes a PNG. `samples(x, y)` gives the raw channel values for the colour type (palette index, gray,
 * gray+alpha, RGB, RGBA) at the bit depth; rows use a rotating filter so every filter type is exercised.
 */
export async function writePng(options: {
  width: number;
  height: number;
  colorType: 0 | 2 | 3 | 4 | 6;
  bitDepth: 1 | 2 | 4 | 8 | 16;
  samples: (x: number, y: number) => number[];
  palette?: number[][];
  transparency?: number[];
  interlaced?: boolean;
  filter?: number;
  extraChunks?: Uint8Array[];
}): Promise<Uint8Array> {
  const { width, height, colorType, bitDepth } = options;
  const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType];
  const bpp = Math.max(1, (channels * bitDepth) >> 3);
  const passes = options.interlaced
    ? [
        [0, 0, 8, 8],
        [4, 0, 8, 8],
        [0, 4, 4, 8],
        [2, 0, 4, 4],
        [0, 2, 2, 4],
        [1, 0, 2, 2],
        [0, 1, 1, 2],
      ]
    : [[0, 0, 1, 1]];
  const lines: number[] = [];
  let rowIndex = 0;
  for (const [x0, y0, dx, dy] of passes as [number, number, number, number][]) {
    const pw = Math.ceil((width - x0) / dx);
    const ph = Math.ceil((height - y0) / dy);
    if (pw <= 0 || ph <= 0) continue;
    const lineLength = Math.ceil((pw * channels * bitDepth) / 8);
    let previous = new Uint8Array(lineLength);
    for (let j = 0; j < ph; j += 1) {
      const raw = new Uint8Array(lineLength);
      let bit = 0;
      for (let i = 0; i < pw; i += 1) {
        for (const value of options.samples(x0 + i * dx, y0 + j * dy)) {
          if (bitDepth === 16) {
            raw[bit >> 3] = value >> 8;
            raw[(bit >> 3) + 1] = value & 255;
          } else if (bitDepth === 8) {
            raw[bit >> 3] = value;
          } else {
            raw[bit >> 3] = (raw[bit >> 3] as number) | (value << (8 - bitDepth - (bit & 7)));
          }
          bit += bitDepth;
        }
      }
      const filter = options.filter ?? rowIndex % 5;
      rowIndex += 1;
      lines.push(filter);
      for (let i = 0; i < lineLength; i += 1) {
        const a = i >= bpp ? (raw[i - bpp] as number) : 0;
        const b = previous[i] as number;
        const c = i >= bpp ? (previous[i - bpp] as number) : 0;
        const p = a + b - c;
        const predictor = [
          0,
          a,
          b,
          (a + b) >> 1,
          Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
            ? a
            : Math.abs(p - b) <= Math.abs(p - c)
              ? b
              : c,
        ][filter] as number;
        lines.push(((raw[i] as number) - predictor) & 255);
      }
      previous = raw;
    }
  }
  const header = new Uint8Array(13);
  new DataView(header.buffer).setUint32(0, width);
  new DataView(header.buffer).setUint32(4, height);
  header.set([bitDepth, colorType, 0, 0, options.interlaced ? 1 : 0], 8);
  const parts = [
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    ...(options.extraChunks ?? []),
    ...(options.palette ? [chunk("PLTE", Uint8Array.from(options.palette.flat()))] : []),
    ...(options.transparency ? [chunk("tRNS", Uint8Array.from(options.transparency))] : []),
    chunk("IDAT", await deflate(Uint8Array.from(lines))),
    chunk("IEND", new Uint8Array(0)),
  ];
  return concat(parts);
}

/** A PNG chunk, for tests that add eXIf or damage a file. */
export const pngChunk = chunk;

/** Writes a PNG from RGBA pixels quickly (filter 0), for large images. */
export async function writeRgbaPng(rgba: Uint8Array, width: number, height: number): Promise<Uint8Array> {
  const raw = new Uint8Array((width * 4 + 1) * height);
  for (let y = 0; y < height; y += 1)
    raw.set(rgba.subarray(y * width * 4, (y + 1) * width * 4), y * (width * 4 + 1) + 1);
  const header = new Uint8Array(13);
  new DataView(header.buffer).setUint32(0, width);
  new DataView(header.buffer).setUint32(4, height);
  header.set([8, 6, 0, 0, 0], 8);
  return concat([
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", await deflate(raw)),
    chunk("IEND", new Uint8Array(0)),
  ]);
}

/** The project's one concatenation (src/lib/encoding.ts), under the name these tests use. */
export const concat = concatBytes;

/**
 * Decodes WebP with @jsquash/webp's decoder (independent of the pipeline's), checking the RIFF header first.
 * The tags are compared as bytes: the RIFF size between them is binary, and read as text its bytes may form
 * one character (0xC4 0x80) and shift "WEBP".
 */
export async function decodeWebp(
  bytes: Uint8Array,
): Promise<{ data: Uint8ClampedArray; width: number; height: number }> {
  const tag = (at: number) => String.fromCharCode(...bytes.subarray(at, at + 4));
  if (tag(0) !== "RIFF" || tag(8) !== "WEBP") throw new Error(`not a RIFF WebP: ${tag(0)} ${tag(8)}`);
  webpDecoder ??= instantiate<WebpDecoder>(webpDecoderFactory, webpDecoderWasm);
  const result = (await webpDecoder).decode(bytes);
  if (!result) throw new Error("WebP did not decode");
  return result;
}

type AvifDecoder = {
  decode(data: Uint8Array, bitDepth: number): { data: Uint8ClampedArray; width: number; height: number } | null;
};
let avifDecoder: Promise<AvifDecoder> | undefined;

/** Decodes an AVIF with libavif's decoder (@jsquash/avif's build, dav1d), checking its `ftyp` brand first. */
export async function decodeAvif(
  bytes: Uint8Array,
): Promise<{ data: Uint8ClampedArray; width: number; height: number }> {
  const tag = (at: number) => String.fromCharCode(...bytes.subarray(at, at + 4));
  if (tag(4) !== "ftyp" || tag(8) !== "avif") throw new Error(`not an AVIF: ${tag(4)} ${tag(8)}`);
  avifDecoder ??= instantiate<AvifDecoder>(avifDecoderFactory, avifDecoderWasm);
  const result = (await avifDecoder).decode(bytes, 8);
  if (!result) throw new Error("AVIF did not decode");
  return result;
}

/**
 * Encodes RGBA as a WebP with libwebp's own encoder (@jsquash/webp's build): its defaults with `options` over
 * them (WebPConfig's fields: `lossless`, `quality`, `exact`, ...).
 */
export async function encodeWebp(
  rgba: Uint8Array,
  width: number,
  height: number,
  options: Partial<typeof webpDefaults>,
): Promise<Uint8Array> {
  webpEncoder ??= instantiate<WebpEncoder>(webpEncoderFactory, webpEncoderWasm);
  const out = (await webpEncoder).encode(rgba, width, height, { ...webpDefaults, ...options });
  if (!out) throw new Error("WebP encoding failed");
  return new Uint8Array(out);
}

/**
 * The definition the resizer implements, computed directly in float64: each target pixel is the average of
 * the source over its footprint, weighted by the overlap area; colour weighted by alpha as well (premultiplied).
 */
export function areaAverage(
  source: Uint8Array | Uint8ClampedArray,
  sw: number,
  sh: number,
  tw: number,
  th: number,
  channels: 3 | 4,
) {
  const out = new Uint8Array(tw * th * 4);
  const rx = sw / tw;
  const ry = sh / th;
  const overlap = (index: number, from: number, to: number) => Math.min(index + 1, to) - Math.max(index, from);
  for (let y = 0; y < th; y += 1)
    for (let x = 0; x < tw; x += 1) {
      const sums = [0, 0, 0, 0];
      let area = 0;
      for (let sy = Math.floor(y * ry); sy < Math.min(sh, (y + 1) * ry); sy += 1)
        for (let sx = Math.floor(x * rx); sx < Math.min(sw, (x + 1) * rx); sx += 1) {
          const w = overlap(sy, y * ry, (y + 1) * ry) * overlap(sx, x * rx, (x + 1) * rx);
          const i = (sy * sw + sx) * channels;
          const alpha = channels === 4 ? (source[i + 3] as number) : 255;
          for (let c = 0; c < 3; c += 1) sums[c] = (sums[c] as number) + (source[i + c] as number) * alpha * w;
          sums[3] = (sums[3] as number) + alpha * w;
          area += w;
        }
      const o = (y * tw + x) * 4;
      const alphaSum = sums[3] as number;
      for (let c = 0; c < 3; c += 1) out[o + c] = alphaSum > 0 ? Math.round((sums[c] as number) / alphaSum) : 0;
      out[o + 3] = Math.round(alphaSum / area);
    }
  return out;
}

/** The RGB of pixel (x, y) of decoded RGBA. */
export function pixelAt(
  image: { data: Uint8ClampedArray | Uint8Array; width: number },
  x: number,
  y: number,
): number[] {
  const i = (y * image.width + x) * 4;
  return Array.from(image.data.subarray(i, i + 3));
}

/** Whether two colours are within `tolerance` per channel. */
export function near(actual: readonly number[], expected: readonly number[], tolerance = 40): boolean {
  return expected.every((v, i) => Math.abs((actual[i] as number) - v) <= tolerance);
}

/** The mean absolute difference of two RGBA pictures' colour channels (alpha left out), in levels. */
export function meanDifference(a: Uint8ClampedArray, b: Uint8ClampedArray): number {
  let total = 0;
  for (let i = 0; i < a.length; i += 1) if (i % 4 !== 3) total += Math.abs((a[i] as number) - (b[i] as number));
  return total / ((a.length / 4) * 3);
}
