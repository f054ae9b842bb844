import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openStaged } from "../../src/uploads/complete/staged-read";
import { ByteReader } from "../../src/uploads/convert/byte-reader";
import { uuid } from "../support/factories";

const bytes = (n: number, seed = 7) => Uint8Array.from({ length: n }, (_, i) => (i * seed + (i >> 9)) % 251);

/** A bucket whose get and head calls are counted. */
function countingGets() {
  const calls = { get: 0 };
  const bucket = new Proxy(env.BUCKET, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (property === "get") {
        return (...args: Parameters<R2Bucket["get"]>) => {
          calls.get += 1;
          return target.get(...args);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { bucket, calls };
}

async function stagedObject(size: number) {
  const key = `staging/${uuid()}/${uuid()}`;
  const file = bytes(size);
  await env.BUCKET.put(key, file);
  return { key, file };
}

async function readAll(stream: ReadableStream<Uint8Array>, byob: boolean): Promise<Uint8Array> {
  if (!byob) return new Uint8Array(await new Response(stream).arrayBuffer());
  const reader = new ByteReader(stream, () => new Error("truncated"));
  const pieces: Uint8Array[] = [];
  while (!(await reader.atEnd())) pieces.push((await reader.takeSome(100_000)).slice());
  const whole = new Uint8Array(pieces.reduce((total, piece) => total + piece.length, 0));
  let at = 0;
  for (const piece of pieces) {
    whole.set(piece, at);
    at += piece.length;
  }
  return whole;
}

describe("reading the staged object once", () => {
  for (const byob of [true, false]) {
    it(`the first open() goes on from the sniffing GET with every byte from the first, in one R2 read (${byob ? "BYOB reader" : "default reader"})`, async () => {
      const { key, file } = await stagedObject(1_000_003);
      const { bucket, calls } = countingGets();
      const staged = await openStaged(bucket, key, 64 * 1024);
      expect(staged?.head).toEqual(file.subarray(0, 64 * 1024));
      expect(staged?.object.size).toBe(file.length);
      expect(await readAll(await (staged as NonNullable<typeof staged>).input.open(), byob)).toEqual(file);
      expect(calls.get).toBe(1);
    });
  }

  it("a file shorter than the head is read whole as the head, and again whole by open()", async () => {
    const { key, file } = await stagedObject(1000);
    const staged = await openStaged(env.BUCKET, key, 64 * 1024);
    expect(staged?.head).toEqual(file);
    expect(await readAll(await (staged as NonNullable<typeof staged>).input.open(), true)).toEqual(file);
  });

  it("a second open() reads the object again from R2", async () => {
    const { key, file } = await stagedObject(200_000);
    const { bucket, calls } = countingGets();
    const staged = (await openStaged(bucket, key, 1024)) as NonNullable<Awaited<ReturnType<typeof openStaged>>>;
    await (await staged.input.open()).cancel();
    expect(await readAll(await staged.input.open(), true)).toEqual(file);
    expect(calls.get).toBe(2);
  });

  it("answers null for a key with no object", async () => {
    expect(await openStaged(env.BUCKET, `staging/${uuid()}/${uuid()}`, 1024)).toBeNull();
  });
});
