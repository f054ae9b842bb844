import type { ByteReader } from "./byte-reader";
import { type CodecResizer, gifStatus } from "./codec-decoders";
import { ImageTooLargeError, UnconvertibleImageError } from "./errors";
import { createWebpCodec, type WebpCodec } from "./webp-codec";
import codecWasm from "./webp-codec.wasm";

/**
 * A GIF reader that no file can make allocate or work beyond what the logical screen and the file's own
 * length justify. The blocks are read here: `scanGif` walks every one of them (frames counted, every
 * descriptor checked) without decoding pixels; `decodeGif` reads the screen and the first frame's
 * descriptor, lets its caller admit them before anything is allocated, and feeds the frame's data sub-blocks
 * to the codec's decoder (converter/wasm/webp/gif.c: LZW, palette, rows into the resizer). Sizes claimed by an image
 * descriptor are only ever compared, never allocated: a frame is clipped to the screen, and LZW output that
 * falls off the screen is counted past without being expanded. Memory, in the codec: fixed 4096-entry LZW
 * tables, the palette, a 64 KiB input buffer and, for an interlaced frame only, the indices of the visible
 * part's even rows (≤ half the screen area); here two 256-entry colour tables.
 *
 * Work (in `GifWork.steps`) is at most: codes read (≤ file bits / 3) + frame rows crossed (≤ 65535) +
 * visible pixels + 2 × 4096 per visible row (expanding the LZW strings that straddle the visible edge).
 */

/** One image descriptor, with what applies to it and how much of it lies on the screen. */
type GifFrame = {
  left: number;
  top: number;
  width: number;
  height: number;
  interlaced: boolean;
  /** Entries in the colour table that applies (the local one, else the global one); 0 when there is none. */
  colours: number;
  /** Palette index drawn as transparent (from the Graphic Control Extension before the frame), or null. */
  transparentIndex: number | null;
  /** The part of the frame on the screen, from its top-left corner (0 × 0 when it lies outside). */
  visibleWidth: number;
  visibleHeight: number;
};

/** What `scanGif` learns without decoding pixels. */
export type GifScan = {
  /** The logical screen, the size of the decoded image. */
  width: number;
  height: number;
  /** Image descriptors in the file: more than one is an animation. */
  frames: number;
  firstFrame: GifFrame;
  /**
   * What admission weighs for this file besides the decoder's fixed ~100 KB: a screen row of RGBA and, for an
   * interlaced frame, its visible indices (of which the decoder keeps the even rows).
   */
  decodeBytes: number;
};

/** A counter of decoding steps (codes, row segments, LZW string characters), for tests and measurements. */
export type GifWork = { steps: number };

const unreadable = (why: string) => new UnconvertibleImageError(`The GIF file cannot be read: ${why}.`);

/** The error of a file that ends before its trailer: pass it to the ByteReader over a GIF. */
export const truncatedGif = () =>
  new UnconvertibleImageError(
    "The GIF file is incomplete: it ends in the middle of its data. Please upload the complete file again.",
  );

const trailer = 0x3b;
const extensionIntroducer = 0x21;
const imageSeparator = 0x2c;
const graphicControlLabel = 0xf9;

type Screen = { width: number; height: number; globalColours: number };
type Image = GifFrame & { minCodeSize: number; hasLocalTable: boolean };

const littleEndian16 = (bytes: Uint8Array, at: number) => (bytes[at] as number) | ((bytes[at + 1] as number) << 8);

async function readByte(reader: ByteReader): Promise<number> {
  return (await reader.take(1))[0] as number;
}

/** Reads `colours` RGB entries into `into`, or skips them when the caller needs no colours. */
async function readColourTable(reader: ByteReader, colours: number, into: Uint8Array | null): Promise<void> {
  if (into) into.set(await reader.take(colours * 3));
  else await reader.skip(colours * 3);
}

/** Header, logical screen descriptor and global colour table (≤ 768 bytes, whatever the file says). */
async function readScreen(reader: ByteReader, globalTable: Uint8Array | null): Promise<Screen> {
  // The signature is checked before more is asked for, so a short non-GIF is "not a GIF", not "incomplete".
  if (!(await reader.ensure(6))) throw unreadable("it does not start like a GIF");
  const signature = String.fromCharCode(...reader.takeBuffered(6));
  if (signature !== "GIF87a" && signature !== "GIF89a") throw unreadable("it does not start like a GIF");
  const descriptor = await reader.take(7);
  const width = littleEndian16(descriptor, 0);
  const height = littleEndian16(descriptor, 2);
  const packed = descriptor[4] as number;
  if (width === 0 || height === 0) throw unreadable("its screen width or height is zero");
  const globalColours = packed & 0x80 ? 2 << (packed & 7) : 0;
  await readColourTable(reader, globalColours, globalTable);
  return { width, height, globalColours };
}

