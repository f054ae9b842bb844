import type { CodecExports } from "./codec-exports";

const heap = (exports: CodecExports, pointer: number, size: number) =>
  new Uint8Array(exports.memory.buffer, pointer, size);

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

/** A lossless stream (codec.c, `lossless_*`) of the codec; null without memory. */
export function losslessStream(
  exports: CodecExports,
  size: number,
  capacity: number,
  out: number,
  width: number,
  height: number,
  resizer: CodecResizer | null,
): CodecLosslessStream | null {
  const stream = exports.lossless_create(size, capacity, out, width, height, resizer ? resizer.handle : 0);
  if (stream === 0) return null;
  return {
    input: () => exports.lossless_input(stream),
    room: () => exports.lossless_room(stream),
    feed: (count) => exports.lossless_feed(stream, count),
    free: () => exports.lossless_free(stream),
  };
}

/** A resizer (resize.c) of the codec; null without memory. */
export function resizer(
  exports: CodecExports,
  sourceWidth: number,
  sourceHeight: number,
  targetWidth: number,
  targetHeight: number,
  out: number,
  { opaque, channels }: { opaque: boolean; channels: 3 | 4 },
): CodecResizer | null {
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
}

/** A PNG data decoder (png.c) of the codec; null without memory. */
export function pngDecoder(exports: CodecExports, plan: PngDecoderPlan, resizer: CodecResizer): CodecPngDecoder | null {
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
    palette: () => heap(exports, exports.png_palette(handle), 256 * 4),
    inputBytes,
    feed(data) {
      if (data.length > inputBytes) throw new RangeError("more PNG data than the decoder's input buffer");
      heap(exports, input, data.length).set(data); // zlib may have grown the memory: a fresh view each time
      return exports.png_feed(handle, data.length);
    },
    free: () => exports.png_free(handle),
  };
}

/** A GIF frame decoder (gif.c) of the codec; null without memory. */
export function gifDecoder(exports: CodecExports, plan: GifDecoderPlan, resizer: CodecResizer): CodecGifDecoder | null {
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
    palette: () => heap(exports, exports.gif_palette(handle), 256 * 4),
    begin: () => exports.gif_begin(handle),
    inputBytes,
    feed(data) {
      if (data.length > inputBytes) throw new RangeError("more GIF data than the decoder's input buffer");
      heap(exports, input, data.length).set(data);
      return exports.gif_feed(handle, data.length);
    },
    steps: () => exports.gif_steps(handle),
    free: () => exports.gif_free(handle),
  };
}

/** What jpeg.c's decoder answers (`decodeJpeg`). */
export const jpegStatus = {
  ok: 0,
  /** A fatal libjpeg error or a warning (corrupt data, data that ends early): refused, as sharp does. */
  damaged: -1,
  /** libjpeg's buffers do not fit: its whole-image buffer (a file coded in several scans) past the bound. */
  outOfMemory: -2,
  /** libjpeg's scaled size is not the resizer's source size (a frame header it read differently). */
  sizeMismatch: -3,
} as const;

/** How jpeg.c decodes a baseline JPEG (`WebpCodec.decodeJpeg`). */
export type JpegDecodePlan = {
  /** libjpeg's scale: `scale`/8, 1 to 8. */
  scale: number;
  /** A CMYK-to-RGB transform for CMYK rows (the resizer then takes 3 channels); 0 for the plain formula. */
  ink: number;
  /** Adobe CMYK: stored inverted (255 = no ink). */
  inverted: boolean;
  /** Bound of libjpeg's allocations, its whole-image buffer (a file coded in several scans) among them. */
  maxMemory: number;
};

export function decodeJpeg(
  exports: CodecExports,
  file: number,
  size: number,
  resizer: CodecResizer,
  plan: JpegDecodePlan,
): number {
  const { scale, ink, inverted, maxMemory } = plan;
  return exports.jpeg_decode(file, size, scale, resizer.handle, ink, inverted ? 1 : 0, Math.max(1, maxMemory));
}
