import { Unzlib } from "fflate";
import type { ByteReader } from "./byte-reader";
import { UnconvertibleImageError } from "./errors";
import { exifOrientation, type Orientation } from "./exif";

/**
 * A PNG reader that keeps memory proportional to one row: chunks are read from the stream as they come, the
 * zlib data is inflated a slice at a time and inflation stops at exactly the bytes the header implies, so a
 * decompression bomb costs no more than a real image of its size. Interlaced (Adam7) images keep the even
 * rows that passes 1–6 fill (half the image) and hand them on as pass 7 brings the odd rows between them.
 */

/** The IHDR fields and the ancillary chunks the conversion needs, read before the first image data. */
export type PngHeader = {
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
};

const channelsOf: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
const allowedDepths: Record<number, number[]> = {
  0: [1, 2, 4, 8, 16],
  2: [8, 16],
  3: [1, 2, 4, 8],
  4: [8, 16],
  6: [8, 16],
};

const unreadable = (why: string) => new UnconvertibleImageError(`The PNG file cannot be read: ${why}.`);
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
  for (;;) {
    if (await reader.atEnd()) throw truncatedPng();
    const { length, type } = await readChunkHeader(reader);
    if (!header && type !== "IHDR") throw unreadable("its first chunk is not the image header");
    if (type === "IHDR") {
      if (length !== 13) throw unreadable("its image header has the wrong size");
      const data = await keepChunk(reader, length, "image header");
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
    } else if (type === "IDAT" && header) {
      if (header.colorType === 3 && !palette) throw unreadable("it is a palette image without a palette");
      const mayHaveAlpha = header.colorType === 4 || header.colorType === 6 || transparency !== null;
      return { ...header, mayHaveAlpha, orientation, palette, transparency, firstDataLength: length };
    } else if (type === "IEND") {
      throw unreadable("it contains no image data");
    } else {
      await reader.skip(length + 4);
    }
  }
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Reverses one scanline's filter in place (`previous` is the unfiltered line above, zeros for the first). */
function unfilter(filter: number, line: Uint8Array, previous: Uint8Array, bytesPerPixel: number): void {
  const length = line.length;
  switch (filter) {
    case 0:
      return;
    case 1:
      for (let i = bytesPerPixel; i < length; i += 1)
        line[i] = ((line[i] as number) + (line[i - bytesPerPixel] as number)) & 255;
      return;
    case 2:
      for (let i = 0; i < length; i += 1) line[i] = ((line[i] as number) + (previous[i] as number)) & 255;
      return;
    case 3:
      for (let i = 0; i < length; i += 1) {
        const left = i >= bytesPerPixel ? (line[i - bytesPerPixel] as number) : 0;
        line[i] = ((line[i] as number) + ((left + (previous[i] as number)) >> 1)) & 255;
      }
      return;
    case 4:
      for (let i = 0; i < length; i += 1) {
        const left = i >= bytesPerPixel ? (line[i - bytesPerPixel] as number) : 0;
        const upLeft = i >= bytesPerPixel ? (previous[i - bytesPerPixel] as number) : 0;
        line[i] = ((line[i] as number) + paeth(left, previous[i] as number, upLeft)) & 255;
      }
      return;
    default:
      throw unreadable(`a scanline uses the unknown filter type ${filter}`);
  }
}

