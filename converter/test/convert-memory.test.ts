import { describe, expect, it } from "vitest";
import { codecMemory, convertToWebp } from "../src/convert";
import { codecShareBytes, largeJpegCodecBytes, largeJpegScratchBytes, scratchShareBytes } from "../src/convert/budget";
import { chunked } from "./hostile-images";
import { concat, encodeJpeg, photoLike, writeRgbaPng } from "./images";

/** Admission and memory: how conversions share the codec and scratch, and what a large file may grow them to. */

/** `jpeg` with `padding` bytes of APP15 segments after its SOI: a larger file with the same image. */
function padJpeg(jpeg: Uint8Array, padding: number): Uint8Array {
  const segments: Uint8Array[] = [jpeg.subarray(0, 2)];
  for (let left = padding; left > 0; left -= 65_533) {
    const body = Math.min(left, 65_533);
    segments.push(Uint8Array.of(0xff, 0xef, (body + 2) >> 8, (body + 2) & 255), new Uint8Array(body));
  }
  return concat([...segments, jpeg.subarray(2)]);
}

describe("admission and memory: calls run one at a time; 12 and 24 MP pictures convert within the memory shares", () => {
  it("runs concurrent calls one at a time and all of them succeed", async () => {
    const jpeg = await encodeJpeg(photoLike(500, 500), 500, 500, { progressive: true });
    const results = await Promise.all([1, 2, 3].map(() => convertToWebp(jpeg, "jpeg", { maxEdge: 250 })));
    expect(results.map((r) => r.width)).toEqual([250, 250, 250]);
  });

  it("converts a 12 MP baseline and a 12 MP progressive JPEG to 2560 px on the long edge within the memory shares", {
    timeout: 120_000,
  }, async () => {
    const pixels = photoLike(4000, 3000);
    for (const progressive of [false, true]) {
      const jpeg = await encodeJpeg(pixels, 4000, 3000, { progressive, quality: 90 });
      const out = await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
      expect([out.width, out.height]).toEqual([2560, 1920]);
      const memory = codecMemory();
      expect(memory.scratch).toBeLessThanOrEqual(scratchShareBytes);
      expect(memory.codec).toBeLessThanOrEqual(codecShareBytes);
    }
  });

  it("converts 24 MP JPEGs (baseline 4:2:0 and 4:4:4, progressive 4:2:0) to 2560 px within the memory shares", {
    timeout: 180_000,
  }, async () => {
    const pixels = photoLike(6000, 4000);
    for (const [progressive, chromaSubsample] of [
      [false, 2],
      [false, 1],
      [true, 2],
    ] as const) {
      const jpeg = await encodeJpeg(pixels, 6000, 4000, { progressive, quality: 90, chromaSubsample });
      const out = await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
      expect([out.width, out.height], `progressive ${progressive}, subsampling ${chromaSubsample}`).toEqual([
        2560, 1707,
      ]);
      const memory = codecMemory();
      expect(memory.scratch).toBeLessThanOrEqual(scratchShareBytes);
      expect(memory.codec).toBeLessThanOrEqual(codecShareBytes);
    }
  });

  it("converts 12 MP and 24 MP progressive 4:4:4 JPEGs (chroma decoded at N/2) to 2560 px within the memory shares", {
    timeout: 240_000,
  }, async () => {
    for (const [width, height, target] of [
      [4000, 3000, [2560, 1920]],
      [6000, 4000, [2560, 1707]],
    ] as const) {
      const jpeg = await encodeJpeg(photoLike(width, height), width, height, {
        progressive: true,
        quality: 90,
        chromaSubsample: 1,
      });
      const out = await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
      expect([out.width, out.height], `${width} × ${height}`).toEqual([...target]);
      const memory = codecMemory();
      expect(memory.scratch).toBeLessThanOrEqual(scratchShareBytes);
      expect(memory.codec).toBeLessThanOrEqual(codecShareBytes);
    }
  });

  it("converts a 12 MP PNG to 2560 px on the long edge within the memory shares", { timeout: 120_000 }, async () => {
    const png = await writeRgbaPng(photoLike(4000, 3000), 4000, 3000);
    const out = await convertToWebp(png, "png", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1920]);
    const memory = codecMemory();
    expect(memory.scratch).toBeLessThanOrEqual(scratchShareBytes);
    expect(memory.codec).toBeLessThanOrEqual(codecShareBytes);
  });
});

