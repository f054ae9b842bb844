import type { ByteReader } from "./byte-reader";
import { type CodecPngDecoder, type PngDecoderPlan, pngStatus } from "./codec-decoders";
import { maxProfileBytes } from "./colour";
import { ImageTooLargeError, UnconvertibleImageError } from "./errors";
import { exifOrientation, type Orientation } from "./exif";

/**
 * A PNG reader that keeps memory proportional to one row: chunks are read from the stream as they come, and
 * the image data goes a buffer at a time to the codec's decoder (converter/wasm/webp/png.c: zlib, unfiltering, RGBA,
 * rows into the resizer), which stops inflating at the last row, so a decompression bomb costs no more than a
 * real image of its size. Interlaced (Adam7) images keep the even rows that passes 1–6 fill (half the image)
 * and hand them on as pass 7 brings the odd rows between them.
 */

/** The IHDR fields and the ancillary chunks the conversion needs, read before the first image data. */
type PngHeader = {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  interlaced: boolean;
  /** Whether the image can contain transparency (alpha channel or a tRNS chunk). */
  mayHaveAlpha: boolean;
  orientation: Orientation;
  palette: Uint8Array | null;
  transparency: Uint8Array | null;
  /** Length of the first IDAT chunk, whose data the reader is positioned at. */
  firstDataLength: number;
  /** The iCCP chunk's compressed profile (zlib data, inflated by colour.ts), or null. */
  iccProfile: Uint8Array | null;
};

/** Largest iCCP chunk kept: a profile of `maxProfileBytes` compresses to less; larger chunks are skipped. */
const maxIccChunk = maxProfileBytes;

const allowedDepths: Record<number, number[]> = {
  0: [1, 2, 4, 8, 16],
  2: [8, 16],
  3: [1, 2, 4, 8],
  4: [8, 16],
  6: [8, 16],
};

const unreadable = (why: string) => new UnconvertibleImageError(`The PNG file cannot be read: ${why}.`);
const damaged = (why: string) => new UnconvertibleImageError(`The PNG file is damaged: ${why}.`);
/** The error of a file that ends before what its chunks promise. */
export const truncatedPng = () =>
  new UnconvertibleImageError(
    "The PNG file is incomplete: it ends in the middle of its data. Please upload the complete file again.",
  );

/** Largest ancillary chunk kept in memory (palette, transparency, EXIF); larger ones are refused or skipped. */
const maxKeptChunk = 64 * 1024;

type ChunkHeader = { length: number; type: string };

async function readChunkHeader(reader: ByteReader): Promise<ChunkHeader> {
  const bytes = await reader.take(8);
  const length = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0);
  if (length > 0x7fffffff) throw unreadable("a chunk claims a length over 2 GB");
  return { length, type: String.fromCharCode(...bytes.subarray(4, 8)) };
}

/** Copies a small chunk's data out of the reader (bounded by `maxKeptChunk`). */
async function keepChunk(reader: ByteReader, length: number, what: string): Promise<Uint8Array> {
  if (length > maxKeptChunk) throw unreadable(`its ${what} is larger than any valid one`);
  const data = (await reader.take(length)).slice();
  await reader.skip(4);
  return data;
}

/**
 * Reads the signature and every chunk before the first image data; refuses malformed headers before any
 * pixel is decoded. Leaves the reader at the first IDAT chunk's data.
 */
export async function readPngHeader(reader: ByteReader): Promise<PngHeader> {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  const start = (await reader.ensure(8)) ? reader.takeBuffered(8) : new Uint8Array(0);
  if (start.length < 8 || signature.some((b, i) => start[i] !== b)) throw unreadable("it does not start like a PNG");
  let header: Pick<PngHeader, "width" | "height" | "bitDepth" | "colorType" | "interlaced"> | null = null;
  let palette: Uint8Array | null = null;
  let transparency: Uint8Array | null = null;
  let orientation: Orientation = 1;
  let iccProfile: Uint8Array | null = null;
  for (;;) {
    if (await reader.atEnd()) throw truncatedPng();
    const { length, type } = await readChunkHeader(reader);
    if (!header && type !== "IHDR") throw unreadable("its first chunk is not the image header");
    if (type === "IHDR") {
      if (length !== 13) throw unreadable("its image header has the wrong size");
      const data = (await reader.take(length)).slice();
      // Browsers refuse a PNG whose image header fails its checksum (every other chunk's is ignored, as they do).
      const crc = new DataView((await reader.take(4)).slice().buffer).getUint32(0);
      if (crc !== crc32([0x49, 0x48, 0x44, 0x52], data)) throw damaged("its image header fails its checksum");
      const view = new DataView(data.buffer);
      const width = view.getUint32(0);
      const height = view.getUint32(4);
      const bitDepth = data[8] as number;
      const colorType = data[9] as number;
      if (width === 0 || height === 0) throw unreadable("its width or height is zero");
      if (width > 0x7fffffff || height > 0x7fffffff) throw unreadable("its width or height is out of range");
      if (!allowedDepths[colorType]?.includes(bitDepth)) {
        throw unreadable(`colour type ${colorType} with bit depth ${bitDepth} is not a valid combination`);
      }
      if (data[10] !== 0 || data[11] !== 0 || (data[12] ?? 0) > 1) throw unreadable("it uses an unknown compression");
      header = { width, height, bitDepth, colorType, interlaced: data[12] === 1 };
    } else if (type === "PLTE") {
      if (length % 3 !== 0 || length > 768) throw unreadable("its palette has an invalid size");
      palette = await keepChunk(reader, length, "palette");
    } else if (type === "tRNS") {
      transparency = await keepChunk(reader, length, "transparency");
    } else if (type === "eXIf" && length <= maxKeptChunk) {
      orientation = exifOrientation(await keepChunk(reader, length, "EXIF data"));
    } else if (type === "iCCP" && length <= maxIccChunk && !iccProfile) {
      // Name (1–79 bytes), NUL, compression method 0, then the zlib stream; anything else: no profile.
      const data = (await reader.take(length)).slice();
      await reader.skip(4);
      const end = data.indexOf(0);
      if (end >= 1 && end <= 79 && data[end + 1] === 0) iccProfile = data.subarray(end + 2);
    } else if (type === "IDAT" && header) {
      if (header.colorType === 3 && !palette) throw unreadable("it is a palette image without a palette");
      const mayHaveAlpha = header.colorType === 4 || header.colorType === 6 || transparency !== null;
      return { ...header, mayHaveAlpha, orientation, palette, transparency, firstDataLength: length, iccProfile };
    } else if (type === "IEND") {
      throw unreadable("it contains no image data");
    } else {
      await reader.skip(length + 4);
    }
  }
}

