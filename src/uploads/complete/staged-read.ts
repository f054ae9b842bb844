import type { ImageInput } from "../convert";

/**
 * The staged object as complete reads it: one R2 GET whose first bytes are sniffed, and whose body then
 * goes on, from its first byte again, to whatever reads the whole file next (a GIF's frame count, the
 * conversion). Only a second reader of the whole file opens the object again.
 */
export type StagedRead = {
  /** The staged object's R2 metadata (key, size, ETag), from the same GET. */
  object: R2Object;
  /** The first `min(headBytes, size)` bytes. */
  head: Uint8Array;
  /** The whole file: the first `open()` resumes this GET (head included), later ones GET the object again. */
  input: Exclude<ImageInput, Uint8Array>;
  /** Stops reading the body when no reader took it over; harmless when one did. */
  close(): Promise<void>;
};

/** A source stream read either into caller-given memory (a byte stream) or chunk by chunk. */
type Source =
  | { byob: ReadableStreamBYOBReader; chunks?: undefined }
  | { chunks: ReadableStreamDefaultReader<Uint8Array>; byob?: undefined };

function readerOf(body: ReadableStream<Uint8Array>): Source {
  try {
    return { byob: body.getReader({ mode: "byob" }) };
  } catch {
    return { chunks: body.getReader() };
  }
}

/** Opens the staged object at `key` once and reads its first `headBytes` bytes; null when it is missing. */
export async function openStaged(bucket: R2Bucket, key: string, headBytes: number): Promise<StagedRead | null> {
  const object = await bucket.get(key);
  if (!object) return null;
  const source = readerOf(object.body);
  /** Bytes read from the body and not yet handed on: the head, then whatever came with its last read. */
  let pending: Uint8Array = new Uint8Array(0);
  const head = new Uint8Array(Math.min(headBytes, object.size));
  let filled = 0;
  try {
    while (filled < head.length) {
      if (source.byob) {
        const { value, done } = await source.byob.read(new Uint8Array(head.length - filled));
        if (value) head.set(value, filled);
        filled += value?.length ?? 0;
        if (done) break;
      } else {
        const { value, done } = await source.chunks.read();
        if (done) break;
        const taken = Math.min(value.length, head.length - filled);
        head.set(value.subarray(0, taken), filled);
        filled += taken;
        if (taken < value.length) pending = value.subarray(taken);
      }
    }
  } catch (error) {
    await cancel(source);
    throw error;
  }
  const read = head.subarray(0, filled);
  pending = concat(read, pending);
  let resumed = false;

  return {
    object,
    head: read,
    input: {
      size: object.size,
      async open() {
        if (resumed) {
          const again = await bucket.get(key);
          if (!again) throw new Error(`staged bytes missing at ${key}`);
          return again.body;
        }
        resumed = true;
        return resume(source, pending);
      },
    },
    async close() {
      if (!resumed) await cancel(source);
    },
  };
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (b.length === 0) return a;
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a);
  joined.set(b, a.length);
  return joined;
}

async function cancel(source: Source): Promise<void> {
  await (source.byob ?? source.chunks).cancel().catch(() => {}); // a body already ended has nothing to stop
}

/**
 * The body again from its first byte: `pending` (what was read already), then the rest of `source`. A byte
 * stream, so a BYOB reader (the conversion's ByteReader) gets the bytes in its own memory without a new
 * buffer per chunk. The source is read into one scratch buffer and copied from there: workerd refuses a
 * pull-into view handed back after the source's BYOB read transferred its buffer ("The underlying
 * ArrayBuffer is not the correct length").
 */
function resume(source: Source, pending: Uint8Array): ReadableStream<Uint8Array> {
  let left = pending;
  let scratch = new ArrayBuffer(64 * 1024);
  /** The next bytes of the source, at most `max`; null at its end. Valid until the next call. */
  async function next(max: number): Promise<Uint8Array | null> {
    if (left.length === 0) {
      if (source.byob) {
        const { value, done } = await source.byob.read(new Uint8Array(scratch, 0, Math.min(max, scratch.byteLength)));
        if (value) scratch = value.buffer as ArrayBuffer; // the read transferred it: the same memory, a new owner
        if (done || !value) return null;
        left = value;
      } else {
        const { value, done } = await source.chunks.read();
        if (done) return null;
        left = value;
      }
    }
    const count = Math.min(max, left.length);
    const taken = left.subarray(0, count);
    left = left.subarray(count);
    return taken;
  }
  return new ReadableStream({
    type: "bytes",
    async pull(controller) {
      const request = controller.byobRequest;
      const view = request?.view
        ? new Uint8Array(request.view.buffer, request.view.byteOffset, request.view.byteLength)
        : null;
      const bytes = await next(view?.length ?? scratch.byteLength);
      if (bytes === null) {
        controller.close();
        request?.respond(0);
      } else if (request && view) {
        view.set(bytes);
        request.respond(bytes.length);
      } else {
        controller.enqueue(bytes.slice());
      }
    },
    async cancel(reason) {
      await (source.byob ?? source.chunks).cancel(reason).catch(() => {});
    },
  });
}
