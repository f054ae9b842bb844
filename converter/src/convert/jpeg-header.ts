import type { ByteReader } from "./byte-reader";
import { UnconvertibleImageError } from "./errors";
import { exifOrientation, type Orientation } from "./exif";

/** One frame component: its id, sampling factors and quantisation table. */
export type JpegComponent = { id: number; h: number; v: number; tq: number };

/** What the markers before and between the scans say about a JPEG, read without decoding any pixel. */
export type JpegHeader = {
  width: number;
  height: number;
  progressive: boolean;
  components: JpegComponent[];
  orientation: Orientation;
  /** The Adobe APP14 colour transform (0 none/CMYK, 1 YCbCr, 2 YCCK), or null without that marker. */
  adobeTransform: number | null;
  /** The APP2 `ICC_PROFILE` segments in file order (views of the file), joined by colour.ts. */
  iccSegments: IccSegment[];
};

/** One APP2 piece of an embedded ICC profile: its 1-based sequence number, the declared count, its bytes. */
export type IccSegment = { sequence: number; count: number; data: Uint8Array };

const iccSignature = "ICC_PROFILE\0";

/** Index just past the entropy-coded data that starts at `from`: the next marker that is not a stuffed byte or RSTn. */
export function skipEntropyData(bytes: Uint8Array, from: number): number {
  let pos = from;
  for (;;) {
    pos = bytes.indexOf(0xff, pos);
    if (pos < 0 || pos + 1 >= bytes.length) return bytes.length;
    const next = bytes[pos + 1] as number;
    if (next === 0 || next === 0xff || (next >= 0xd0 && next <= 0xd7)) {
      pos += 1;
      continue;
    }
    return pos;
  }
}

const unsupportedFrames: Record<number, string> = {
  195: "a lossless JPEG",
  197: "a hierarchical JPEG",
  198: "a hierarchical JPEG",
  199: "a hierarchical JPEG",
  201: "an arithmetic-coded JPEG",
  202: "an arithmetic-coded JPEG",
  203: "an arithmetic-coded JPEG",
  205: "an arithmetic-coded JPEG",
  206: "an arithmetic-coded JPEG",
  207: "an arithmetic-coded JPEG",
};

/**
 * Walks every marker of the file (through the scans) and returns the frame header. Refuses what the
 * pipeline cannot decode and files that end before their end-of-image marker (truncated uploads).
 */
export function readJpegHeader(bytes: Uint8Array): JpegHeader {
  const corrupt = (why: string) => new UnconvertibleImageError(`The JPEG file cannot be read: ${why}.`);
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) throw corrupt("it does not start like a JPEG image");
  let pos = 2;
  let frame: Frame | null = null;
  const iccSegments: IccSegment[] = [];
  let orientation: Orientation = 1;
  let sawExif = false;
  let adobeTransform: number | null = null;
  let scans = 0;
  for (;;) {
    if (pos >= bytes.length) {
      throw new UnconvertibleImageError(
        "The JPEG file is incomplete: it ends before the end of its image data. Please upload the complete file again.",
      );
    }
    if (bytes[pos] !== 0xff) {
      // Stray bytes between segments: decoders skip to the next marker, and so do we.
      pos = bytes.indexOf(0xff, pos);
      if (pos < 0) pos = bytes.length;
      continue;
    }
    while (bytes[pos + 1] === 0xff) pos += 1;
    const marker = bytes[pos + 1];
    if (marker === undefined) {
      pos = bytes.length;
      continue;
    }
    if (marker === 0xd9) break;
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      pos += 2;
      continue;
    }
    if (pos + 4 > bytes.length) {
      pos = bytes.length;
      continue;
    }
    const length = ((bytes[pos + 2] as number) << 8) | (bytes[pos + 3] as number);
    const body = bytes.subarray(pos + 4, pos + 2 + length);
    if (length < 2 || pos + 2 + length > bytes.length) {
      pos = bytes.length;
      continue;
    }
    if (marker in unsupportedFrames) {
      throw new UnconvertibleImageError(
        `The image is ${unsupportedFrames[marker]}, which cannot be converted. Please save it as a standard JPEG or PNG.`,
      );
    }
    if (marker >= 0xc0 && marker <= 0xc2) {
      if (frame) throw corrupt("it has more than one frame header");
      frame = readFrame(body, marker === 0xc2, corrupt);
    } else if (marker === 0xe1 && !sawExif && body.length > 6 && body[0] === 0x45 && body[1] === 0x78) {
      sawExif = true;
      orientation = exifOrientation(body);
    } else if (marker === 0xe2 && body.length > 14 && String.fromCharCode(...body.subarray(0, 12)) === iccSignature) {
      iccSegments.push({ sequence: body[12] as number, count: body[13] as number, data: body.subarray(14) });
    } else if (marker === 0xee && body.length >= 12 && new TextDecoder().decode(body.subarray(0, 5)) === "Adobe") {
      adobeTransform = body[11] as number;
    } else if (marker === 0xda) {
      if (!frame) throw corrupt("image data comes before the frame header");
      scans += 1;
      pos = skipEntropyData(bytes, pos + 2 + length);
      continue;
    }
    pos += 2 + length;
  }
  if (!frame || scans === 0) throw corrupt("it contains no image data");
  return { ...frame, orientation, adobeTransform, iccSegments };
}

