import { constants, deflateSync, type ZlibOptions } from "node:zlib";
import { describe, expect, it } from "vitest";
import { convertToWebp } from "../src/convert";
import { createWebpCodec } from "../src/convert/webp-codec";
import codecWasm from "../src/convert/webp-codec.wasm";
import { concat, pngChunk } from "./images";

// The codec inflates PNG image data (and iCCP profiles) with zlib's inflate() around our own inflate_fast
// (wasm/webp/inflate-fast.c: 64-bit bit buffer, matches copied 16 bytes or one repeating pattern at a time,
// zlib's own loop near the end of a buffer). Whatever zlib writes must come back byte for byte.

/** Every way zlib writes a stream: its strategies (fixed and dynamic codes, RLE, literals only), levels, windows. */
const writers: { name: string; options: ZlibOptions }[] = [
  { name: "default", options: {} },
  { name: "level 1", options: { level: 1 } },
  { name: "level 9, memLevel 9", options: { level: 9, memLevel: 9 } },
  { name: "filtered", options: { strategy: constants.Z_FILTERED } },
  { name: "RLE", options: { strategy: constants.Z_RLE } },
  { name: "fixed codes", options: { strategy: constants.Z_FIXED } },
  { name: "Huffman only", options: { strategy: constants.Z_HUFFMAN_ONLY } },
  { name: "512-byte window", options: { windowBits: 9 } },
  { name: "level 0 (stored)", options: { level: 0 } },
];

/** mulberry32, so every run makes the same bytes. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Bytes that make zlib write matches of every distance from 1 to 40 (the pattern copies) at lengths up to and
 * past 258, long and short runs at distances up to 32 KiB, and literals between them.
 */
function matchHeavy(size: number, seed: number): Uint8Array {
  const next = random(seed);
  const bytes = new Uint8Array(size);
  let at = 0;
  while (at < size) {
    const kind = Math.floor(next() * 4);
    const length = Math.min(size - at, 3 + Math.floor(next() * 300));
    if (kind === 0 || at < 64) {
      for (let i = 0; i < length; i += 1) bytes[at + i] = Math.floor(next() * 256);
    } else if (kind === 1) {
      const period = 1 + Math.floor(next() * Math.min(40, at));
      for (let i = 0; i < length; i += 1) bytes[at + i] = bytes[at + i - period] as number;
    } else {
      const distance = 1 + Math.floor(next() * Math.min(kind === 2 ? 32_768 : 300, at));
      for (let i = 0; i < length; i += 1) bytes[at + i] = bytes[at + i - distance] as number;
    }
    at += length;
  }
  return bytes;
}

/** A stream the codec's profile inflater takes: its first four bytes give the whole size (big-endian). */
function sized(bytes: Uint8Array): Uint8Array {
  new DataView(bytes.buffer, bytes.byteOffset).setUint32(0, bytes.length);
  return bytes;
}

describe("inflate: every stream zlib writes comes back byte for byte", () => {
  it("inflates matches of every distance and length, in every strategy, level and window size, exactly", () => {
    const codec = createWebpCodec(codecWasm);
    for (const [k, writer] of writers.entries()) {
      const data = sized(matchHeavy(300_000, k + 1));
      const inflated = codec.inflateProfile(deflateSync(data, writer.options), 1_000_000);
      expect(inflated, writer.name).not.toBeNull();
      if (!inflated) continue;
      expect(inflated.size, writer.name).toBe(data.length);
      const back = codec.heap(inflated.pointer, inflated.size);
      const first = back.findIndex((byte, i) => byte !== data[i]);
      expect(first, `${writer.name}: first differing byte`).toBe(-1);
      codec.free(inflated.pointer);
    }
  });

  it("inflates literals whose codes are longer than the 10-bit first-level table (11 to 13 bits in this stream)", () => {
    // Byte v about half as likely as v - 1: Huffman codes one bit longer every two values, so the rarer
    // literals go through the second-level table, with and without matches between them.
    const codec = createWebpCodec(codecWasm);
    const next = random(7);
    const data = sized(
      Uint8Array.from({ length: 300_000 }, () => Math.min(255, Math.floor(-2 * Math.log2(1 - next())))),
    );
    for (const writer of [writers[0], writers[6]]) {
      if (!writer) continue;
      const inflated = codec.inflateProfile(deflateSync(data, writer.options), 1_000_000);
      expect(inflated?.size, writer.name).toBe(data.length);
      if (!inflated) continue;
      const back = codec.heap(inflated.pointer, inflated.size);
      expect(
        back.findIndex((byte, i) => byte !== data[i]),
        `${writer.name}: first differing byte`,
      ).toBe(-1);
      codec.free(inflated.pointer);
    }
  });

  it("refuses cut and damaged streams, and inflates the next stream exactly", () => {
    const codec = createWebpCodec(codecWasm);
    const data = sized(matchHeavy(200_000, 99));
    const stream = deflateSync(data);
    const damaged = Uint8Array.from(stream); // a copy (Buffer's slice would be a view)
    const middle = damaged.length >> 1;
    damaged[middle] = (damaged[middle] as number) ^ 0x10;
    expect(codec.inflateProfile(stream.subarray(0, stream.length >> 1), 1_000_000)).toBeNull();
    expect(codec.inflateProfile(damaged, 1_000_000)).toBeNull();
    const inflated = codec.inflateProfile(stream, 1_000_000);
    expect(inflated?.size).toBe(data.length);
    if (inflated) expect(codec.heap(inflated.pointer, inflated.size).every((byte, i) => byte === data[i])).toBe(true);
  });
});

/** An 8-bit RGB PNG of `raw` scanlines (filter bytes included), its IDAT split into pieces of random sizes. */
function rgbPng(width: number, height: number, raw: Uint8Array, options: ZlibOptions, seed: number): Uint8Array {
  const header = new Uint8Array(13);
  new DataView(header.buffer).setUint32(0, width);
  new DataView(header.buffer).setUint32(4, height);
  header.set([8, 2, 0, 0, 0], 8);
  const data = deflateSync(raw, options);
  const next = random(seed);
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < data.length; ) {
    const size = 1 + Math.floor(next() * 90_000);
    pieces.push(pngChunk("IDAT", data.subarray(at, at + size)));
    at += size;
  }
  return concat([
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", header),
    ...pieces,
    pngChunk("IEND", new Uint8Array(0)),
  ]);
}

describe("PNG image data: the same pixels whichever way zlib wrote them", () => {
  it("converts PNGs of one image written with every strategy, level and window to the same WebP bytes", {
    timeout: 60_000,
  }, async () => {
    // 1,200 × 120 RGB: 432 KB of scanlines, several of the decoder's 64 KiB output windows, so matches reach back
    // into the sliding window of earlier calls (and across its wrap) as well as into the current output.
    const width = 1200;
    const height = 120;
    const stride = width * 3 + 1;
    const pixels = matchHeavy(stride * height, 7);
    for (let y = 0; y < height; y += 1) pixels[y * stride] = 0; // filter None: every byte is a pixel byte
    const converted: string[] = [];
    for (const [k, writer] of writers.entries()) {
      const png = rgbPng(width, height, pixels, writer.options, k + 11);
      const webp = await convertToWebp(png, "png", { maxEdge: 2560 });
      expect([webp.width, webp.height], writer.name).toEqual([width, height]);
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", webp.bytes));
      converted.push(Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join(""));
    }
    expect(new Set(converted).size, converted.join("\n")).toBe(1);
  });
});