/**
 * Memory a PNG decoder takes in the codec besides the target and an interlaced image's even rows: zlib's
 * state and window, png.c's input and output windows, two scanlines and a row (65,535 pixels of 16-bit
 * RGBA at most), with room to spare.
 */
export const pngDecoderOverheadBytes = 2_000_000;

let crcTable: Uint32Array | null = null;

/** CRC-32 (ISO 3309, as PNG chunks use it) of the bytes of `parts` in order. */
function crc32(...parts: ArrayLike<number>[]): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n += 1) {
      let c = n;
      for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (const part of parts)
    for (let i = 0; i < part.length; i += 1)
      crc = (crcTable[(crc ^ (part[i] as number)) & 255] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/**
 * What png.c needs from the header. A grey or RGB tRNS key below 16 bits keeps only its low byte, as Chromium
 * does: an 8-bit image's key 0x0180 makes value 0x80 transparent, a 2-bit image's key 0x0102 value 2, while
 * a 2-bit key 0x0006 matches no pixel.
 */
export function pngDecoderPlan(header: PngHeader): PngDecoderPlan {
  const trns = header.transparency;
  const mask = header.bitDepth === 16 ? 0xffff : 0xff;
  const word = (at: number) =>
    trns && trns.length >= at + 2 ? (((trns[at] as number) << 8) | (trns[at + 1] as number)) & mask : -1;
  return {
    width: header.width,
    height: header.height,
    bitDepth: header.bitDepth,
    colorType: header.colorType,
    interlaced: header.interlaced,
    paletteEntries: header.colorType === 3 ? (header.palette as Uint8Array).length / 3 : 0,
    grayKey: header.colorType === 0 ? word(0) : -1,
    rgbKey: header.colorType === 2 && trns && trns.length >= 6 ? [word(0), word(2), word(4)] : [-1, -1, -1],
  };
}

/**
 * Feeds the image data from the reader (positioned by `readPngHeader`) to the codec's PNG decoder, which
 * hands each row to its resizer. Stops reading at the last row: data after it is never inflated.
 */
export async function decodePng(
  header: PngHeader,
  reader: ByteReader,
  decoder: CodecPngDecoder,
  tick: () => void,
): Promise<void> {
  if (header.palette) {
    const table = decoder.palette();
    const entries = header.palette.length / 3;
    for (let i = 0; i < entries; i += 1) {
      table.set(header.palette.subarray(i * 3, i * 3 + 3), i * 4);
      table[i * 4 + 3] =
        header.transparency && i < header.transparency.length ? (header.transparency[i] as number) : 255;
    }
  }
  let dataLeft = header.firstDataLength;
  for (;;) {
    if (dataLeft === 0) {
      await reader.skip(4); // the CRC
      const next = await readChunkHeader(reader);
      if (next.type !== "IDAT") break;
      dataLeft = next.length;
      continue;
    }
    // Whole input buffers where the data allows: each feed crosses into the codec once.
    const want = Math.min(dataLeft, decoder.inputBytes);
    const slice = (await reader.ensure(want)) ? reader.takeBuffered(want) : await reader.takeSome(want);
    dataLeft -= slice.length;
    const status = decoder.feed(slice);
    tick();
    switch (status) {
      case pngStatus.finished:
        return;
      case pngStatus.needInput:
        continue;
      case pngStatus.badFilter:
        throw unreadable("a scanline uses an unknown filter type");
      case pngStatus.badPaletteIndex:
        throw unreadable("a pixel refers to a colour outside the palette");
      case pngStatus.noMemory:
        throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
      case pngStatus.dataEndsEarly:
        throw damaged("its image data ends before the last row");
      default:
        throw damaged("its compressed image data cannot be read");
    }
  }
  throw damaged("its image data ends before the last row");
}