/**
 * Skips data sub-blocks up to and including their zero-length terminator. Those already buffered are walked
 * without an await each (a 12 MP frame has about 26,000); the others a length byte at a time.
 */
async function skipSubBlocks(reader: ByteReader): Promise<void> {
  for (;;) {
    const buffered = reader.buffered();
    let at = 0;
    for (let size = buffered[at]; size !== undefined && size !== 0 && at + 1 + size <= buffered.length; ) {
      at += 1 + size;
      size = buffered[at];
    }
    if (buffered[at] === 0) {
      reader.takeBuffered(at + 1);
      return;
    }
    reader.takeBuffered(at);
    const size = await readByte(reader);
    if (size === 0) return;
    await reader.skip(size);
  }
}

/** Reads a Graphic Control Extension (after its label); returns its transparent index, or null. */
async function readGraphicControl(reader: ByteReader): Promise<number | null> {
  const size = await readByte(reader);
  if (size < 4) throw unreadable("its graphic control extension is damaged");
  const fields = await reader.take(size);
  const transparentIndex = (fields[0] as number) & 1 ? (fields[3] as number) : null;
  await skipSubBlocks(reader);
  return transparentIndex;
}

/**
 * Reads blocks up to the next image descriptor and its colour table and LZW code size, leaving the reader at
 * the image's first data sub-block; null at the trailer. Extensions other than graphic control are skipped.
 */
async function nextImage(reader: ByteReader, screen: Screen, localTable: Uint8Array | null): Promise<Image | null> {
  let transparentIndex: number | null = null;
  for (;;) {
    const introducer = await readByte(reader);
    if (introducer === trailer) return null;
    if (introducer === extensionIntroducer) {
      if ((await readByte(reader)) === graphicControlLabel) transparentIndex = await readGraphicControl(reader);
      else await skipSubBlocks(reader);
      continue;
    }
    if (introducer !== imageSeparator) {
      throw unreadable(`it contains an unknown block (0x${introducer.toString(16).padStart(2, "0")})`);
    }
    const descriptor = await reader.take(9);
    const left = littleEndian16(descriptor, 0);
    const top = littleEndian16(descriptor, 2);
    const width = littleEndian16(descriptor, 4);
    const height = littleEndian16(descriptor, 6);
    const packed = descriptor[8] as number;
    if (width === 0 || height === 0) throw unreadable("an image in it has a width or height of zero");
    const hasLocalTable = (packed & 0x80) !== 0;
    const colours = hasLocalTable ? 2 << (packed & 7) : screen.globalColours;
    if (hasLocalTable) await readColourTable(reader, colours, localTable);
    const minCodeSize = await readByte(reader);
    // Code sizes 0 and 1 are outside the GIF specification's 2–8 but decoded by browsers.
    if (minCodeSize > 8) throw unreadable(`its image data is damaged (code size ${minCodeSize})`);
    const onScreen = left < screen.width && top < screen.height;
    return {
      left,
      top,
      width,
      height,
      interlaced: (packed & 0x40) !== 0,
      colours,
      transparentIndex,
      visibleWidth: onScreen ? Math.min(width, screen.width - left) : 0,
      visibleHeight: onScreen ? Math.min(height, screen.height - top) : 0,
      minCodeSize,
      hasLocalTable,
    };
  }
}

function frameOf(image: Image): GifFrame {
  const { minCodeSize: _minCodeSize, hasLocalTable: _hasLocalTable, ...frame } = image;
  return frame;
}

/** Walks every block of the file without decoding pixels: validates it, counts frames, describes the first. */
export async function scanGif(reader: ByteReader): Promise<GifScan> {
  const screen = await readScreen(reader, null);
  let frames = 0;
  let firstFrame: GifFrame | null = null;
  for (;;) {
    const image = await nextImage(reader, screen, null);
    if (!image) break;
    frames += 1;
    firstFrame ??= frameOf(image);
    await skipSubBlocks(reader);
  }
  if (!firstFrame) throw unreadable("it contains no image");
  const indexBytes = firstFrame.interlaced ? firstFrame.visibleWidth * firstFrame.visibleHeight : 0;
  return { width: screen.width, height: screen.height, frames, firstFrame, decodeBytes: screen.width * 4 + indexBytes };
}

const damaged = (why: string) => unreadable(`its image data ${why}`);

/**
 * Decodes the first frame onto a transparent canvas of the logical screen, its rows going to the resizer
 * `admit` returns. `admit` gets the screen and the first frame as read by this pass (the reader must be at
 * the start of the file), before anything is allocated for them, and makes a resizer whose source is the
 * screen (four channels); the caller frees it. Reading stops after the frame's last visible row: what
 * follows is never read (`scanGif` is what walks the whole file).
 */