/** Converts one unfiltered scanline of `width` pixels to RGBA8 (16-bit samples keep their high byte). */
function toRgba(header: PngHeader, line: Uint8Array, width: number, out: Uint8Array): void {
  const { bitDepth, colorType } = header;
  const trns = header.transparency;
  const wide = bitDepth === 16;
  const sample = (index: number) =>
    wide ? ((line[index * 2] as number) << 8) | (line[index * 2 + 1] as number) : (line[index] as number);
  const high = (index: number) => (wide ? (line[index * 2] as number) : (line[index] as number));
  if (colorType === 0 || colorType === 3) {
    const max = (1 << bitDepth) - 1;
    const transparentGray =
      colorType === 0 && trns && trns.length >= 2 ? ((trns[0] as number) << 8) | (trns[1] as number) : -1;
    const palette = header.palette as Uint8Array;
    for (let x = 0; x < width; x += 1) {
      let value: number;
      if (bitDepth < 8) {
        const bit = x * bitDepth;
        value = ((line[bit >> 3] as number) >> (8 - bitDepth - (bit & 7))) & max;
      } else {
        value = sample(x);
      }
      const o = x * 4;
      if (colorType === 3) {
        if (value * 3 + 2 >= palette.length) throw unreadable("a pixel refers to a colour outside the palette");
        out[o] = palette[value * 3] as number;
        out[o + 1] = palette[value * 3 + 1] as number;
        out[o + 2] = palette[value * 3 + 2] as number;
        out[o + 3] = trns && value < trns.length ? (trns[value] as number) : 255;
      } else {
        const gray = bitDepth < 8 ? Math.round((value * 255) / max) : wide ? value >> 8 : value;
        out[o] = gray;
        out[o + 1] = gray;
        out[o + 2] = gray;
        out[o + 3] = value === transparentGray ? 0 : 255;
      }
    }
    return;
  }
  if (colorType === 2) {
    const key =
      trns && trns.length >= 6
        ? [
            ((trns[0] as number) << 8) | (trns[1] as number),
            ((trns[2] as number) << 8) | (trns[3] as number),
            ((trns[4] as number) << 8) | (trns[5] as number),
          ]
        : null;
    for (let x = 0; x < width; x += 1) {
      const o = x * 4;
      out[o] = high(x * 3);
      out[o + 1] = high(x * 3 + 1);
      out[o + 2] = high(x * 3 + 2);
      out[o + 3] =
        key && sample(x * 3) === key[0] && sample(x * 3 + 1) === key[1] && sample(x * 3 + 2) === key[2] ? 0 : 255;
    }
    return;
  }
  const channels = colorType === 4 ? 2 : 4;
  for (let x = 0; x < width; x += 1) {
    const o = x * 4;
    const i = x * channels;
    if (channels === 2) {
      const gray = high(i);
      out[o] = gray;
      out[o + 1] = gray;
      out[o + 2] = gray;
      out[o + 3] = high(i + 1);
    } else {
      out[o] = high(i);
      out[o + 1] = high(i + 1);
      out[o + 2] = high(i + 2);
      out[o + 3] = high(i + 3);
    }
  }
}

/** Bytes of one packed scanline (without its filter byte) for `width` pixels. */
function lineBytes(header: PngHeader, width: number): number {
  return Math.ceil((width * (channelsOf[header.colorType] as number) * header.bitDepth) / 8);
}

/**
 * Input slice per inflate step. Deflate expands at most ~1032×, so one step yields at most ~8.5 MB however
 * the data was crafted, and inflating stops as soon as the last row is complete.
 */
const inflateSlice = 8 * 1024;

/** Adam7 passes: start and step in x and y. */
const adam7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/**
 * Decodes the image from the reader (positioned by `readPngHeader`), calling `row(rgba)` once per row, top to
 * bottom. An interlaced image needs `evenRows`, `ceil(height / 2) × width × 4` bytes, for the rows that passes
 * 1–6 fill before pass 7 brings the odd ones.
 */
