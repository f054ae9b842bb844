/** Buffer size of a streamed reader, and the least free space a read is given. */
const minimumBuffer = 64 * 1024;
const minimumRead = 16 * 1024;

/**
 * A forward-only reader over an image's bytes as they arrive (the R2 object's body), so row decoders hold
 * what one step needs instead of the whole file. What a caller asks for at once is bounded by the caller
 * (a chunk header, a GIF sub-block, one BMP row), never by a number read from the file.
 */
export class ByteReader {
  /** A byte stream (the R2 body) is read into `buffer` itself: no new buffer per chunk, so no garbage. */
  private readonly byob: ReadableStreamBYOBReader | null = null;
  private readonly chunks: AsyncIterator<Uint8Array> | null = null;
  private buffer: Uint8Array;
  private start = 0;
  private end = 0;
  private ended = false;
  /** Bytes consumed so far, from the start of the file. */
  position = 0;

  /**
   * @param source the whole file, or a stream of it
   * @param truncated the error to throw when the bytes end before what the format promises
   */
  constructor(
    source: Uint8Array | ReadableStream<Uint8Array>,
    private readonly truncated: () => Error,
  ) {
    if (ArrayBuffer.isView(source)) {
      this.buffer = source;
      this.end = source.length;
      this.ended = true;
      return;
    }
    this.buffer = new Uint8Array(0);
    try {
      this.byob = source.getReader({ mode: "byob" });
    } catch {
      this.chunks = source[Symbol.asyncIterator](); // not a byte stream
    }
  }

  /** Bytes buffered and not yet consumed. */
  get available(): number {
    return this.end - this.start;
  }

  /** The bytes buffered and not yet consumed, without consuming them; the view is valid until the next call. */
  buffered(): Uint8Array {
    return this.buffer.subarray(this.start, this.end);
  }

  /** Buffers at least `count` bytes; false when the file ends first. */
  async ensure(count: number): Promise<boolean> {
    while (this.end - this.start < count) {
      if (this.ended) return false;
      if (this.byob) {
        if (!(await this.readInPlace(count))) return false;
        continue;
      }
      const next = await (this.chunks as AsyncIterator<Uint8Array>).next();
      if (next.done) {
        this.ended = true;
        return false;
      }
      this.append(next.value);
    }
    return true;
  }

  /** One BYOB read into the free end of `buffer`, made room for `count` unconsumed bytes first. */
  private async readInPlace(count: number): Promise<boolean> {
    const kept = this.end - this.start;
    const size = Math.max(count, minimumBuffer);
    if (this.buffer.length - this.end < size - kept || this.buffer.length - this.end < minimumRead) {
      if (this.buffer.length >= size && this.buffer.length - kept >= minimumRead) {
        this.buffer.copyWithin(0, this.start, this.end);
      } else {
        const grown = new Uint8Array(Math.max(size, kept + minimumRead));
        grown.set(this.buffer.subarray(this.start, this.end));
        this.buffer = grown;
      }
      this.start = 0;
      this.end = kept;
    }
    const free = new Uint8Array(this.buffer.buffer, this.end, this.buffer.length - this.end);
    const { value, done } = await (this.byob as ReadableStreamBYOBReader).read(free);
    // The read transfers the buffer: the same memory comes back under a new ArrayBuffer.
    if (value) this.buffer = new Uint8Array(value.buffer, 0, value.buffer.byteLength);
    if (done) {
      this.ended = true;
      return false;
    }
    this.end += value?.length ?? 0;
    return true;
  }

  /** The next `count` bytes, consumed; the view is valid until the next call. Throws `truncated` if they are missing. */
  async take(count: number): Promise<Uint8Array> {
    if (!(await this.ensure(count))) throw this.truncated();
    return this.takeBuffered(count);
  }

  /** The next `count` bytes without consuming them; the view is valid until the next call. Throws `truncated`. */
  async peek(count: number): Promise<Uint8Array> {
    if (!(await this.ensure(count))) throw this.truncated();
    return this.buffer.subarray(this.start, this.start + count);
  }

  /** Consumes `count` bytes already buffered (after `ensure`). */
  takeBuffered(count: number): Uint8Array {
    const view = this.buffer.subarray(this.start, this.start + count);
    this.start += count;
    this.position += count;
    return view;
  }

  /** Up to `max` bytes, at least one: what is buffered, else the next chunk. Throws `truncated` at the end. */
  async takeSome(max: number): Promise<Uint8Array> {
    if (!(await this.ensure(1))) throw this.truncated();
    return this.takeBuffered(Math.min(max, this.end - this.start));
  }

  /** Skips `count` bytes without keeping them. */
  async skip(count: number): Promise<void> {
    let left = count;
    while (left > 0) left -= (await this.takeSome(left)).length;
  }

  /** Whether the file has no bytes left. */
  async atEnd(): Promise<boolean> {
    return !(await this.ensure(1));
  }

  /** Stops reading the source (the rest of the body is not needed). */
  async cancel(): Promise<void> {
    this.ended = true;
    await this.chunks?.return?.();
    await this.byob?.cancel().catch(() => {}); // a stream already closed or errored has nothing left to stop
  }

  private append(chunk: Uint8Array): void {
    const kept = this.end - this.start;
    if (this.start > 0 && kept === 0) {
      this.start = 0;
      this.end = 0;
    }
    if (this.end + chunk.length > this.buffer.length) {
      if (kept + chunk.length <= this.buffer.length) {
        this.buffer.copyWithin(0, this.start, this.end);
      } else {
        // Grow only to what is kept plus this chunk: consumed bytes are never carried over.
        const grown = new Uint8Array(Math.max(kept + chunk.length, 64 * 1024));
        grown.set(this.buffer.subarray(this.start, this.end));
        this.buffer = grown;
      }
      this.start = 0;
      this.end = kept;
    }
    this.buffer.set(chunk, this.end);
    this.end += chunk.length;
  }
}
