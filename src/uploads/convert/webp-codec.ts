import { encodeAlph } from "./alpha-chunk";

/**
 * Our libwebp build (wasm/webp: Debian's libwebp 1.2.4 + codec.c, `npm run build:wasm`): decoder and
 * encoder in one linear memory, so the pipeline decodes, resizes and encodes without copying pixels out.
 *
 * The module is standalone (no emscripten JS runtime): the Worker gets it as a compiled module (wrangler's
 * CompiledWasm rule) and instantiates it synchronously with the two host functions below, the way native.ts
 * loads the wasi builds. Its memory starts at 2 MiB and grows by exactly what malloc asks for, up to the
 * cap set in build.sh (80 MiB); it never shrinks, so the instance costs its high-water mark for its life.
 *
 * Encoding: the RGBA is imported as opaque and freed once libwebp holds its YUV copy (5.6 bytes per output
 * pixel at method 2, whatever the content); the alpha plane is coded here by alpha-chunk.ts, reading the same
 * buffer in place before the encode, and the VP8X + ALPH + VP8 container is put together from pieces.
 */

type CodecExports = {
  memory: WebAssembly.Memory;
  malloc(size: number): number;
  free(pointer: number): void;
  encode_rgba(pointer: number, width: number, height: number, quality: number, method: number): number;
  rgba_has_transparency(pointer: number, pixels: number): number;
  decode_scaled(file: number, size: number, out: number, width: number, height: number): number;
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
  lossless_create(size: number, capacity: number, out: number, width: number, height: number): number;
  lossless_input(stream: number): number;
  lossless_room(stream: number): number;
  lossless_feed(stream: number, count: number): number;
  lossless_free(stream: number): void;
  _initialize(): void;
};

/**
 * Upper bound of the codec's memory after encoding width × height at quality ≤ 85 and method ≤ 2, starting
 * from a fresh instance: the 2 MiB it starts with (1.25 MB of static data, most of it the fallback CMYK
 * profile) plus 5.6 bytes per pixel (measured: at most 5.39 B/px above the start, for noise and photos from
 * 1000 × 700 to 2560 × 2560; alpha adds nothing here, it is coded in JS). Quality 90 and above need 8.5 B/px
 * (libwebp's partition buffers double once more).
 */
export function encodeMemoryBytes(width: number, height: number): number {
  return initialMemoryBytes + Math.ceil(5.6 * width * height);
}

/** The codec's memory when instantiated (build.sh's INITIAL_MEMORY). */
export const initialMemoryBytes = 2_097_152;

/**
 * What colour.c's transforms take: grey (the R byte of RGBA, in place), RGB (RGBA in place), CMYK rows (4
 * bytes a pixel) to RGB rows (3 bytes a pixel), plain (0 = no ink) or inverted as Adobe's files store it.
 */
export const colourKind = { grey: 1, rgb: 3, cmyk: 4, cmykInverted: 5 } as const;
export type ColourKind = (typeof colourKind)[keyof typeof colourKind];

/** libwebp's VP8StatusCode, as returned by decodeScaled. */
export const webpStatus = {
  ok: 0,
  outOfMemory: 1,
  invalidParam: 2,
  bitstreamError: 3,
  unsupportedFeature: 4,
  suspended: 5,
  userAbort: 6,
  notEnoughData: 7,
} as const;

/** What a lossless stream's feed answers beyond webpStatus: the window is full and the decoder cannot move on. */
export const losslessWindowTooSmall = 101;

/**
 * A lossless (VP8L) bitstream decoded from the file streamed through a window of the codec's memory
 * (codec.c, `lossless_*`): bytes are written at `input()` (at most `room()`), then `feed(count)` decodes what
 * they allow, scaled into the target. libwebp still holds the image's whole ARGB plane (4 B per source pixel,
 * allocated by the first feed that reaches the pixels), but never the file.
 */
export type CodecLosslessStream = {
  /** Where the next bytes go (in the codec's memory; take a fresh view, the memory may have grown). */
  input(): number;
  /** How many bytes fit there now (never more than the bitstream has left). */
  room(): number;
  /** Decodes with `count` more bytes: webpStatus.ok when done, suspended for more, losslessWindowTooSmall, or an error. */
  feed(count: number): number;
  free(): void;
};