type Frame = Omit<JpegHeader, "orientation" | "adobeTransform" | "iccSegments">;

/** The frame header (SOF0–2): size, precision and components, each checked. */
function readFrame(body: Uint8Array, progressive: boolean, corrupt: (why: string) => Error): Frame {
  if (body.length < 6) throw corrupt("its frame header is too short");
  const precision = body[0] as number;
  if (precision !== 8) {
    throw new UnconvertibleImageError(
      `The image is a ${precision}-bit JPEG, which cannot be converted. Please save it as an 8-bit JPEG or PNG.`,
    );
  }
  const height = ((body[1] as number) << 8) | (body[2] as number);
  const width = ((body[3] as number) << 8) | (body[4] as number);
  const count = body[5] as number;
  if (width === 0 || height === 0) throw corrupt("its frame header gives no width or height");
  if (![1, 3, 4].includes(count) || body.length < 6 + count * 3) {
    throw corrupt(`its frame has ${count} colour components`);
  }
  const components: JpegComponent[] = [];
  for (let i = 0; i < count; i += 1) {
    const at = 6 + i * 3;
    const sampling = body[at + 1] as number;
    const h = sampling >> 4;
    const v = sampling & 15;
    if (h < 1 || h > 4 || v < 1 || v > 4) throw corrupt("a component has invalid sampling factors");
    components.push({ id: body[at] as number, h, v, tq: (body[at + 2] as number) & 3 });
  }
  return { width, height, progressive, components };
}

/**
 * One RGB channel from a CMYK pair. Adobe (Photoshop) files, recognised by their APP14 marker, store CMYK
 * inverted (255 = no ink); others store it plainly. No colour profile is applied: colours are approximate.
 */
export function cmykChannel(ink: number, black: number, adobeInverted: boolean): number {
  return adobeInverted ? (ink * black) / 255 : ((255 - ink) * (255 - black)) / 255;
}

/** A JPEG's first frame header, found before the file is read (`findJpegFrame`). */
export type JpegFrame = { progressive: boolean; width: number; height: number };

/** `count` bytes of a JPEG from `position` (null past its end), or "undecided" past what may be looked at. */
type JpegBytes = (position: number, count: number) => Promise<Uint8Array | null | "undecided">;

/** The first `limit` bytes of the file `reader` reads, buffered and left unconsumed (read whole afterwards). */
export function jpegPrefix(reader: ByteReader, limit: number): JpegBytes {
  return async (position, count) => {
    if (position + count > limit) return "undecided";
    return (await reader.ensure(position + count)) ? reader.buffered().subarray(position, position + count) : null;
  };
}

/** The whole file `reader` reads, forwards (positions only grow): what is stepped over is not kept. */
export function jpegWalk(reader: ByteReader): JpegBytes {
  return async (position, count) => {
    while (reader.position < position) {
      if (!(await reader.ensure(1))) return null;
      reader.takeBuffered(Math.min(reader.available, position - reader.position));
    }
    return (await reader.ensure(count)) ? reader.buffered().subarray(0, count) : null;
  };
}

/**
 * The first frame header (SOF0-2) of a JPEG, walking its markers as readJpegHeader does, without reading any
 * segment's body but the frame's. Null when the image data, the end or another kind of frame comes first (the
 * caller then lets readJpegHeader say what the file is); "undecided" when the source's limit comes first.
 */
export async function findJpegFrame(bytes: JpegBytes): Promise<JpegFrame | null | "undecided"> {
  const start = await bytes(0, 2);
  if (start === "undecided") return start;
  if (start?.[0] !== 0xff || start[1] !== 0xd8) return null;
  let pos = 2;
  for (;;) {
    const head = await bytes(pos, 4);
    if (head === "undecided" || head === null) return head;
    const marker = head[1] as number;
    // Stray bytes and fill bytes (0xFF runs) are stepped over, as readJpegHeader does.
    if (head[0] !== 0xff || marker === 0xff) {
      pos += 1;
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      pos += 2;
      continue;
    }
    if (marker >= 0xc0 && marker <= 0xc2) {
      const body = await bytes(pos + 4, 5);
      if (body === "undecided" || body === null) return body;
      return {
        progressive: marker === 0xc2,
        height: ((body[1] as number) << 8) | (body[2] as number),
        width: ((body[3] as number) << 8) | (body[4] as number),
      };
    }
    const length = ((head[2] as number) << 8) | (head[3] as number);
    if (marker === 0xd9 || marker === 0xda || marker in unsupportedFrames || length < 2) return null;
    pos += 2 + length;
  }
}
