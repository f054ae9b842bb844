import { describe, expect, it } from "vitest";
import { UnconvertibleImageError } from "../src/convert/errors";
import { decodeGifRows, type GifWork, scanGif } from "../src/convert/gif";
import {
  decode,
  descriptorBytes,
  frameBomb,
  interlacedRowOrder,
  lzwData,
  palette16,
  pattern,
  readerOf,
  refusal,
  screenBytes,
  signature,
  threeBitCodes,
  u16,
  writeGif,
} from "./gif-images";

/** GIF files built to cost memory or work, and damaged ones: admitted before allocation, refused or painted as Chromium does. */

describe("GIF reader: the 34-byte frame bomb is refused after a few steps, still or animated", () => {
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
});

describe("GIF reader: frames larger than the screen are clipped in bounded work, and a huge screen allocates nothing", () => {
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

const valid = writeGif(9, 7, palette16, [
  { x: 1, y: 1, width: 7, height: 5, indices: pattern(7, 5, 4), palette: [1, 2, 3, 4], transparent: 1 },
]);

describe("GIF reader: cut files, bad headers, files without an image and malformed structures are refused", () => {
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
});

describe("GIF reader: corrupt LZW data is refused; colours missing from the table are painted opaque black, as Chromium shows them", () => {
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
