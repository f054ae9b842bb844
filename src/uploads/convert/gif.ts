import type { ByteReader } from "./byte-reader";
import { UnconvertibleImageError } from "./errors";

/**
 * A GIF reader that no file can make allocate or work beyond what the logical screen and the file's own
 * length justify. Sizes claimed by an image descriptor are only ever compared, never allocated: a frame is
 * clipped to the screen, and LZW output that falls off the screen is counted past without being expanded.
 * Memory: one RGBA screen row, fixed 4096-entry LZW tables, two 256-entry colour tables and, for an
 * interlaced frame only, the indices of the frame's visible part (≤ screen area).
 *
 * Work (in `GifWork.steps`) is at most: codes read (≤ file bits / 3) + frame rows crossed (≤ 65535) +
 * visible pixels + 2 × 4096 per visible row (expanding the LZW strings that straddle the visible edge).
 */

/** One image descriptor, with what applies to it and how much of it lies on the screen. */
export type GifFrame = {
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
  /** Bytes `decodeGifRows` allocates for this file besides its fixed ~30 KB of tables. */
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

const maxCodes = 4096;
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

/** Skips data sub-blocks up to and including their zero-length terminator, one length byte at a time. */
async function skipSubBlocks(reader: ByteReader): Promise<void> {
  for (let size = await readByte(reader); size !== 0; size = await readByte(reader)) await reader.skip(size);
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

/** Where decoded LZW strings go: `write` gets visible runs only, `rowDone` each finished visible frame row. */
type IndexSink = {
  write(frameRow: number, column: number, string: Uint8Array, offset: number, count: number): void;
  /** True once every visible row has been received (decoding stops there). */
  rowDone(frameRow: number): boolean;
};

const interlacePassStart = [0, 4, 2, 1];
const interlacePassStep = [8, 8, 4, 2];

/**
 * Decodes the LZW data sub-blocks of `image` into `sink` until the sink has every visible row. Strings that
 * fall wholly off the screen only advance the position, so a frame's claimed size costs nothing by itself.
 */
async function decodeIndices(reader: ByteReader, image: Image, sink: IndexSink, work: GifWork): Promise<void> {
  const { minCodeSize, width: frameWidth, height: frameHeight, visibleWidth, visibleHeight, interlaced } = image;
  const clearCode = 1 << minCodeSize;
  const endCode = clearCode + 1;
  const prefix = new Uint16Array(maxCodes);
  const suffix = new Uint8Array(maxCodes);
  const stringLength = new Uint16Array(maxCodes);
  const firstIndex = new Uint8Array(maxCodes);
  const string = new Uint8Array(maxCodes);
  for (let code = 0; code < clearCode; code += 1) {
    suffix[code] = code;
    firstIndex[code] = code;
    stringLength[code] = 1;
  }
  let nextCode = clearCode + 2;
  let codeSize = minCodeSize + 1;
  let previous = -1;
  let bits = 0;
  let bitCount = 0;
  let frameRow = 0;
  let column = 0;
  let pass = 0;
  let done = false;
  let steps = 0;

  const advanceRow = () => {
    if (!interlaced) {
      frameRow += 1;
      return frameRow < frameHeight;
    }
    frameRow += interlacePassStep[pass] as number;
    while (frameRow >= frameHeight) {
      pass += 1;
      if (pass === 4) return false;
      frameRow = interlacePassStart[pass] as number;
    }
    return true;
  };

  /** Places the string of `code` at the current position; sets `done` when nothing more is needed. */
  const output = (code: number) => {
    const length = stringLength[code] as number;
    let expandedFrom = length;
    let link = code;
    let offset = 0;
    while (offset < length) {
      steps += 1;
      const count = Math.min(length - offset, frameWidth - column);
      if (frameRow < visibleHeight && column < visibleWidth) {
        // Strings are linked from their last character, so a visible run costs the rest of its string (≤ 4096);
        // a string wholly off the screen is never expanded.
        if (offset < expandedFrom) {
          for (let at = expandedFrom - 1; at >= offset; at -= 1) {
            string[at] = suffix[link] as number;
            link = prefix[link] as number;
          }
          steps += expandedFrom - offset;
          expandedFrom = offset;
        }
        sink.write(frameRow, column, string, offset, Math.min(count, visibleWidth - column));
      }
      column += count;
      offset += count;
      if (column === frameWidth) {
        column = 0;
        if ((frameRow < visibleHeight && sink.rowDone(frameRow)) || !advanceRow()) {
          done = true; // the rest of this string and any further codes are off the screen or past the frame
          return;
        }
      }
    }
  };

  /** Handles one code; false at the end code. */
  const handle = (code: number): boolean => {
    steps += 1;
    if (code === clearCode) {
      nextCode = clearCode + 2;
      codeSize = minCodeSize + 1;
      previous = -1;
      return true;
    }
    if (code === endCode) return false;
    if (previous < 0) {
      if (code >= clearCode) throw unreadable("its image data is damaged (it starts with an undefined code)");
    } else {
      let first: number;
      // nextCode itself is the entry being defined: the previous string plus that string's first index.
      if (code < nextCode) first = firstIndex[code] as number;
      else if (code === nextCode) first = firstIndex[previous] as number;
      else throw unreadable("its image data is damaged (it refers to an undefined code)");
      // A full table keeps decoding without adding, as encoders that defer the clear code expect.
      if (nextCode < maxCodes) {
        prefix[nextCode] = previous;
        suffix[nextCode] = first;
        stringLength[nextCode] = (stringLength[previous] as number) + 1;
        firstIndex[nextCode] = firstIndex[previous] as number;
        nextCode += 1;
      }
    }
    // The code width grows once the next entry needs it, checked after every code as Chromium does: the same
    // as growing after an addition for code sizes 2–8; with code size 0 or 1 the entry after the clear and
    // end codes already needs the wider code, so it grows after the first code.
    if (nextCode >= 1 << codeSize && codeSize < 12) codeSize += 1;
    output(code);
    previous = code;
    return true;
  };

  /** The next sub-block's data (empty at the terminator); without an await when its bytes are buffered. */
  const nextBlock = async (): Promise<Uint8Array> => {
    if (reader.available >= 256) {
      const size = reader.takeBuffered(1)[0] as number;
      return reader.takeBuffered(size);
    }
    return reader.take(await readByte(reader));
  };

  try {
    for (let block = await nextBlock(); block.length !== 0; block = await nextBlock()) {
      for (let i = 0; i < block.length; i += 1) {
        bits |= (block[i] as number) << bitCount;
        bitCount += 8;
        while (bitCount >= codeSize) {
          const code = bits & ((1 << codeSize) - 1);
          bits >>>= codeSize;
          bitCount -= codeSize;
          if (!handle(code) || done) {
            if (done) return;
            throw unreadable("its image data ends before the image is complete");
          }
        }
      }
    }
    throw unreadable("its image data ends before the image is complete");
  } finally {
    work.steps += steps;
  }
}

/**
 * Decodes the first frame onto a transparent canvas of the logical screen and hands `row` each screen row
 * (width × 4 RGBA bytes, top to bottom, one reused buffer). The reader must be at the start of the file, and
 * the caller must have admitted the screen's area (see `GifScan.decodeBytes`).
 */
export async function decodeGifRows(
  reader: ByteReader,
  row: (rgba: Uint8Array) => void,
  work: GifWork = { steps: 0 },
): Promise<void> {
  const globalTable = new Uint8Array(256 * 3);
  const localTable = new Uint8Array(256 * 3);
  const screen = await readScreen(reader, globalTable);
  const image = await nextImage(reader, screen, localTable);
  if (!image) throw unreadable("it contains no image");
  const table = image.hasLocalTable ? localTable : globalTable;
  const { left, top, visibleWidth, visibleHeight, colours } = image;
  // Indices past the colour table, and every index of a frame without one, are opaque black, as in browsers.
  const transparent = image.transparentIndex ?? -1;
  const rgba = new Uint8Array(screen.width * 4);
  // One 32-bit store a pixel: the colour table as RGBA words in memory order (the platform's byte order).
  const pixels = new Uint32Array(rgba.buffer);
  const words = new Uint32Array(256);
  const bytes = new Uint8Array(words.buffer);
  for (let index = 0; index < 256; index += 1) {
    if (index < colours) bytes.set(table.subarray(index * 3, index * 3 + 3), index * 4);
    bytes[index * 4 + 3] = 255;
  }
  const emit = () => {
    row(rgba);
    pixels.fill(0);
  };
  /** Writes palette indices as RGBA from screen column `x`. */
  const paint = (x: number, indices: Uint8Array, from: number, count: number) => {
    for (let i = 0; i < count; i += 1) {
      const index = indices[from + i] as number;
      if (index === transparent) continue; // the buffer is already transparent there
      pixels[x + i] = words[index] as number;
    }
  };

  if (visibleHeight === 0) {
    for (let y = 0; y < screen.height; y += 1) emit();
    return;
  }
  for (let y = 0; y < top; y += 1) emit();
  if (!image.interlaced) {
    // Rows arrive in screen order: each is painted straight into the output row.
    await decodeIndices(
      reader,
      image,
      {
        write: (_frameRow, column, string, offset, count) => paint(left + column, string, offset, count),
        rowDone: (frameRow) => {
          emit();
          return frameRow === visibleHeight - 1;
        },
      },
      work,
    );
  } else {
    // Passes revisit the picture, so the visible indices are kept (≤ screen area) and painted afterwards.
    const indices = new Uint8Array(visibleWidth * visibleHeight);
    let rowsDone = 0;
    await decodeIndices(
      reader,
      image,
      {
        write: (frameRow, column, string, offset, count) =>
          indices.set(string.subarray(offset, offset + count), frameRow * visibleWidth + column),
        rowDone: () => {
          rowsDone += 1;
          return rowsDone === visibleHeight;
        },
      },
      work,
    );
    for (let frameRow = 0; frameRow < visibleHeight; frameRow += 1) {
      paint(left, indices, frameRow * visibleWidth, visibleWidth);
      emit();
    }
  }
  for (let y = top + visibleHeight; y < screen.height; y += 1) emit();
}