/** libwebp's WebPEncodingError names (index = code), plus 100 for arguments out of range. */
const encodingErrors = [
  "ok",
  "out of memory",
  "out of memory for the bitstream",
  "null parameter",
  "invalid configuration",
  "bad dimension",
  "partition 0 overflow",
  "partition overflow",
  "bad write",
  "file too big",
  "user abort",
];

/** Thrown by encode when libwebp fails; `code` is its WebPEncodingError (1 = out of memory). */
export class WebpEncodeError extends Error {
  override name = "WebpEncodeError";
  constructor(readonly code: number) {
    super(`libwebp could not encode the image: ${encodingErrors[code] ?? "invalid arguments"} (${code})`);
  }
}

/** What a WebP file's header says (WebPGetFeatures). */
export type WebpFeatures = {
  width: number;
  height: number;
  hasAlpha: boolean;
  hasAnimation: boolean;
  /** Bitstream of the (first) frame; "mixed" for animations and files whose frame was not reached. */
  format: "mixed" | "lossy" | "lossless";
};

/** Encoder settings: quality 0–100, method 0–6 (default 2, see encoder.ts for why). */
export type WebpEncodeOptions = { quality: number; method?: number };

/**
 * The streaming area-average downscaler (resize.c): source rows are written to `row` (sourceWidth ×
 * channels bytes in the codec's memory) and pushed one at a time; target rows land in the RGBA target.
 */
export type CodecResizer = {
  /** The C object (png.c hands its rows to it directly). */
  readonly handle: number;
  /** Where the next source row goes. */
  readonly row: number;
  /** Consumes the row at `row`. */
  push(): void;
  readonly rowsPushed: number;
  /** Whether a written target pixel has alpha below 255. */
  sawTransparency(): boolean;
  free(): void;
};

/** The PNG image data decoder (png.c): IDAT bytes in, rows into a resizer. */
export type CodecPngDecoder = {
  /** The 256 RGBA entries of the palette, transparency applied, filled before the first feed. */
  palette(): Uint8Array;
  /** Inflates up to `inputBytes` of IDAT data; returns a `pngStatus` code. */
  feed(data: Uint8Array): number;
  readonly inputBytes: number;
  free(): void;
};

/** What png.c's png_feed answers. */
export const pngStatus = {
  needInput: 0,
  finished: 1,
  badData: -1,
  badFilter: -2,
  badPaletteIndex: -3,
  dataEndsEarly: -4,
  noMemory: -5,
} as const;

/** The GIF image data decoder (gif.c): data sub-blocks in, screen rows into a resizer. */
export type CodecGifDecoder = {
  /** The 256 RGBA entries of the frame's colour table (0, 0, 0, 255 past it), filled before `begin`. */
  palette(): Uint8Array;
  /** Hands on the screen rows above the frame (all of them for a frame off the screen); a `gifStatus` code. */
  begin(): number;
  /** Decodes whole data sub-blocks (length bytes included), up to `inputBytes`; returns a `gifStatus` code. */
  feed(data: Uint8Array): number;
  readonly inputBytes: number;
  /** Decoding steps so far: codes, row segments, string characters expanded. */
  steps(): number;
  free(): void;
};

/** What gif.c's gif_begin and gif_feed answer. */
export const gifStatus = {
  needInput: 0,
  finished: 1,
  endsEarly: -1,
  badFirstCode: -2,
  undefinedCode: -3,
} as const;

/** What a GIF decoder needs: the screen, the frame as its descriptor claims and its part on the screen. */
export type GifDecoderPlan = {
  screenWidth: number;
  screenHeight: number;
  left: number;
  top: number;
  width: number;
  height: number;
  visibleWidth: number;
  visibleHeight: number;
  interlaced: boolean;
  minCodeSize: number;
  /** The index drawn transparent, or null. */
  transparentIndex: number | null;
};

/** What a PNG decoder needs from the header (tRNS keys: -1 when absent). */
export type PngDecoderPlan = {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  interlaced: boolean;
  paletteEntries: number;
  grayKey: number;
  rgbKey: [number, number, number];
};