export async function decodeGif(
  reader: ByteReader,
  codec: WebpCodec,
  admit: (screen: { width: number; height: number }, frame: GifFrame) => CodecResizer,
  options: { tick?: () => void; work?: GifWork } = {},
): Promise<void> {
  const globalTable = new Uint8Array(256 * 3);
  const localTable = new Uint8Array(256 * 3);
  const screen = await readScreen(reader, globalTable);
  const image = await nextImage(reader, screen, localTable);
  if (!image) throw unreadable("it contains no image");
  const resizer = admit(screen, frameOf(image));
  const decoder = codec.createGifDecoder(
    {
      screenWidth: screen.width,
      screenHeight: screen.height,
      left: image.left,
      top: image.top,
      width: image.width,
      height: image.height,
      visibleWidth: image.visibleWidth,
      visibleHeight: image.visibleHeight,
      interlaced: image.interlaced,
      minCodeSize: image.minCodeSize,
      transparentIndex: image.transparentIndex,
    },
    resizer,
  );
  if (!decoder) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  try {
    // Indices past the colour table, and every index of a frame without one, are opaque black, as in browsers;
    // gif.c makes the transparent index transparent, whether or not it is in the table.
    const table = image.hasLocalTable ? localTable : globalTable;
    const palette = decoder.palette();
    for (let index = 0; index < 256; index += 1) {
      if (index < image.colours) palette.set(table.subarray(index * 3, index * 3 + 3), index * 4);
      else palette.fill(0, index * 4, index * 4 + 3);
      palette[index * 4 + 3] = 255;
    }
    let status = decoder.begin();
    while (status === gifStatus.needInput) {
      // Whole sub-blocks, as many as are buffered and fit the decoder's input: a sub-block is decoded only once
      // all of it has arrived, so a file cut inside one is "incomplete", whatever the bytes before the cut.
      const buffered = reader.buffered();
      let end = 0;
      while (end < buffered.length) {
        const size = buffered[end] as number;
        if (end + 1 + size > buffered.length || end + 1 + size > decoder.inputBytes) break;
        end += 1 + size;
        if (size === 0) break; // the terminator: what follows is not this frame's data
      }
      if (end === 0) {
        if (!(await reader.ensure(buffered.length === 0 ? 1 : 1 + (buffered[0] as number)))) throw truncatedGif();
        continue;
      }
      status = decoder.feed(reader.takeBuffered(end));
      options.tick?.();
    }
    switch (status) {
      case gifStatus.finished:
        return;
      case gifStatus.badFirstCode:
        throw damaged("is damaged (it starts with an undefined code)");
      case gifStatus.undefinedCode:
        throw damaged("is damaged (it refers to an undefined code)");
      default:
        throw damaged("ends before the image is complete");
    }
  } finally {
    if (options.work) options.work.steps += decoder.steps();
    decoder.free();
  }
}

/** The codec instance of `decodeGifRows` (tests and tools; the conversion uses its own). */
let rowsCodec: WebpCodec | null = null;

/**
 * Decodes the first frame onto a transparent canvas of the logical screen and hands `row` each screen row
 * (width × 4 RGBA bytes, top to bottom), for tests and tools: the same decoder as the conversion's, its rows
 * kept at full size (screen area × 4 bytes in a codec instance of its own) instead of reduced. Rows decoded
 * before an error are handed over before it is thrown. The reader must be at the start of the file.
 */
export async function decodeGifRows(
  reader: ByteReader,
  row: (rgba: Uint8Array) => void,
  work: GifWork = { steps: 0 },
): Promise<void> {
  rowsCodec ??= createWebpCodec(codecWasm);
  const codec = rowsCodec;
  const canvas = { pointer: 0, width: 0, resizer: null as CodecResizer | null };
  try {
    await decodeGif(
      reader,
      codec,
      (screen) => {
        canvas.pointer = codec.malloc(screen.width * screen.height * 4);
        if (canvas.pointer === 0)
          throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
        canvas.width = screen.width;
        // An area average at 1:1 is a copy: every pixel is its own footprint (alpha is 0 or 255 here).
        canvas.resizer = codec.createResizer(screen.width, screen.height, screen.width, screen.height, canvas.pointer, {
          opaque: false,
          channels: 4,
        });
        if (!canvas.resizer)
          throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
        return canvas.resizer;
      },
      { work },
    );
  } finally {
    const rowBytes = canvas.width * 4;
    const rows = canvas.resizer?.rowsPushed ?? 0;
    canvas.resizer?.free();
    for (let y = 0; y < rows; y += 1) row(codec.heap(canvas.pointer + y * rowBytes, rowBytes));
    if (canvas.pointer) codec.free(canvas.pointer);
  }
}