export async function decodePng(
  header: PngHeader,
  reader: ByteReader,
  row: (rgba: Uint8Array) => void,
  evenRows?: Uint8Array,
): Promise<void> {
  const bytesPerPixel = Math.max(1, ((channelsOf[header.colorType] as number) * header.bitDepth) >> 3);
  const passes = header.interlaced
    ? adam7
        .map(([x0, y0, dx, dy]) => ({
          x0,
          y0,
          dx,
          dy,
          width: Math.ceil((header.width - x0) / dx),
          height: Math.ceil((header.height - y0) / dy),
        }))
        .filter((p) => p.width > 0 && p.height > 0)
    : [{ x0: 0, y0: 0, dx: 1, dy: 1, width: header.width, height: header.height }];
  const rowBytes = header.width * 4;
  if (header.interlaced && (!evenRows || evenRows.length < Math.ceil(header.height / 2) * rowBytes))
    throw new Error("interlaced PNGs need a buffer for their even rows");
  const widest = lineBytes(header, header.width);
  let previous = new Uint8Array(widest);
  let line = new Uint8Array(widest);
  const rgba = new Uint8Array(rowBytes);
  let passIndex = 0;
  let rowInPass = 0;
  let filled = -1; // -1: the filter byte comes next
  let filter = 0;
  let finished = passes.length === 0;
  let nextEvenRow = 0; // interlaced: the next even row to hand on

  const handOnEvenRowsBefore = (y: number) => {
    const even = evenRows as Uint8Array;
    for (; nextEvenRow < y && nextEvenRow < header.height; nextEvenRow += 2) {
      const at = (nextEvenRow >> 1) * rowBytes;
      row(even.subarray(at, at + rowBytes));
    }
  };

  const completeLine = () => {
    const pass = passes[passIndex] as (typeof passes)[number];
    const length = lineBytes(header, pass.width);
    const current = line.subarray(0, length);
    unfilter(filter, current, previous.subarray(0, length), bytesPerPixel);
    toRgba(header, current, pass.width, rgba);
    const y = pass.y0 + rowInPass * pass.dy;
    if (!header.interlaced) {
      row(rgba);
    } else if ((y & 1) === 1) {
      handOnEvenRowsBefore(y);
      row(rgba);
    } else {
      const even = evenRows as Uint8Array;
      const base = (y >> 1) * rowBytes;
      for (let i = 0; i < pass.width; i += 1) {
        const target = base + (pass.x0 + i * pass.dx) * 4;
        even[target] = rgba[i * 4] as number;
        even[target + 1] = rgba[i * 4 + 1] as number;
        even[target + 2] = rgba[i * 4 + 2] as number;
        even[target + 3] = rgba[i * 4 + 3] as number;
      }
    }
    [previous, line] = [line, previous];
    rowInPass += 1;
    if (rowInPass === pass.height) {
      passIndex += 1;
      rowInPass = 0;
      previous.fill(0);
      finished = passIndex === passes.length;
      if (finished && header.interlaced) handOnEvenRowsBefore(header.height);
    }
  };

  const consume = (piece: Uint8Array) => {
    let at = 0;
    while (at < piece.length && !finished) {
      const pass = passes[passIndex] as (typeof passes)[number];
      if (filled < 0) {
        filter = piece[at] as number;
        at += 1;
        filled = 0;
        continue;
      }
      const length = lineBytes(header, pass.width);
      const take = Math.min(length - filled, piece.length - at);
      line.set(piece.subarray(at, at + take), filled);
      filled += take;
      at += take;
      if (filled === length) {
        filled = -1;
        completeLine();
      }
    }
    // Inflated bytes after the last scanline are ignored, as libpng does.
  };

  const inflater = new Unzlib((piece) => consume(piece));
  let dataLeft = header.firstDataLength;
  try {
    while (!finished) {
      if (dataLeft === 0) {
        await reader.skip(4); // the CRC
        const next = await readChunkHeader(reader);
        if (next.type !== "IDAT") break;
        dataLeft = next.length;
        continue;
      }
      const slice = await reader.takeSome(Math.min(dataLeft, inflateSlice));
      dataLeft -= slice.length;
      inflater.push(slice);
    }
  } catch (error) {
    if (error instanceof UnconvertibleImageError) throw error;
    throw new UnconvertibleImageError("The PNG file is damaged: its compressed image data cannot be read.");
  }
  if (!finished) {
    throw new UnconvertibleImageError("The PNG file is damaged: its image data ends before the last row.");
  }
}