/** One libwebp instance and the operations the conversion pipeline needs. */
export type WebpCodec = {
  /** Allocates `size` bytes in the codec's heap; 0 when the memory cannot grow that far. */
  malloc(size: number): number;
  /** Frees a block from malloc. */
  free(pointer: number): void;
  /** A fresh view of `size` bytes at `pointer` (views of older buffers detach when the memory grows). */
  heap(pointer: number, size: number): Uint8Array;
  /** Current size of the linear memory in bytes: the instance's high-water mark. */
  memoryBytes(): number;
  /**
   * Encodes the width × height RGBA at `pointer` (malloc'd here; always freed by this call) as a lossy WebP,
   * returned as the file's pieces in order: a simple "VP8 " file when every alpha is 255, otherwise
   * VP8X + ALPH + VP8. Throws WebpEncodeError (code 1 when the memory cap is reached) or RangeError.
   */
  encode(pointer: number, width: number, height: number, options: WebpEncodeOptions): Uint8Array[];
  /**
   * Decodes the WebP file at `file` (`size` bytes) to `width` × `height` RGBA at `out` (stride width × 4,
   * width × height × 4 bytes malloc'd by the caller), scaling while decoding. Returns a webpStatus code;
   * animations give unsupportedFeature. Working memory besides file and output, per source pixel (measured
   * at 4000 × 3000): lossy opaque ~0 (0.5 MB of rows); lossy with our ALPH 3 B (libwebp 1.2.4 reserves the
   * alpha plane twice, plus its 8-bit decoder's plane); lossy with libwebp's own ALPH (predictor transform)
   * 6 B; lossless 4 B. When the alpha plane cannot be allocated libwebp reports bitstreamError, not outOfMemory.
   */
  decodeScaled(file: number, size: number, out: number, width: number, height: number): number;
  /** Reads the header of the WebP file at `file` (`size` bytes); null when it is not a readable WebP. */
  features(file: number, size: number): WebpFeatures | null;
  /**
   * A decoder of a VP8L bitstream of `size` bytes to `width` × `height` RGBA at `out` (scaled while decoding),
   * reading through a window of `capacity` bytes; null without memory.
   */
  createLosslessStream(
    size: number,
    capacity: number,
    out: number,
    width: number,
    height: number,
  ): CodecLosslessStream | null;
  /**
   * A downscaler from `sourceWidth × sourceHeight` rows of `channels` (3: RGB, opaque; 4: RGBA) bytes a pixel
   * to the `targetWidth × targetHeight` RGBA at `out`; null when memory runs out. Its row buffer is
   * allocated here, so views taken before may detach.
   */
  createResizer(
    sourceWidth: number,
    sourceHeight: number,
    targetWidth: number,
    targetHeight: number,
    out: number,
    options: { opaque: boolean; channels: 3 | 4 },
  ): CodecResizer | null;
  /** A PNG data decoder handing its rows to `resizer` (whose source size is the image's); null without memory. */
  createPngDecoder(plan: PngDecoderPlan, resizer: CodecResizer): CodecPngDecoder | null;
  /**
   * A GIF frame decoder handing the screen's rows to `resizer` (whose source size is the screen's, four
   * channels); null without memory. An interlaced frame keeps its visible even rows, one byte a pixel.
   */
  createGifDecoder(plan: GifDecoderPlan, resizer: CodecResizer): CodecGifDecoder | null;
  /**
   * A transform to sRGB from the ICC profile at `profile` (`size` bytes, in the codec's memory; 0 for the
   * built-in press CMYK profile) for pixels of `kind`; 0 when lcms refuses the profile, its colour space is
   * not the image's, or memory runs out. The profile's bytes may be freed as soon as this returns.
   */
  createColourTransform(profile: number, size: number, kind: ColourKind): number;
  /** Runs `transform` over `count` pixels from `input` to `output` (the same RGBA for grey and RGB). */
  applyColour(transform: number, input: number, output: number, count: number): void;
  freeColour(transform: number): void;
  /**
   * Inflates a PNG iCCP chunk's zlib data into a newly malloc'd profile of the size its header declares, at
   * most `cap` bytes (nothing beyond is ever inflated); null when the data is not exactly such a profile.
   */
  inflateProfile(data: Uint8Array, cap: number): { pointer: number; size: number } | null;
};

const formats = ["mixed", "lossy", "lossless"] as const;
const ascii = (text: string) => Array.from(text, (c) => c.charCodeAt(0));

/**
 * Turns libwebp's simple file (RIFF header, "VP8 " chunk) into VP8X + ALPH + VP8 without copying the VP8
 * data: only the 12-byte RIFF header is dropped from the front of libwebp's pieces (a view, not a copy).
 */
