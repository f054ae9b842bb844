import { describe, expect, it } from "vitest";
import { sniff } from "../../src/uploads/sniff";
import { convertToWebp, UnconvertibleImageError } from "../src/convert";
import { decodeWebp, near, pixelAt, writePng, writeRgbaPng } from "./images";

const alphaAt = (image: { data: Uint8ClampedArray; width: number }, x: number, y: number) =>
  image.data[(y * image.width + x) * 4 + 3];

describe("transparency: nothing of the colour under fully transparent pixels shows", () => {
  it("keeps an opaque yellow pixel yellow beside tRNS-transparent black ones (2×2 RGB PNG)", async () => {
    const png = await writePng({
      width: 2,
      height: 2,
      colorType: 2,
      bitDepth: 8,
      samples: (x, y) => (x === 0 && y === 0 ? [255, 255, 0] : [0, 0, 0]),
      transparency: [0, 0, 0, 0, 0, 0],
    });
    const decoded = await decodeWebp((await convertToWebp(png, "png", { maxEdge: 64 })).bytes);
    expect(alphaAt(decoded, 0, 0)).toBe(255);
    expect(alphaAt(decoded, 1, 1)).toBe(0);
    expect(near(pixelAt(decoded, 0, 0), [255, 255, 0], 6), `${pixelAt(decoded, 0, 0)}`).toBe(true);
  });

  it("keeps opaque green stripes green between transparent magenta stripes (RGBA PNG, every other column)", async () => {
    const width = 48;
    const height = 32;
    const rgba = new Uint8Array(width * height * 4);
    for (let i = 0; i < width * height; i += 1) {
      const visible = (i % width) % 2 === 0;
      rgba.set(visible ? [0, 160, 0, 255] : [255, 0, 255, 0], i * 4);
    }
    const decoded = await decodeWebp(
      (await convertToWebp(await writeRgbaPng(rgba, width, height), "png", { maxEdge: 64 })).bytes,
    );
    for (const [x, y] of [
      [0, 0],
      [10, 7],
      [46, 31],
    ] as const) {
      expect(near(pixelAt(decoded, x, y), [0, 160, 0], 6), `${x},${y}: ${pixelAt(decoded, x, y)}`).toBe(true);
    }
  });
});

describe("PNG tRNS in every colour type and bit depth", () => {
  // Left half: the tRNS key (with its high byte set, which browsers ignore below 16 bits); right half: another value.
  const cases = [
    { name: "grey 1-bit", colorType: 0, bitDepth: 1, key: [0xff, 0x01], on: [1], off: [0], colour: [0, 0, 0] },
    { name: "grey 2-bit", colorType: 0, bitDepth: 2, key: [0x01, 0x02], on: [2], off: [1], colour: [85, 85, 85] },
    { name: "grey 4-bit", colorType: 0, bitDepth: 4, key: [0x01, 0x05], on: [5], off: [10], colour: [170, 170, 170] },
    {
      name: "grey 8-bit",
      colorType: 0,
      bitDepth: 8,
      key: [0x01, 0x80],
      on: [0x80],
      off: [200],
      colour: [200, 200, 200],
    },
    {
      name: "grey 16-bit",
      colorType: 0,
      bitDepth: 16,
      key: [0x80, 0x00],
      on: [0x8000],
      off: [0x8001],
      colour: [128, 128, 128],
    },
    {
      name: "RGB 8-bit",
      colorType: 2,
      bitDepth: 8,
      key: [0x01, 250, 0x02, 120, 0x03, 10],
      on: [250, 120, 10],
      off: [250, 120, 11],
      colour: [250, 120, 11],
    },
    {
      name: "RGB 16-bit",
      colorType: 2,
      bitDepth: 16,
      key: [0xff, 0xff, 0x01, 0x00, 0x80, 0x00],
      on: [0xffff, 0x0100, 0x8000],
      off: [0xffff, 0x0100, 0x8001],
      colour: [255, 1, 128],
    },
  ] as const;

  it.each(cases)(
    "makes the $name tRNS key transparent (high byte ignored below 16 bits) and keeps other values opaque",
    async (c) => {
      const png = await writePng({
        width: 16,
        height: 8,
        colorType: c.colorType,
        bitDepth: c.bitDepth,
        samples: (x) => [...(x < 8 ? c.on : c.off)],
        transparency: [...c.key],
      });
      const decoded = await decodeWebp((await convertToWebp(png, "png", { maxEdge: 64 })).bytes);
      expect(alphaAt(decoded, 2, 3)).toBe(0);
      expect(alphaAt(decoded, 13, 3)).toBe(255);
      expect(near(pixelAt(decoded, 13, 3), c.colour, 8), `${pixelAt(decoded, 13, 3)}`).toBe(true);
    },
  );

  it("makes nothing transparent when a low-depth grey key's low byte is above the depth (2-bit, key 6), as Chromium", async () => {
    const png = await writePng({
      width: 16,
      height: 8,
      colorType: 0,
      bitDepth: 2,
      samples: (x) => [x < 8 ? 2 : 1],
      transparency: [0x00, 0x06],
    });
    const decoded = await decodeWebp((await convertToWebp(png, "png", { maxEdge: 64 })).bytes);
    expect(alphaAt(decoded, 2, 3)).toBe(255);
    expect(near(pixelAt(decoded, 2, 3), [170, 170, 170], 8)).toBe(true);
  });

  it("applies a palette tRNS shorter than the palette to its first entries only (the rest opaque)", async () => {
    const png = await writePng({
      width: 16,
      height: 8,
      colorType: 3,
      bitDepth: 2,
      samples: (x) => [x < 8 ? 0 : 2],
      palette: [
        [255, 0, 0],
        [0, 255, 0],
        [0, 0, 255],
      ],
      transparency: [0],
    });
    const decoded = await decodeWebp((await convertToWebp(png, "png", { maxEdge: 64 })).bytes);
    expect(alphaAt(decoded, 2, 3)).toBe(0);
    expect(alphaAt(decoded, 13, 3)).toBe(255);
    expect(near(pixelAt(decoded, 13, 3), [0, 0, 255], 8)).toBe(true);
  });
});

