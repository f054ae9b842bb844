import { describe, expect, it } from "vitest";
import { concat, decodeWebp, encodeWebp, photoLike } from "./images";

/** The test images' own helpers, where a mistake in them would make other tests pass or fail wrongly. */

/** The file with an unknown chunk appended (decoders skip it) so that it is `length` bytes long. */
function paddedTo(file: Uint8Array, length: number): Uint8Array {
  const payload = length - file.length - 8;
  const junk = new Uint8Array(8 + payload);
  junk.set([0x4a, 0x55, 0x4e, 0x4b]); // "JUNK"
  new DataView(junk.buffer).setUint32(4, payload, true);
  const padded = concat([file, junk]);
  new DataView(padded.buffer).setUint32(4, padded.length - 8, true);
  return padded;
}

describe("decodeWebp", () => {
  it("reads the RIFF header as bytes: a file whose size bytes would form one UTF-8 character still decodes", async () => {
    const file = await encodeWebp(photoLike(16, 16), 16, 16, { quality: 80 });
    const padded = paddedTo(file, 8 + 0x80c4); // RIFF size 0x80C4: bytes C4 80, "Ā" when read as UTF-8
    expect([...padded.subarray(4, 8)]).toEqual([0xc4, 0x80, 0, 0]);
    const decoded = await decodeWebp(padded);
    expect([decoded.width, decoded.height]).toEqual([16, 16]);
  });

  it("refuses bytes that are not a RIFF WebP", async () => {
    const file = await encodeWebp(photoLike(16, 16), 16, 16, { quality: 80 });
    const avi = file.slice();
    avi.set([0x41, 0x56, 0x49, 0x20], 8); // "AVI "
    await expect(decodeWebp(avi)).rejects.toThrow("not a RIFF WebP");
  });
});