function withAlphaChunk(simple: Uint8Array[], alph: Uint8Array, width: number, height: number): Uint8Array[] {
  const vp8: Uint8Array[] = [];
  let vp8Bytes = 0;
  let skip = 12;
  const start: number[] = [];
  for (const piece of simple) {
    if (start.length < 16) start.push(...piece.subarray(0, 16 - start.length));
    const part = skip >= piece.length ? null : piece.subarray(skip);
    skip = Math.max(0, skip - piece.length);
    if (part && part.length > 0) {
      vp8.push(part);
      vp8Bytes += part.length;
    }
  }
  const tag = String.fromCharCode(...start.slice(0, 4), ...start.slice(8, 16));
  if (tag !== "RIFFWEBPVP8 ") throw new Error(`libwebp wrote an unexpected container: ${JSON.stringify(tag)}`);
  const pad = alph.length & 1;
  const header = new Uint8Array(12 + 18 + 8);
  const view = new DataView(header.buffer);
  header.set(ascii("RIFF"), 0);
  view.setUint32(4, 4 + 18 + 8 + alph.length + pad + vp8Bytes, true);
  header.set(ascii("WEBPVP8X"), 8);
  view.setUint32(16, 10, true);
  header[20] = 0x10; // flags: alpha; then 24 reserved bits
  for (let k = 0; k < 3; k += 1) {
    header[24 + k] = ((width - 1) >> (8 * k)) & 255; // canvas width - 1, 24 bits
    header[27 + k] = ((height - 1) >> (8 * k)) & 255; // canvas height - 1, 24 bits
  }
  header.set(ascii("ALPH"), 30);
  view.setUint32(34, alph.length, true);
  return pad ? [header, alph, new Uint8Array(1), ...vp8] : [header, alph, ...vp8];
}

