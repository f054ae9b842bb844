/**
 * The codec module's exports (converter/wasm/webp: codec.c, png.c, gif.c, jpeg.c, resize.c, colour.c), as the Worker calls
 * them.
 */
export type CodecExports = {
  memory: WebAssembly.Memory;
  malloc(size: number): number;
  free(pointer: number): void;
  encode_rgba(pointer: number, width: number, height: number, quality: number, method: number, opaque: number): number;
  rgba_has_transparency(pointer: number, pixels: number): number;
  decode_scaled(file: number, size: number, out: number, width: number, height: number): number;
  decode_resized(file: number, size: number, resizer: number): number;
  get_features(file: number, size: number, out: number): number;
  resizer_create(
    sourceWidth: number,
    sourceHeight: number,
    targetWidth: number,
    targetHeight: number,
    out: number,
    opaque: number,
    channels: number,
  ): number;
  resizer_free(resizer: number): void;
  resizer_row(resizer: number): number;
  resizer_push(resizer: number): number;
  resizer_saw_transparency(resizer: number): number;
  resizer_rows_pushed(resizer: number): number;
  png_create(
    width: number,
    height: number,
    bitDepth: number,
    colorType: number,
    interlaced: number,
    paletteEntries: number,
    grayKey: number,
    redKey: number,
    greenKey: number,
    blueKey: number,
    resizer: number,
  ): number;
  png_free(png: number): void;
  png_palette(png: number): number;
  png_input(png: number): number;
  png_input_size(): number;
  png_feed(png: number, size: number): number;
  gif_create(
    screenWidth: number,
    screenHeight: number,
    left: number,
    top: number,
    frameWidth: number,
    frameHeight: number,
    visibleWidth: number,
    visibleHeight: number,
    interlaced: number,
    minCodeSize: number,
    transparentIndex: number,
    resizer: number,
  ): number;
  gif_free(gif: number): void;
  gif_palette(gif: number): number;
  gif_input(gif: number): number;
  gif_input_size(): number;
  gif_steps(gif: number): number;
  gif_begin(gif: number): number;
  gif_feed(gif: number, size: number): number;
  colour_create(profile: number, size: number, kind: number): number;
  colour_apply(transform: number, input: number, output: number, count: number): void;
  colour_free(transform: number): void;
  colour_inflate(data: number, size: number, cap: number, outSize: number): number;
  lossless_create(size: number, capacity: number, out: number, width: number, height: number, resizer: number): number;
  lossless_input(stream: number): number;
  lossless_room(stream: number): number;
  lossless_feed(stream: number, count: number): number;
  lossless_free(stream: number): void;
  jpeg_decode(
    file: number,
    size: number,
    scale: number,
    resizer: number,
    ink: number,
    inverted: number,
    maxMemory: number,
  ): number;
  _initialize(): void;
};

/** An instantiated codec: its exports, and where `write_output` puts the pieces of the file being encoded. */
export type CodecInstance = { exports: CodecExports; output: { sink: Uint8Array[] | null } };

/**
 * Instantiates the module synchronously with its host functions, and runs its C constructors once (a reactor
 * module).
 */
export function instantiateCodec(module: WebAssembly.Module): CodecInstance {
  let memory: WebAssembly.Memory | undefined;
  // The pieces of the file being encoded; write_output copies into it as libwebp writes.
  const output: { sink: Uint8Array[] | null } = { sink: null };
  let tempRet0 = 0;
  const instance = new WebAssembly.Instance(module, {
    env: {
      write_output: (pointer: number, size: number) => {
        if (!output.sink || !memory) return 0;
        output.sink.push(new Uint8Array(memory.buffer, pointer, size).slice());
        return 1;
      },
      // Views are taken fresh from memory.buffer on every use, so there is nothing to refresh.
      emscripten_notify_memory_growth: () => {},
      // emscripten's setjmp support (jpeg.c's recovery from libjpeg's errors) passes a second return value
      // through these; its own JS runtime would provide them.
      getTempRet0: () => tempRet0,
      setTempRet0: (value: number) => {
        tempRet0 = value;
      },
    },
  });
  const exports = instance.exports as unknown as CodecExports;
  memory = exports.memory;
  exports._initialize(); // a reactor module: runs the C constructors once
  return { exports, output };
}
