import { UnconvertibleImageError } from "./errors";

/**
 * Loader for the wasi-libc builds of @cwasm/* (their own index.js reads the .wasm with `fs`, which a Worker
 * does not have). The host functions are the few the C libraries link against; none of them is expected
 * to run, except longjmp, which libjpeg calls on a fatal decoding error.
 */

/** Thrown through the WebAssembly stack when a library aborts; the instance must not be reused afterwards. */
export class CodecAbort extends Error {
  override name = "CodecAbort";
}

type Allocator = { memory: WebAssembly.Memory; malloc(size: number): number; free(pointer: number): void };

function instantiate<T>(module: WebAssembly.Module): T & Allocator {
  let memory: WebAssembly.Memory | undefined;
  const view = () => new DataView((memory as WebAssembly.Memory).buffer);
  const instance = new WebAssembly.Instance(module, {
    env: {
      setjmp: () => 0,
      longjmp: () => {
        throw new CodecAbort("the decoder stopped on invalid data");
      },
    },
    wasi_snapshot_preview1: {
      environ_sizes_get: (countPointer: number, sizePointer: number) => {
        view().setUint32(countPointer, 0, true);
        view().setUint32(sizePointer, 0, true);
        return 0;
      },
      environ_get: () => 0,
      proc_exit: () => {
        throw new CodecAbort("the decoder exited");
      },
      fd_close: () => 0,
      fd_seek: () => 8, // EBADF: there are no files
      // Diagnostics the library prints (libjpeg warnings) are dropped; report them as written.
      fd_write: (_fd: number, iovs: number, count: number, writtenPointer: number) => {
        let total = 0;
        for (let i = 0; i < count; i += 1) total += view().getUint32(iovs + i * 8 + 4, true);
        view().setUint32(writtenPointer, total, true);
        return 0;
      },
    },
  });
  const exports = instance.exports as unknown as T & Allocator;
  memory = exports.memory;
  return exports;
}

type TurboExports = {
  tjInitDecompress(): number;
  tjDestroy(handle: number): number;
  tjDecompressHeader3(handle: number, source: number, size: number, w: number, h: number, s: number, c: number): number;
  tjDecompress2(
    handle: number,
    source: number,
    size: number,
    destination: number,
    width: number,
    pitch: number,
    height: number,
    pixelFormat: number,
    flags: number,
  ): number;
};

/** TurboJPEG pixel formats used here. */
export const pixelFormat = { rgb: 0, rgba: 7, cmyk: 11 } as const;

/**
 * One libjpeg-turbo instance. Its linear memory is the progressive decoder's scratch arena (the file and its
 * coefficients are malloc'd here), so the isolate's footprint is this memory's high-water mark, not whatever
 * the garbage collector has not freed yet. Baseline JPEGs decode in the codec's own libjpeg-turbo (jpeg.c);
 * this one's decompressor (`decompressInto`) is the tests' reference decoder.
 */
export type JpegTurbo = {
  readonly exports: TurboExports & Allocator;
  readonly handle: number;
};

/** Instantiates libjpeg-turbo and its one decompressor handle. */
export function createJpegTurbo(module: WebAssembly.Module): JpegTurbo {
  const exports = instantiate<TurboExports>(module);
  const handle = exports.tjInitDecompress();
  if (handle === 0) throw new Error("libjpeg-turbo could not create a decompressor");
  primeAllocations(exports, handle);
  return { exports, handle };
}

/**
 * Reads one tiny header so libjpeg makes its lifelong allocations (the memory source manager, and a quantisation
 * table and a Huffman table of each class in every one of the 4 slots a file may define, all in its permanent
 * pool) now, at the bottom of the heap. Made during a real decode, they would sit between that decode's large
 * buffers and split the heap, so a later larger image would grow the memory past its share; and they would sit
 * above the scratch block, which must stay the last block so that it can grow in place (instances.ts).
 */
function primeAllocations(exports: TurboExports & Allocator, handle: number): void {
  const quantisation = [0xff, 0xdb, 0x01, 0x06]; // DQT, 2 + 4 × 65 bytes
  for (let slot = 0; slot < 4; slot += 1) quantisation.push(slot, ...new Array<number>(64).fill(1));
  const huffman = [0xff, 0xc4, 0x00, 0x92]; // DHT, 2 + 8 × 18 bytes: one 1-bit code for symbol 0 each
  for (const kind of [0x00, 0x10])
    for (let slot = 0; slot < 4; slot += 1) huffman.push(kind | slot, 1, ...new Array<number>(15).fill(0), 0);
  const header = [
    0xff,
    0xd8,
    ...quantisation,
    ...huffman,
    0xff,
    0xc0,
    0x00,
    0x0b,
    0x08,
    0x00,
    0x08,
    0x00,
    0x08,
    0x01,
    0x01,
    0x11,
    0x00,
    0xff,
    0xda,
    0x00,
    0x08,
    0x01,
    0x01,
    0x00,
    0x00,
    0x3f,
    0x00,
  ];
  const source = exports.malloc(header.length + 16);
  new Uint8Array(exports.memory.buffer, source, header.length).set(header);
  const out = source + header.length + (4 - ((source + header.length) % 4));
  exports.tjDecompressHeader3(handle, source, header.length, out, out + 4, out + 8, out + 12);
  exports.free(source);
}

/** A byte view of `size` bytes at `pointer`; taken fresh because memory growth detaches older views. */
export function heapBytes(memoryOwner: { exports: Allocator }, pointer: number, size: number): Uint8Array {
  return new Uint8Array(memoryOwner.exports.memory.buffer, pointer, size);
}

/** Mallocs in the arena; the caller frees. Null when the memory cannot grow that far. */
export function arenaAlloc(turbo: JpegTurbo, size: number): number | null {
  const pointer = turbo.exports.malloc(Math.max(1, size));
  return pointer === 0 ? null : pointer;
}

/**
 * Decodes the JPEG at `source` into `destination` at the libjpeg scale that yields `width × height`
 * (M/8 of the original, M = 1..8). libjpeg's warnings (premature end, corrupt data it papered over) make
 * TurboJPEG return -1; like sharp's default, the image is then refused rather than published with grey areas.
 */
export function decompressInto(
  turbo: JpegTurbo,
  source: number,
  size: number,
  destination: number,
  width: number,
  height: number,
  format: number,
  bytesPerPixel = 4,
): void {
  const status = turbo.exports.tjDecompress2(
    turbo.handle,
    source,
    size,
    destination,
    width,
    width * bytesPerPixel,
    height,
    format,
    0,
  );
  if (status !== 0) throw new UnconvertibleImageError("The JPEG file is damaged: its image data cannot be decoded.");
}