describe("admission and memory: a JPEG file too large for its share grows the codec or scratch up to its allowance only", () => {
  it("decodes a baseline JPEG inside the codec, without a scratch; one whose file does not fit beside its target in the codec's share converts within largeJpegCodecBytes, the scratch let go", {
    timeout: 120_000,
  }, async () => {
    // A 12 MP baseline JPEG behind 30 MB of APP15 segments: 33 MB of file beside a 19.7 MB target.
    const jpeg = await encodeJpeg(photoLike(4000, 3000), 4000, 3000, { progressive: false, quality: 90 });
    const progressive = await encodeJpeg(photoLike(64, 64), 64, 64, { progressive: true });
    await convertToWebp(progressive, "jpeg", { maxEdge: 64 });
    expect(codecMemory().scratch).toBeGreaterThan(0);
    const plain = await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
    expect(codecMemory().lastConversionCodec).toBeLessThanOrEqual(codecShareBytes);
    const large = padJpeg(jpeg, 30_000_000);
    expect(large.length + 2560 * 1920 * 4).toBeGreaterThan(codecShareBytes);
    const out = await convertToWebp(chunked(large, 65_536), "jpeg", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1920]);
    expect(out.bytes).toEqual(plain.bytes);
    const grown = codecMemory();
    expect(grown.scratch).toBe(0); // never held beside a codec past its share
    expect(grown.lastConversionCodec).toBeGreaterThan(codecShareBytes);
    expect(grown.lastConversionCodec).toBeLessThanOrEqual(2 * 1_048_576 + largeJpegCodecBytes);
    // Past the allowance: refused from the frame header and the file's size, before the file is read whole.
    await expect(convertToWebp(padJpeg(jpeg, 60_000_000), "jpeg", { maxEdge: 2560 })).rejects.toThrow(
      /the 6[0-9.]+ MB file does not fit beside its 2560 × 1920 result in the 81\.0 MB a baseline JPEG may use/,
    );
    // The next JPEG starts from fresh instances, its codec back within its share.
    await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
    expect(codecMemory().codec).toBeLessThanOrEqual(codecShareBytes);
  });

  it("converts a progressive JPEG whose file and coefficients exceed the scratch by growing it in place within largeJpegScratchBytes; the next PNG lets go of it", {
    timeout: 120_000,
  }, async () => {
    // A 12 MP progressive JPEG (21.6 MB of coefficients at 4:2:0) behind 15 MB of APP15 segments: a 40 MB plan.
    const jpeg = await encodeJpeg(photoLike(4000, 3000), 4000, 3000, { progressive: true, quality: 90 });
    const plain = await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
    const before = codecMemory().scratch;
    expect(before).toBeLessThanOrEqual(scratchShareBytes);
    const large = padJpeg(jpeg, 15_000_000);
    const out = await convertToWebp(large, "jpeg", { maxEdge: 2560 });
    expect([out.width, out.height]).toEqual([2560, 1920]);
    expect(out.bytes).toEqual(plain.bytes); // the file kept its bytes while the block grew under it
    const grown = codecMemory();
    expect(grown.scratch).toBeGreaterThan(before);
    expect(grown.scratch).toBeLessThanOrEqual(largeJpegScratchBytes);
    // Past the allowance: refused, naming the limit, and the scratch stays as it was.
    await expect(convertToWebp(padJpeg(jpeg, 30_000_000), "jpeg", { maxEdge: 2560 })).rejects.toThrow(
      /4000 × 3000 pixels exceeds the limit of [0-9.]+ megapixels for a progressive JPEG of this file size/,
    );
    expect(codecMemory().scratch).toBe(grown.scratch);
    // A conversion of another kind lets go of the grown scratch; the next JPEG has one of its share again.
    await convertToWebp(await writeRgbaPng(photoLike(64, 64), 64, 64), "png", { maxEdge: 64 });
    expect(codecMemory().scratch).toBe(0);
    await convertToWebp(jpeg, "jpeg", { maxEdge: 2560 });
    expect(codecMemory().scratch).toBeLessThanOrEqual(scratchShareBytes);
  });
});
