import { UnconvertibleImageError } from "./errors";
import { exifOrientation, type Orientation } from "./exif";

/**
 * A PNG reader that keeps memory proportional to one row: chunks are parsed in place, the zlib stream is
 * inflated by the runtime's DecompressionStream a few KiB at a time, and each unfiltered scanline is
 * handed on as RGBA. Interlaced (Adam7) images are decoded pass by pass into a full-size buffer instead.
 */

/** The IHDR fields and the ancillary chunks the conversion needs, read without inflating anything. */
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
  idat: Uint8Array[];
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

/** Parses the chunk list; refuses malformed headers and truncated files before any pixel is decoded. */
export function readPngHeader(bytes: Uint8Array): PngHeader {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (bytes.length < 8 || signature.some((b, i) => bytes[i] !== b)) throw unreadable("it does not start like a PNG");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 8;
  let header: Omit<PngHeader, "orientation" | "palette" | "transparency" | "idat" | "mayHaveAlpha"> | null = null;
  let palette: Uint8Array | null = null;
  let transparency: Uint8Array | null = null;
  let orientation: Orientation = 1;
  const idat: Uint8Array[] = [];
  let ended = false;
  while (pos + 8 <= bytes.length) {
    const length = view.getUint32(pos);
    const type = String.fromCharCode(...bytes.subarray(pos + 4, pos + 8));
    const dataStart = pos + 8;
    if (length > 0x7fffffff || dataStart + length + 4 > bytes.length) {
      throw new UnconvertibleImageError(
        "The PNG file is incomplete: it ends in the middle of its data. Please upload the complete file again.",
      );
    }
    const data = bytes.subarray(dataStart, dataStart + length);
    if (!header && type !== "IHDR") throw unreadable("its first chunk is not the image header");
    if (type === "IHDR") {
      if (length !== 13) throw unreadable("its image header has the wrong size");
      const width = view.getUint32(dataStart);
      const height = view.getUint32(dataStart + 4);
      const bitDepth = data[8] as number;
      const colorType = data[9] as number;
      if (width === 0 || height === 0) throw unreadable("its width or height is zero");
      if (!allowedDepths[colorType]?.includes(bitDepth)) {
        throw unreadable(`colour type ${colorType} with bit depth ${bitDepth} is not a valid combination`);
      }
      if (data[10] !== 0 || data[11] !== 0 || (data[12] ?? 0) > 1) throw unreadable("it uses an unknown compression");
      header = { width, height, bitDepth, colorType, interlaced: data[12] === 1 };
    } else if (type === "PLTE") {
      palette = data;
    } else if (type === "tRNS") {
      transparency = data;
    } else if (type === "eXIf") {
      orientation = exifOrientation(data);
    } else if (type === "IDAT") {
      idat.push(data);
    } else if (type === "IEND") {
      ended = true;
      break;
    }
    pos = dataStart + length + 4;
  }
  if (!header) throw unreadable("it has no image header");
  if (!ended) {
    throw new UnconvertibleImageError(
      "The PNG file is incomplete: it ends before its last chunk. Please upload the complete file again.",
    );
  }
  if (idat.length === 0) throw unreadable("it contains no image data");
  if (header.colorType === 3 && !palette) throw unreadable("it is a palette image without a palette");
  const mayHaveAlpha = header.colorType === 4 || header.colorType === 6 || transparency !== null;
  return { ...header, mayHaveAlpha, orientation, palette, transparency, idat };
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

/** Streams the inflated image data, a piece at a time, to `consume`. */
async function inflate(idat: Uint8Array[], consume: (piece: Uint8Array) => void): Promise<void> {
  const stream = new DecompressionStream("deflate");
  const writer = stream.writable.getWriter();
  const reader = stream.readable.getReader();
  // Small input slices bound each output piece: deflate expands at most ~1032×, so 4 KiB yield ≤ ~4 MiB.
  const slice = 4096;
  const writing = (async () => {
    for (const part of idat) {
      for (let at = 0; at < part.length; at += slice) await writer.write(part.subarray(at, at + slice));
    }
    await writer.close();
  })();
  writing.catch(() => {}); // the read side reports the same failure
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      consume(value);
    }
    await writing;
  } catch (error) {
    if (error instanceof UnconvertibleImageError) throw error;
    throw new UnconvertibleImageError("The PNG file is damaged: its compressed image data cannot be read.");
  } finally {
    reader.releaseLock();
  }
}

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
 * Decodes the image, calling `row(rgba, y)` for each row of a non-interlaced image in order, or writing
 * every pixel of an interlaced one into `full` (width × height × 4 bytes) when given.
 */
export async function decodePng(
  header: PngHeader,
  sink: { row: (rgba: Uint8Array) => void } | { full: Uint8Array },
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
  if (header.interlaced && !("full" in sink)) throw new Error("interlaced PNGs need a full-size buffer");
  const widest = lineBytes(header, header.width);
  let previous = new Uint8Array(widest);
  let line = new Uint8Array(widest);
  const rgba = new Uint8Array(header.width * 4);
  let passIndex = 0;
  let rowInPass = 0;
  let filled = -1; // -1: the filter byte comes next
  let filter = 0;
  let finished = passes.length === 0;

  const completeLine = () => {
    const pass = passes[passIndex] as (typeof passes)[number];
    const length = lineBytes(header, pass.width);
    const current = line.subarray(0, length);
    unfilter(filter, current, previous.subarray(0, length), bytesPerPixel);
    toRgba(header, current, pass.width, rgba);
    if ("row" in sink) {
      sink.row(rgba);
    } else {
      const y = pass.y0 + rowInPass * pass.dy;
      for (let i = 0; i < pass.width; i += 1) {
        const target = (y * header.width + pass.x0 + i * pass.dx) * 4;
        sink.full.set(rgba.subarray(i * 4, i * 4 + 4), target);
      }
    }
    [previous, line] = [line, previous];
    rowInPass += 1;
    if (rowInPass === pass.height) {
      passIndex += 1;
      rowInPass = 0;
      previous.fill(0);
      finished = passIndex === passes.length;
    }
  };

  await inflate(header.idat, (piece) => {
    let at = 0;
    while (at < piece.length) {
      if (finished) return; // trailing bytes after the last scanline are ignored, as libpng does
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
  });
  if (!finished) {
    throw new UnconvertibleImageError("The PNG file is damaged: its image data ends before the last row.");
  }
}