/** Instantiates the codec from its compiled module (Workers cannot fetch or compile wasm at run time). */
export function createWebpCodec(module: WebAssembly.Module): WebpCodec {
  let memory: WebAssembly.Memory | undefined;
  // The pieces of the file being encoded; write_output copies into it as libwebp writes.
  let sink: Uint8Array[] | null = null;
  const instance = new WebAssembly.Instance(module, {
    env: {
      write_output: (pointer: number, size: number) => {
        if (!sink || !memory) return 0;
        sink.push(new Uint8Array(memory.buffer, pointer, size).slice());
        return 1;
      },
      // Views are taken fresh from memory.buffer on every use, so there is nothing to refresh.
      emscripten_notify_memory_growth: () => {},
    },
  });
  const exports = instance.exports as unknown as CodecExports;
  memory = exports.memory;
  exports._initialize(); // a reactor module: runs the C constructors once

  const heap = (pointer: number, size: number) => new Uint8Array(exports.memory.buffer, pointer, size);

  const encode = (pointer: number, width: number, height: number, options: WebpEncodeOptions): Uint8Array[] => {
    const { quality, method = 2 } = options;
    const valid =
      Number.isInteger(width) &&
      Number.isInteger(height) &&
      width > 0 &&
      height > 0 &&
      width <= 16383 &&
      height <= 16383 &&
      quality >= 0 &&
      quality <= 100 &&
      Number.isInteger(method) &&
      method >= 0 &&
      method <= 6;
    if (!valid) {
      exports.free(pointer);
      throw new RangeError(`cannot encode ${width} × ${height} at quality ${quality}, method ${method}`);
    }
    let alph: Uint8Array | null = null;
    try {
      // Read in place, before encode_rgba frees the pixels.
      if (exports.rgba_has_transparency(pointer, width * height) !== 0)
        alph = encodeAlph(heap(pointer, width * height * 4), width, height).payload;
    } catch (error) {
      exports.free(pointer);
      throw error;
    }
    const pieces: Uint8Array[] = [];
    sink = pieces;
    let status: number;
    try {
      status = exports.encode_rgba(pointer, width, height, quality, method);
    } finally {
      sink = null;
    }
    if (status !== 0) throw new WebpEncodeError(status);
    return alph ? withAlphaChunk(pieces, alph, width, height) : pieces;
  };

  // The five int32 fields get_features writes, allocated once now, at the bottom of the heap, rather than
  // between the large blocks of a conversion.
  const featureFields = exports.malloc(20);
  const features = (file: number, size: number): WebpFeatures | null => {
    if (exports.get_features(file, size, featureFields) !== webpStatus.ok) return null;
    const fields = new Int32Array(exports.memory.buffer, featureFields, 5);
    return {
      width: fields[0] as number,
      height: fields[1] as number,
      hasAlpha: fields[2] !== 0,
      hasAnimation: fields[3] !== 0,
      format: formats[fields[4] as number] ?? "mixed",
    };
  };

  const inflateProfile = (data: Uint8Array, cap: number): { pointer: number; size: number } | null => {
    const input = exports.malloc(data.length);
    if (input === 0) return null;
    try {
      heap(input, data.length).set(data);
      // The profile's size comes back in the first of the feature fields (free between calls).
      const pointer = exports.colour_inflate(input, data.length, cap, featureFields);
      if (pointer === 0) return null;
      return { pointer, size: new Uint32Array(exports.memory.buffer, featureFields, 1)[0] as number };
    } finally {
      exports.free(input);
    }
  };

  return {
    malloc: (size) => exports.malloc(size),
    free: (pointer) => exports.free(pointer),
    heap,
    memoryBytes: () => exports.memory.buffer.byteLength,
    encode,
    decodeScaled: (file, size, out, width, height) => exports.decode_scaled(file, size, out, width, height),
    features,
    createLosslessStream(size, capacity, out, width, height) {
      const stream = exports.lossless_create(size, capacity, out, width, height);
      if (stream === 0) return null;
      return {
        input: () => exports.lossless_input(stream),
        room: () => exports.lossless_room(stream),
        feed: (count) => exports.lossless_feed(stream, count),
        free: () => exports.lossless_free(stream),
      };
    },
    createResizer(sourceWidth, sourceHeight, targetWidth, targetHeight, out, { opaque, channels }) {
      const handle = exports.resizer_create(
        sourceWidth,
        sourceHeight,
        targetWidth,
        targetHeight,
        out,
        opaque ? 1 : 0,
        channels,
      );
      if (handle === 0) return null;
      return {
        handle,
        row: exports.resizer_row(handle),
        push() {
          if (exports.resizer_push(handle) < 0) throw new RangeError("more rows than the source height");
        },
        get rowsPushed() {
          return exports.resizer_rows_pushed(handle);
        },
        sawTransparency: () => exports.resizer_saw_transparency(handle) !== 0,
        free: () => exports.resizer_free(handle),
      };
    },
    createPngDecoder(plan, resizer) {
      const handle = exports.png_create(
        plan.width,
        plan.height,
        plan.bitDepth,
        plan.colorType,
        plan.interlaced ? 1 : 0,
        plan.paletteEntries,
        plan.grayKey,
        plan.rgbKey[0],
        plan.rgbKey[1],
        plan.rgbKey[2],
        resizer.handle,
      );
      if (handle === 0) return null;
      const input = exports.png_input(handle);
      const inputBytes = exports.png_input_size();
      return {
        palette: () => heap(exports.png_palette(handle), 256 * 4),
        inputBytes,
        feed(data) {
          if (data.length > inputBytes) throw new RangeError("more PNG data than the decoder's input buffer");
          heap(input, data.length).set(data); // zlib may have grown the memory: a fresh view each time
          return exports.png_feed(handle, data.length);
        },
        free: () => exports.png_free(handle),
      };
    },
    createGifDecoder(plan, resizer) {
      const handle = exports.gif_create(
        plan.screenWidth,
        plan.screenHeight,
        plan.left,
        plan.top,
        plan.width,
        plan.height,
        plan.visibleWidth,
        plan.visibleHeight,
        plan.interlaced ? 1 : 0,
        plan.minCodeSize,
        plan.transparentIndex ?? -1,
        resizer.handle,
      );
      if (handle === 0) return null;
      const input = exports.gif_input(handle);
      const inputBytes = exports.gif_input_size();
      return {
        palette: () => heap(exports.gif_palette(handle), 256 * 4),
        begin: () => exports.gif_begin(handle),
        inputBytes,
        feed(data) {
          if (data.length > inputBytes) throw new RangeError("more GIF data than the decoder's input buffer");
          heap(input, data.length).set(data);
          return exports.gif_feed(handle, data.length);
        },
        steps: () => exports.gif_steps(handle),
        free: () => exports.gif_free(handle),
      };
    },
    createColourTransform: (profile, size, kind) => exports.colour_create(profile, size, kind),
    applyColour: (transform, input, output, count) => exports.colour_apply(transform, input, output, count),
    freeColour: (transform) => exports.colour_free(transform),
    inflateProfile,
  };
}
