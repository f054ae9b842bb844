import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ByteReader } from "../src/convert/byte-reader";

const truncated = () => new Error("truncated");

function pattern(length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 31 + (i >> 8)) & 255);
}

/** A byte stream (what R2 bodies are) that hands out its bytes in chunks of the given sizes, in turn. */
function byteStream(bytes: Uint8Array, sizes: number[]): ReadableStream<Uint8Array> {
  let at = 0;
  let turn = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (at >= bytes.length) {
        controller.close();
        return;
      }
      const size = sizes[turn++ % sizes.length] as number;
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

/** Reads everything back through a mix of the reader's calls, as the row decoders use them. */
async function readBack(reader: ByteReader, length: number): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  let at = 0;
  let step = 0;
  while (at < length) {
    const want = Math.min(length - at, [1, 8, 70_000, 4093, 65_536][step++ % 5] as number);
    const piece = step % 2 === 0 ? await reader.take(want) : await reader.takeSome(want);
    out.set(piece, at);
    at += piece.length;
  }
  expect(await reader.atEnd()).toBe(true);
  return out;
}

describe("streamed reading of an image's bytes", () => {
  it("reads a byte stream in place, across chunk boundaries and takes larger than its buffer, byte for byte", async () => {
    const bytes = pattern(400_000);
    const reader = new ByteReader(byteStream(bytes, [1, 4093, 100_000, 7, 65_536]), truncated);
    expect(await readBack(reader, bytes.length)).toEqual(bytes);
  });

  it("reads a stream that is not a byte stream the same way", async () => {
    const bytes = pattern(300_000);
    let at = 0;
    const plain = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= bytes.length) return controller.close();
        controller.enqueue(bytes.slice(at, at + 5000));
        at += 5000;
      },
    });
    expect(await readBack(new ByteReader(plain, truncated), bytes.length)).toEqual(bytes);
  });

  it("reads an R2 object body (a byte stream) byte for byte", async () => {
    const bytes = pattern(1_500_000);
    await env.BUCKET.put("byte-reader-test", bytes);
    const probe = await env.BUCKET.get("byte-reader-test");
    // The premise of reading in place: R2 hands out a byte stream, which takes a BYOB reader.
    probe?.body.getReader({ mode: "byob" }).releaseLock();
    await probe?.body.cancel();
    const object = await env.BUCKET.get("byte-reader-test");
    if (!object) throw new Error("object missing");
    expect(await readBack(new ByteReader(object.body, truncated), bytes.length)).toEqual(bytes);
  });

  it("throws the format's truncation error when the bytes end before what is asked", async () => {
    const reader = new ByteReader(byteStream(pattern(1000), [300]), truncated);
    await reader.take(900);
    await expect(reader.take(200)).rejects.toThrow("truncated");
  });

  it("stops a stream it no longer needs", async () => {
    let cancelled = false;
    const stream = new ReadableStream({
      type: "bytes",
      pull(controller) {
        controller.enqueue(new Uint8Array(1024));
      },
      cancel() {
        cancelled = true;
      },
    });
    const reader = new ByteReader(stream, truncated);
    await reader.take(10);
    await reader.cancel();
    expect(cancelled).toBe(true);
  });
});