describe("PNG checksums", () => {
  const picture = () =>
    writePng({ width: 4, height: 4, colorType: 3, bitDepth: 8, samples: () => [0], palette: [[10, 20, 200]] });
  const flip = (bytes: Uint8Array, at: number) => {
    bytes[at] = (bytes[at] as number) ^ 0x40;
  };
  /** Offsets of a chunk's CRC: after its 8-byte header and data. */
  const crcOffset = (png: Uint8Array, type: string) => {
    const view = new DataView(png.buffer, png.byteOffset);
    for (let pos = 8; pos < png.length; pos += 12 + view.getUint32(pos)) {
      if (String.fromCharCode(...png.subarray(pos + 4, pos + 8)) === type) return pos + 8 + view.getUint32(pos);
    }
    throw new Error(`no ${type}`);
  };

  it("refuses a PNG whose image header (IHDR) fails its CRC, as browsers do", async () => {
    const png = await picture();
    flip(png, crcOffset(png, "IHDR"));
    await expect(convertToWebp(png, "png", { maxEdge: 64 })).rejects.toThrow(
      new UnconvertibleImageError("The PNG file is damaged: its image header fails its checksum."),
    );
  });

  it("ignores a wrong CRC on the palette, image data and end chunks, as browsers do", async () => {
    const png = await picture();
    for (const type of ["PLTE", "IDAT", "IEND"]) flip(png, crcOffset(png, type));
    const decoded = await decodeWebp((await convertToWebp(png, "png", { maxEdge: 64 })).bytes);
    expect(near(pixelAt(decoded, 1, 1), [10, 20, 200], 8)).toBe(true);
  });
});

/**
 * A 1 × 1 lossless WebP of 28 bytes: RIFF header, VP8L chunk header, 8 bytes of bitstream (signature, size,
 * no transforms, one single-symbol prefix code per channel, each symbol one bit). `argb` holds 0 or 1 each.
 */
function tinyLosslessWebp(argb: [number, number, number, number]): Uint8Array {
  const bits: number[] = [];
  const put = (value: number, count: number) => {
    for (let i = 0; i < count; i += 1) bits.push((value >> i) & 1);
  };
  put(0, 14); // width - 1
  put(0, 14); // height - 1
  put(1, 1); // alpha is used
  put(0, 3); // version
  put(0, 3); // no transform, no colour cache, no meta prefix codes
  const [a, r, g, b] = argb;
  for (const symbol of [g, r, b, a, 0]) {
    put(1, 1); // simple code
    put(0, 1); // one symbol
    put(0, 1); // of one bit
    put(symbol, 1);
  }
  const stream = [0x2f];
  for (let i = 0; i < bits.length; i += 8) stream.push(bits.slice(i, i + 8).reduce((v, bit, j) => v | (bit << j), 0));
  const out = new Uint8Array(20 + stream.length);
  const view = new DataView(out.buffer);
  out.set(new TextEncoder().encode("RIFF"), 0);
  view.setUint32(4, out.length - 8, true);
  out.set(new TextEncoder().encode("WEBPVP8L"), 8);
  view.setUint32(16, stream.length, true);
  out.set(stream, 20);
  return out;
}

describe("WebP input of any valid size", () => {
  it("sniffs and converts a valid 28-byte lossless WebP (1 × 1)", async () => {
    const webp = tinyLosslessWebp([1, 1, 1, 1]);
    expect(webp.length).toBe(28);
    expect(await sniff(webp)).toMatchObject({ kind: "still", format: "webp" });
    const out = await convertToWebp(webp, "webp", { maxEdge: 64 });
    expect([out.width, out.height]).toEqual([1, 1]);
    const decoded = await decodeWebp(out.bytes);
    expect(alphaAt(decoded, 0, 0)).toBe(1);
  });

  it("refuses a RIFF/WEBP header without an image chunk, and a truncated tiny file", async () => {
    const webp = tinyLosslessWebp([0, 0, 0, 0]);
    const bare = webp.slice(0, 12);
    new DataView(bare.buffer).setUint32(4, 4, true);
    await expect(convertToWebp(bare, "webp", { maxEdge: 64 })).rejects.toThrow(
      new UnconvertibleImageError("The WebP file cannot be read: it has no image header."),
    );
    await expect(convertToWebp(webp.slice(0, 24), "webp", { maxEdge: 64 })).rejects.toThrow(UnconvertibleImageError);
  });
});
