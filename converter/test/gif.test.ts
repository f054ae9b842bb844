import { describe, expect, it } from "vitest";
import { convertToWebp } from "../src/convert";
import {
  decode,
  descriptorBytes,
  firstDescriptor,
  interlace,
  lzwData,
  omggifFirstFrame,
  palette16,
  pattern,
  screenBytes,
  subBlocks,
  writeGif,
} from "./gif-images";

/** GIF files the reader decodes as omggif and Chromium do, and the WebP form their transparency gives. */

describe("GIF reader: still, interlaced, locally coloured, transparent and offset frames decode as omggif does", () => {
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
});

describe("GIF reader: an animation's first frame, a full code table and bytes after the trailer decode as omggif does", () => {
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
});

describe("GIF reader: code sizes 0 and 1 and a transparent index outside the table read as Chromium does", () => {
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
