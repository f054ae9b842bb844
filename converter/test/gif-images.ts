import { GifReader, GifWriter } from "omggif";
import { expect } from "vitest";
import { ByteReader } from "../src/convert/byte-reader";
import { UnconvertibleImageError } from "../src/convert/errors";
import { decodeGifRows, type GifWork, scanGif, truncatedGif } from "../src/convert/gif";

/**
 * The GIF tests' files and readers (gif.test.ts, gif-hostile.test.ts). Every GIF there is made by code:
 * omggif's writer for ordinary files, the helpers below for the rest.
 */

/** A stream of `size`-byte chunks, so chunk boundaries fall inside headers, tables and sub-blocks. */
function chunkedStream(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

export const readerOf = (bytes: Uint8Array, chunkSize?: number) =>
  new ByteReader(chunkSize ? chunkedStream(bytes, chunkSize) : bytes, truncatedGif);

type Decoded = { width: number; height: number; frames: number; rgba: Uint8Array; rows: number; work: GifWork };

/** Scans, then decodes from a second reader as the pipeline does; gathers the rows into one picture. */
export async function decode(bytes: Uint8Array, chunkSize?: number): Promise<Decoded> {
  const scan = await scanGif(readerOf(bytes, chunkSize));
  const rgba = new Uint8Array(scan.width * scan.height * 4);
  const work: GifWork = { steps: 0 };
  let rows = 0;
  await decodeGifRows(
    readerOf(bytes, chunkSize),
    (row) => {
      expect(row.length).toBe(scan.width * 4);
      rgba.set(row, rows * scan.width * 4);
      rows += 1;
    },
    work,
  );
  return { width: scan.width, height: scan.height, frames: scan.frames, rgba, rows, work };
}

/** omggif's reading of the first frame on a transparent canvas (what the pipeline did before). */
export function omggifFirstFrame(bytes: Uint8Array): Uint8Array {
  const reader = new GifReader(bytes);
  const canvas = new Uint8Array(reader.width * reader.height * 4);
  reader.decodeAndBlitFrameRGBA(0, canvas);
  return canvas;
}

type FrameSpec = {
  x: number;
  y: number;
  width: number;
  height: number;
  indices: ArrayLike<number>;
  palette?: number[];
  transparent?: number;
};

export function writeGif(
  width: number,
  height: number,
  palette: number[] | undefined,
  frames: FrameSpec[],
): Uint8Array {
  const buffer = new Uint8Array(1 << 20);
  const writer = new GifWriter(buffer, width, height, palette ? { palette } : {});
  for (const frame of frames) {
    const options = { palette: frame.palette, transparent: frame.transparent };
    writer.addFrame(frame.x, frame.y, frame.width, frame.height, Array.from(frame.indices), options);
  }
  return buffer.slice(0, writer.end());
}

export const pattern = (width: number, height: number, colours: number) =>
  Array.from({ length: width * height }, (_, i) => ((i % width) * 3 + Math.floor(i / width) * 5 + (i % 7)) % colours);

export const palette16 = Array.from(
  { length: 16 },
  (_, i) => ((i * 16) << 16) | ((255 - i * 9) << 8) | ((i * 37) & 255),
);

/** Offset of the first image descriptor of a file (after the screen, global table and extensions). */
export function firstDescriptor(bytes: Uint8Array): number {
  const packed = bytes[10] as number;
  let at = 13 + (packed & 0x80 ? 3 * (2 << (packed & 7)) : 0);
  while (bytes[at] === 0x21) {
    at += 2;
    while (bytes[at] !== 0) at += (bytes[at] as number) + 1;
    at += 1;
  }
  expect(bytes[at]).toBe(0x2c);
  return at;
}

/** Frame rows in the order an interlaced GIF stores them (passes starting at rows 0, 4, 2, 1). */
export function interlacedRowOrder(height: number): number[] {
  const order: number[] = [];
  for (const [start, step] of [
    [0, 8],
    [4, 8],
    [2, 4],
    [1, 2],
  ] as const) {
    for (let y = start; y < height; y += step) order.push(y);
  }
  return order;
}

/** Reorders `indices` (row by row) into interlaced storage order. */
export function interlace(indices: ArrayLike<number>, width: number, height: number): Uint8Array {
  const out = new Uint8Array(width * height);
  interlacedRowOrder(height).forEach((y, i) => {
    for (let x = 0; x < width; x += 1) out[i * width + x] = indices[y * width + x] as number;
  });
  return out;
}

/**
 * LZW image data (code size byte, ≤ 255-byte sub-blocks, terminator) as encoders write it; with
 * `clearWhenFull: false` a full table is kept and coding goes on without adding (a "deferred clear").
 */
export function lzwData(indices: ArrayLike<number>, minCodeSize: number, clearWhenFull = true): number[] {
  const clearCode = 1 << minCodeSize;
  const dictionary = new Int32Array(4096 * 256).fill(-1);
  let codeSize = minCodeSize + 1;
  let nextCode = clearCode + 2;
  const packed: number[] = [];
  let bits = 0;
  let bitCount = 0;
  const put = (code: number) => {
    bits |= code << bitCount;
    bitCount += codeSize;
    while (bitCount >= 8) {
      packed.push(bits & 255);
      bits >>>= 8;
      bitCount -= 8;
    }
  };
  put(clearCode);
  let current = indices[0] as number;
  for (let i = 1; i < indices.length; i += 1) {
    const index = indices[i] as number;
    const found = dictionary[current * 256 + index] as number;
    if (found >= 0) {
      current = found;
      continue;
    }
    put(current);
    if (nextCode < 4096) {
      if (nextCode >= 1 << codeSize) codeSize += 1;
      dictionary[current * 256 + index] = nextCode;
      nextCode += 1;
    } else if (clearWhenFull) {
      put(clearCode);
      dictionary.fill(-1);
      codeSize = minCodeSize + 1;
      nextCode = clearCode + 2;
    }
    current = index;
  }
  put(current);
  put(clearCode + 1);
  if (bitCount > 0) packed.push(bits & 255);
  return [minCodeSize, ...subBlocks(packed)];
}

/** Splits data into length-prefixed sub-blocks of at most 255 bytes, then the zero terminator. */
export function subBlocks(data: number[]): number[] {
  const out: number[] = [];
  for (let at = 0; at < data.length; at += 255) {
    const block = data.slice(at, at + 255);
    out.push(block.length, ...block);
  }
  out.push(0);
  return out;
}

/** 3-bit codes (code size 2) packed LSB first, for hand-made streams shorter than the first width change. */
export function threeBitCodes(codes: number[]): number[] {
  const out: number[] = [];
  let bits = 0;
  let bitCount = 0;
  for (const code of codes) {
    bits |= code << bitCount;
    bitCount += 3;
    while (bitCount >= 8) {
      out.push(bits & 255);
      bits >>>= 8;
      bitCount -= 8;
    }
  }
  if (bitCount > 0) out.push(bits & 255);
  return [2, ...subBlocks(out)];
}

export const u16 = (value: number) => [value & 255, value >> 8];
export const signature = [0x47, 0x49, 0x46, 0x38, 0x39, 0x61]; // GIF89a

/** Header and logical screen with a global table of `colours` entries (grey ramp). */
export function screenBytes(width: number, height: number, colours: number): number[] {
  const sizeBits = Math.log2(colours) - 1;
  const table = Array.from({ length: colours }, (_, i) => {
    const grey = Math.round((i * 255) / (colours - 1));
    return [grey, grey, grey];
  }).flat();
  return [...signature, ...u16(width), ...u16(height), 0x80 | sizeBits, 0, 0, ...table];
}

export function descriptorBytes(left: number, top: number, width: number, height: number, packed = 0): number[] {
  return [0x2c, ...u16(left), ...u16(top), ...u16(width), ...u16(height), packed];
}

/** Screen 100 × 100, two colours; a frame claiming 65535 × 65535 whose data is only clear + end: 34 bytes. */
export function frameBomb(frames: number, interlaced = false): Uint8Array {
  const frame = [...descriptorBytes(0, 0, 65535, 65535, interlaced ? 0x40 : 0), ...threeBitCodes([4, 5])];
  return Uint8Array.from([...screenBytes(100, 100, 2), ...Array(frames).fill(frame).flat(), 0x3b]);
}

export async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UnconvertibleImageError);
  return (error as Error).message;
}
