import { GifReader, GifWriter } from "omggif";
import { describe, expect, it } from "vitest";
import { convertToWebp } from "../src/convert";
import { ByteReader } from "../src/convert/byte-reader";
import { UnconvertibleImageError } from "../src/convert/errors";
import { decodeGifRows, type GifWork, scanGif, truncatedGif } from "../src/convert/gif";

/** Every GIF here is made by code: omggif's writer for ordinary files, the helpers below for the rest. */

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

const readerOf = (bytes: Uint8Array, chunkSize?: number) =>
  new ByteReader(chunkSize ? chunkedStream(bytes, chunkSize) : bytes, truncatedGif);

type Decoded = { width: number; height: number; frames: number; rgba: Uint8Array; rows: number; work: GifWork };

/** Scans, then decodes from a second reader as the pipeline does; gathers the rows into one picture. */
async function decode(bytes: Uint8Array, chunkSize?: number): Promise<Decoded> {
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
function omggifFirstFrame(bytes: Uint8Array): Uint8Array {
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

function writeGif(width: number, height: number, palette: number[] | undefined, frames: FrameSpec[]): Uint8Array {
  const buffer = new Uint8Array(1 << 20);
  const writer = new GifWriter(buffer, width, height, palette ? { palette } : {});
  for (const frame of frames) {
    const options = { palette: frame.palette, transparent: frame.transparent };
    writer.addFrame(frame.x, frame.y, frame.width, frame.height, Array.from(frame.indices), options);
  }
  return buffer.slice(0, writer.end());
}

const pattern = (width: number, height: number, colours: number) =>
  Array.from({ length: width * height }, (_, i) => ((i % width) * 3 + Math.floor(i / width) * 5 + (i % 7)) % colours);

const palette16 = Array.from({ length: 16 }, (_, i) => ((i * 16) << 16) | ((255 - i * 9) << 8) | ((i * 37) & 255));

/** Offset of the first image descriptor of a file (after the screen, global table and extensions). */
function firstDescriptor(bytes: Uint8Array): number {
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
function interlacedRowOrder(height: number): number[] {
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
function interlace(indices: ArrayLike<number>, width: number, height: number): Uint8Array {
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
function lzwData(indices: ArrayLike<number>, minCodeSize: number, clearWhenFull = true): number[] {
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
function subBlocks(data: number[]): number[] {
  const out: number[] = [];
  for (let at = 0; at < data.length; at += 255) {
    const block = data.slice(at, at + 255);
    out.push(block.length, ...block);
  }
  out.push(0);
  return out;
}

/** 3-bit codes (code size 2) packed LSB first, for hand-made streams shorter than the first width change. */
function threeBitCodes(codes: number[]): number[] {
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

const u16 = (value: number) => [value & 255, value >> 8];
const signature = [0x47, 0x49, 0x46, 0x38, 0x39, 0x61]; // GIF89a

/** Header and logical screen with a global table of `colours` entries (grey ramp). */
function screenBytes(width: number, height: number, colours: number): number[] {
  const sizeBits = Math.log2(colours) - 1;
  const table = Array.from({ length: colours }, (_, i) => {
    const grey = Math.round((i * 255) / (colours - 1));
    return [grey, grey, grey];
  }).flat();
  return [...signature, ...u16(width), ...u16(height), 0x80 | sizeBits, 0, 0, ...table];
}

function descriptorBytes(left: number, top: number, width: number, height: number, packed = 0): number[] {
  return [0x2c, ...u16(left), ...u16(top), ...u16(width), ...u16(height), packed];
}

/** Screen 100 × 100, two colours; a frame claiming 65535 × 65535 whose data is only clear + end: 34 bytes. */
function frameBomb(frames: number, interlaced = false): Uint8Array {
  const frame = [...descriptorBytes(0, 0, 65535, 65535, interlaced ? 0x40 : 0), ...threeBitCodes([4, 5])];
  return Uint8Array.from([...screenBytes(100, 100, 2), ...Array(frames).fill(frame).flat(), 0x3b]);
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UnconvertibleImageError);
  return (error as Error).message;
}

describe("GIF reader: valid files", () => {
  it("decodes a still image pixel-exactly, as omggif does, with 7-byte stream chunks", async () => {
    const gif = writeGif(37, 23, palette16, [{ x: 0, y: 0, width: 37, height: 23, indices: pattern(37, 23, 16) }]);
    const decoded = await decode(gif, 7);
    expect([decoded.width, decoded.height, decoded.frames, decoded.rows]).toEqual([37, 23, 1, 23]);
    expect(decoded.rgba).toEqual(omggifFirstFrame(gif));
  });

  it("decodes an interlaced frame (all four passes) into rows in screen order", async () => {
    const width = 13;
    const height = 29; // not a multiple of 8: every pass ends early
    const indices = pattern(width, height, 16);
    const plain = writeGif(width, height, palette16, [{ x: 0, y: 0, width, height, indices }]);
    const gif = writeGif(width, height, palette16, [
      { x: 0, y: 0, width, height, indices: interlace(indices, width, height) },
    ]);
    gif[firstDescriptor(gif) + 9] = (gif[firstDescriptor(gif) + 9] as number) | 0x40;
    const decoded = await decode(gif, 3);
    expect(decoded.rgba).toEqual(omggifFirstFrame(gif));
    expect(decoded.rgba).toEqual((await decode(plain)).rgba);
  });

  it("uses the frame's local colour table over the global one", async () => {
    const local = [0x102030, 0x405060, 0x708090, 0xa0b0c0];
    const gif = writeGif(
      6,
      4,
      [0xff0000, 0x00ff00],
      [{ x: 0, y: 0, width: 6, height: 4, indices: pattern(6, 4, 4), palette: local }],
    );
    const decoded = await decode(gif, 5);
    expect(decoded.rgba).toEqual(omggifFirstFrame(gif));
    const first = pattern(6, 4, 4)[0] as number;
    const colour = local[first] as number;
    expect([...decoded.rgba.subarray(0, 4)]).toEqual([colour >> 16, (colour >> 8) & 255, colour & 255, 255]);
  });

  it("leaves the Graphic Control Extension's transparent index transparent", async () => {
    const indices = pattern(10, 6, 4);
    const gif = writeGif(
      10,
      6,
      [0x111111, 0x222222, 0x333333, 0x444444],
      [{ x: 0, y: 0, width: 10, height: 6, indices, transparent: 2 }],
    );
    const decoded = await decode(gif, 2);
    expect(decoded.rgba).toEqual(omggifFirstFrame(gif));
    indices.forEach((index, i) => {
      expect(decoded.rgba[i * 4 + 3]).toBe(index === 2 ? 0 : 255);
    });
  });

  it("composes a frame smaller than the screen at its offset onto a transparent canvas", async () => {
    const gif = writeGif(20, 15, palette16, [{ x: 5, y: 4, width: 8, height: 6, indices: pattern(8, 6, 16) }]);
    const decoded = await decode(gif, 4);
    expect(decoded.rows).toBe(15);
    expect(decoded.rgba).toEqual(omggifFirstFrame(gif));
    for (let y = 0; y < 15; y += 1) {
      for (let x = 0; x < 20; x += 1) {
        const inside = x >= 5 && x < 13 && y >= 4 && y < 10;
        expect(decoded.rgba[(y * 20 + x) * 4 + 3]).toBe(inside ? 255 : 0);
      }
    }
  });

  it("counts a two-frame animation as 2 frames and decodes only the first", async () => {
    const gif = writeGif(
      8,
      8,
      [0x000000, 0xffffff],
      [
        { x: 0, y: 0, width: 8, height: 8, indices: new Array(64).fill(0) },
        { x: 0, y: 0, width: 8, height: 8, indices: new Array(64).fill(1) },
      ],
    );
    const decoded = await decode(gif, 3);
    expect(decoded.frames).toBe(2);
    expect(decoded.rgba).toEqual(omggifFirstFrame(gif));
    expect([...decoded.rgba.subarray(0, 4)]).toEqual([0, 0, 0, 255]);
  });

  it("keeps decoding with a full code table (no clear code), as omggif and browsers do", async () => {
    const side = 96; // 256-colour noise fills the 4096-entry table long before the end
    let seed = 7;
    const indices = Array.from({ length: side * side }, () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed >>> 24;
    });
    const palette = Array.from({ length: 256 }, (_, i) => (i << 16) | ((255 - i) << 8) | ((i * 7) & 255));
    const gif = writeGif(side, side, palette, [{ x: 0, y: 0, width: side, height: side, indices }]);
    const at = firstDescriptor(gif) + 10;
    const deferred = Uint8Array.from([...gif.subarray(0, at), ...lzwData(indices, 8, false), 0x3b]);
    expect(deferred.length).not.toBe(gif.length);
    const decoded = await decode(deferred, 64);
    expect(decoded.rgba).toEqual(omggifFirstFrame(deferred));
    expect(decoded.rgba).toEqual((await decode(gif)).rgba);
  });

  it("ignores bytes after the trailer", async () => {
    const gif = writeGif(4, 4, [0, 0xffffff], [{ x: 0, y: 0, width: 4, height: 4, indices: pattern(4, 4, 2) }]);
    const padded = Uint8Array.from([...gif, 0x2c, 0xde, 0xad, 0xbe, 0xef]);
    expect((await decode(padded, 3)).rgba).toEqual(omggifFirstFrame(gif));
  });

  it("decodes LZW code size 1 (a 1 × 1 file and a two-colour picture), the code widening after the first code", async () => {
    const one = Uint8Array.from([...screenBytes(1, 1, 2), ...descriptorBytes(0, 0, 1, 1), ...lzwData([1], 1), 0x3b]);
    expect([...(await decode(one)).rgba]).toEqual([255, 255, 255, 255]);
    const indices = pattern(21, 9, 2);
    const gif = Uint8Array.from([
      ...screenBytes(21, 9, 2),
      ...descriptorBytes(0, 0, 21, 9),
      ...lzwData(indices, 1),
      0x3b,
    ]);
    const expected = indices.flatMap((index) => (index ? [255, 255, 255, 255] : [0, 0, 0, 255]));
    expect([...(await decode(gif, 3)).rgba]).toEqual(expected);
  });

  it("reads code sizes 0 and 1 with Chromium's code widths (hand-packed streams, results read from Chromium)", async () => {
    /** Codes packed LSB first, each at its own width, as one sub-block. */
    const packed = (minCodeSize: number, codes: [number, number][]) => {
      const out: number[] = [];
      let bits = 0;
      let count = 0;
      for (const [code, width] of codes) {
        bits |= code << count;
        count += width;
        while (count >= 8) {
          out.push(bits & 255);
          bits >>>= 8;
          count -= 8;
        }
      }
      if (count > 0) out.push(bits & 255);
      return [minCodeSize, ...subBlocks(out)];
    };
    // Code size 1: clear (2 bits), 1 (2 bits), then 3-bit codes: 0, end. Chromium shows white, black.
    const sizeOne = [...screenBytes(2, 1, 2), ...descriptorBytes(0, 0, 2, 1)];
    const gif = Uint8Array.from([
      ...sizeOne,
      ...packed(1, [
        [2, 2],
        [1, 2],
        [0, 3],
        [3, 3],
      ]),
      0x3b,
    ]);
    expect([...(await decode(gif)).rgba]).toEqual([255, 255, 255, 255, 0, 0, 0, 255]);
    // Code size 0: clear (1 bit), 0 (1 bit), end (2 bits). Chromium shows the first colour.
    const sizeZero = [...screenBytes(1, 1, 2), ...descriptorBytes(0, 0, 1, 1)];
    const zero = Uint8Array.from([
      ...sizeZero,
      ...packed(0, [
        [1, 1],
        [0, 1],
        [2, 2],
      ]),
      0x3b,
    ]);
    expect([...(await decode(zero)).rgba]).toEqual([0, 0, 0, 255]);
  });

  it("paints a transparent index outside the colour table as transparent, without refusing it", async () => {
    const data = lzwData([0, 1, 3, 1], 2);
    const gif = Uint8Array.from([
      ...screenBytes(4, 1, 2),
      ...[0x21, 0xf9, 4, 1, 0, 0, 3, 0],
      ...descriptorBytes(0, 0, 4, 1),
      ...data,
      0x3b,
    ]);
    const { rgba } = await decode(gif);
    expect([...rgba]).toEqual([0, 0, 0, 255, 255, 255, 255, 255, 0, 0, 0, 0, 255, 255, 255, 255]);
  });
});

describe("GIF reader: admission before allocation and bounded work", () => {
  it("refuses the 34-byte frame bomb (65535 × 65535 frame on a 100 × 100 screen) after a few steps", async () => {
    const bomb = frameBomb(1);
    expect(bomb.length).toBe(34);
    const scanReader = readerOf(bomb, 5);
    const scan = await scanGif(scanReader);
    expect([scan.width, scan.height, scan.frames, scanReader.position]).toEqual([100, 100, 1, 34]);
    expect([scan.firstFrame.visibleWidth, scan.firstFrame.visibleHeight]).toEqual([100, 100]);
    expect(scan.decodeBytes).toBe(400);
    for (const gif of [bomb, frameBomb(1, true)]) {
      const work: GifWork = { steps: 0 };
      let rows = 0;
      const message = await refusal(
        decodeGifRows(
          readerOf(gif, 5),
          () => {
            rows += 1;
          },
          work,
        ),
      );
      expect(message).toMatch(/ends before the image is complete/);
      expect(rows).toBe(0);
      expect(work.steps).toBeLessThan(10);
    }
    // The interlaced one keeps (at most) the visible part's indices, not the claimed frame's.
    const interlacedScan = await scanGif(readerOf(frameBomb(1, true)));
    expect(interlacedScan.decodeBytes).toBe(400 + 100 * 100);
  });

  it("counts the two-frame frame bomb as an animation and refuses its first frame after a few steps", async () => {
    const bomb = frameBomb(2);
    const scan = await scanGif(readerOf(bomb, 3));
    expect(scan.frames).toBe(2);
    const work: GifWork = { steps: 0 };
    await refusal(decodeGifRows(readerOf(bomb, 3), () => undefined, work));
    expect(work.steps).toBeLessThan(10);
  });

  it.each([
    ["non-interlaced", false],
    ["interlaced", true],
  ])(
    "clips a 65535-wide %s frame with real data to the screen, in far fewer steps than its area",
    async (_name, interlaced) => {
      const screen = 100;
      const frameWidth = 65535;
      const frameHeight = 104;
      // Visible corner: a pattern; the rest (off the screen): a colour that must not appear.
      const colourAt = (x: number, y: number) => (x < screen && y < screen ? (x + 2 * y) % 3 : 3);
      const rows = Array.from({ length: frameHeight }, (_, y) => {
        const row = new Uint8Array(frameWidth).fill(3);
        for (let x = 0; x < screen; x += 1) row[x] = colourAt(x, y);
        return row;
      });
      const order = interlaced ? interlacedRowOrder(frameHeight) : rows.map((_, y) => y);
      const indices = new Uint8Array(frameWidth * frameHeight);
      order.forEach((y, i) => {
        indices.set(rows[y] as Uint8Array, i * frameWidth);
      });
      const gif = Uint8Array.from([
        ...screenBytes(screen, screen, 4),
        ...descriptorBytes(0, 0, frameWidth, frameHeight, interlaced ? 0x40 : 0),
        ...lzwData(indices, 2),
        0x3b,
      ]);
      const decoded = await decode(gif, 251);
      expect(decoded.rows).toBe(screen);
      const grey = [0, 85, 170, 255];
      for (let y = 0; y < screen; y += 1) {
        for (let x = 0; x < screen; x += 1) {
          const value = grey[colourAt(x, y)] as number;
          expect([...decoded.rgba.subarray((y * screen + x) * 4, (y * screen + x) * 4 + 4)]).toEqual([
            value,
            value,
            value,
            255,
          ]);
        }
      }
      // Bounded by codes read + rows + visible pixels + two LZW strings (≤ 4096) per visible row.
      expect(decoded.work.steps).toBeLessThan(4 * screen * screen);
    },
  );

  it("stops a non-interlaced frame taller than the screen after its last visible row (no data needed past it)", async () => {
    const visible = pattern(6, 4, 4);
    const gif = Uint8Array.from([
      ...screenBytes(6, 4, 4),
      ...descriptorBytes(0, 0, 6, 50),
      ...lzwData(visible, 2), // 4 of the 50 rows, then the end code
      0x3b,
    ]);
    const grey = [0, 85, 170, 255];
    const expected = visible.flatMap((index) => [grey[index], grey[index], grey[index], 255]);
    expect([...(await decode(gif, 3)).rgba]).toEqual(expected);
  });

  it("scans a 65535 × 65535 screen without allocating for it (what is allocated is decodeBytes, for the caller)", async () => {
    const gif = Uint8Array.from([
      ...screenBytes(65535, 65535, 2),
      ...descriptorBytes(0, 0, 1, 1),
      ...lzwData([1], 2),
      0x3b,
    ]);
    const scan = await scanGif(readerOf(gif, 4));
    expect([scan.width, scan.height, scan.decodeBytes]).toEqual([65535, 65535, 65535 * 4]);
  });
});

describe("GIF reader: damaged files", () => {
  const valid = writeGif(9, 7, palette16, [
    { x: 1, y: 1, width: 7, height: 5, indices: pattern(7, 5, 4), palette: [1, 2, 3, 4], transparent: 1 },
  ]);

  it("refuses a file cut anywhere before its trailer as incomplete; decoding a cut file never yields garbage", async () => {
    const whole = await decode(valid);
    const dataEnd = valid.length - 2; // the sub-blocks' terminator, then the trailer
    for (let length = 6; length < valid.length; length += 1) {
      const cut = valid.slice(0, length);
      expect(await refusal(scanGif(readerOf(cut, 3)))).toMatch(/^The GIF file is incomplete: /);
      // The decoder stops at the last visible row, so a cut past the image data is the scan's to find.
      const rows: Uint8Array[] = [];
      const decoding = decodeGifRows(readerOf(cut, 3), (row) => rows.push(row.slice()));
      if (length < dataEnd - 1) {
        expect(await refusal(decoding)).toMatch(/^The GIF file (is incomplete|cannot be read: its image data ends)/);
      } else {
        await decoding.catch((error: unknown) => expect(error).toBeInstanceOf(UnconvertibleImageError));
        if (rows.length === whole.height) expect(Uint8Array.from(rows.flatMap((row) => [...row]))).toEqual(whole.rgba);
      }
    }
  });

  it.each([
    ["a PNG signature", Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0, 0])],
    ["an unknown version (GIF88a)", Uint8Array.from([...valid.subarray(0, 4), 0x38, ...valid.subarray(5)])],
    ["fewer than 6 bytes", Uint8Array.from([0x47, 0x49, 0x46])],
  ])("refuses a bad header: %s", async (_name, bytes) => {
    expect(await refusal(scanGif(readerOf(bytes)))).toBe("The GIF file cannot be read: it does not start like a GIF.");
    await refusal(decodeGifRows(readerOf(bytes), () => undefined));
  });

  it("refuses a file with no image", async () => {
    const empty = Uint8Array.from([...screenBytes(4, 4, 2), 0x21, 0xfe, 2, 0x68, 0x69, 0, 0x3b]);
    expect(await refusal(scanGif(readerOf(empty)))).toBe("The GIF file cannot be read: it contains no image.");
    await refusal(decodeGifRows(readerOf(empty), () => undefined));
  });

  it.each([
    ["an unknown block", [0x99]],
    ["a zero screen size", null],
    ["a frame of width zero", [...descriptorBytes(0, 0, 0, 4), ...lzwData([0], 2), 0x3b]],
    ["a graphic control extension of 3 bytes", [0x21, 0xf9, 3, 0, 0, 0, 0, 0x3b]],
    ["LZW code size 12", [...descriptorBytes(0, 0, 1, 1), 12, 1, 0, 0, 0x3b]],
    ["LZW code size 9", [...descriptorBytes(0, 0, 1, 1), 9, 1, 0, 0, 0x3b]],
  ])("refuses a malformed structure in the scan: %s", async (_name, tail) => {
    const bytes = tail
      ? Uint8Array.from([...screenBytes(4, 4, 2), ...tail])
      : Uint8Array.from([...screenBytes(0, 4, 2), 0x3b]);
    expect(await refusal(scanGif(readerOf(bytes, 2)))).toMatch(/^The GIF file cannot be read: /);
  });

  it("paints a frame without any colour table opaque black, transparent index aside, as Chromium shows it", async () => {
    const bytes = Uint8Array.from([
      ...signature,
      ...u16(4),
      ...u16(1),
      0,
      0,
      0,
      ...[0x21, 0xf9, 4, 1, 0, 0, 2, 0],
      ...descriptorBytes(0, 0, 4, 1),
      ...lzwData([0, 1, 2, 3], 2),
      0x3b,
    ]);
    expect((await scanGif(readerOf(bytes))).firstFrame.colours).toBe(0);
    const { rgba } = await decode(bytes);
    expect([...rgba]).toEqual([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0, 255]);
  });

  it.each([
    ["a first code after clear that is not a colour", [4, 6]],
    ["a code past the next table entry", [4, 0, 7]],
    ["data that ends (end code) before the last pixel", [4, 0, 1, 5]],
  ])("refuses a corrupt LZW stream: %s", async (_name, codes) => {
    const bytes = Uint8Array.from([
      ...screenBytes(2, 2, 4),
      ...descriptorBytes(0, 0, 2, 2),
      ...threeBitCodes(codes),
      0x3b,
    ]);
    expect((await scanGif(readerOf(bytes))).frames).toBe(1); // structurally fine: only decoding finds it
    expect(await refusal(decodeGifRows(readerOf(bytes, 1), () => undefined))).toMatch(
      /^The GIF file cannot be read: its image data (is damaged|ends before the image is complete)/,
    );
  });

  it("refuses data whose sub-blocks end before the last pixel, without an end code (missing pixels are not garbage)", async () => {
    // Clear, two pixels, then the padding bits of the last byte: at most two more pixels of the 16.
    const data = threeBitCodes([4, 0, 1]);
    const bytes = Uint8Array.from([...screenBytes(4, 4, 4), ...descriptorBytes(0, 0, 4, 4), ...data, 0x3b]);
    expect(await refusal(decodeGifRows(readerOf(bytes), () => undefined))).toMatch(/ends before the image is complete/);
  });

  it("paints a pixel index beyond the colour table opaque black, as Chromium shows it", async () => {
    const bytes = Uint8Array.from([
      ...screenBytes(4, 1, 2),
      ...descriptorBytes(0, 0, 4, 1),
      ...lzwData([0, 1, 3, 1], 2),
      0x3b,
    ]);
    const { rgba } = await decode(bytes);
    expect([...rgba]).toEqual([0, 0, 0, 255, 255, 255, 255, 255, 0, 0, 0, 255, 255, 255, 255, 255]);
  });
});

describe("GIF conversion: transparency decides the WebP's form", () => {
  const riffForm = (webp: Uint8Array) => String.fromCharCode(...webp.subarray(12, 16));

  it("a frame covering the screen without a transparent index converts to an opaque WebP (no alpha chunk)", async () => {
    const gif = writeGif(40, 30, palette16, [{ x: 0, y: 0, width: 40, height: 30, indices: pattern(40, 30, 16) }]);
    const out = await convertToWebp(gif, "gif", { maxEdge: 20 });
    expect([out.width, out.height]).toEqual([20, 15]);
    expect(riffForm(out.bytes)).toBe("VP8 ");
  });

  it("a transparent index, or a frame smaller than the screen, keeps alpha (VP8X with ALPH)", async () => {
    const keyed = writeGif(40, 30, palette16, [
      { x: 0, y: 0, width: 40, height: 30, indices: pattern(40, 30, 16), transparent: 3 },
    ]);
    const inset = writeGif(40, 30, palette16, [{ x: 5, y: 5, width: 20, height: 10, indices: pattern(20, 10, 16) }]);
    for (const gif of [keyed, inset]) {
      const out = await convertToWebp(gif, "gif", { maxEdge: 20 });
      expect(riffForm(out.bytes)).toBe("VP8X");
      expect(String.fromCharCode(...out.bytes.subarray(30, 34))).toBe("ALPH");
    }
  });
});
