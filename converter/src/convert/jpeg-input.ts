import { codecShareBytes, formatMegabytes, largeJpegCodecBytes } from "./budget";
import type { ByteReader } from "./byte-reader";
import { jpegStatus } from "./codec-decoders";
import { type ColourTransform, cmykFallbackProfileBytes, jpegColourTransform, profileWorkBytes } from "./colour";
import { ImageTooLargeError, UnconvertibleImageError } from "./errors";
import type { Orientation } from "./exif";
import { type ImageInput, inputSize, openReader, readRest } from "./input";
import { growCodecPastShare, largeJpegScratchBlockBytes } from "./instances";
import { findJpegFrame, type JpegFrame, type JpegHeader, jpegPrefix, jpegWalk, readJpegHeader } from "./jpeg-header";
import { heapBytes } from "./native";
import { type Context, createResizer, refuseSourcePixels, streamRows, tooLarge } from "./pipeline";
import { decodeProgressive, progressiveStorageBytes } from "./progressive";
import { fitWithin } from "./resize";

const truncatedJpeg = () =>
  new UnconvertibleImageError(
    "The JPEG file is incomplete: it ends before the end of its image data. Please upload the complete file again.",
  );

function scaled(size: number, m: number): number {
  return Math.ceil((size * m) / 8);
}

/** The smallest M/8 decode scale whose result still covers the target, or 8 (full size). */
function coveringScale(width: number, height: number, target: { width: number; height: number }): number {
  for (let m = 1; m <= 8; m += 1) if (scaled(width, m) >= target.width && scaled(height, m) >= target.height) return m;
  return 8;
}

/**
 * JPEG: the decoders need the whole file. Its frame header, found before the file is read, says where it goes:
 * a baseline file into the codec's memory, where libjpeg-turbo (jpeg.c) decodes it at the smallest M/8 scale
 * covering the target and hands its rows straight to the resizer (a 24 MP photo never exists at full size,
 * nor does its M/8 image: only a strip of rows); a progressive file into the scratch, for the pipeline's own
 * decoder (progressive/), which keeps only the coefficients an N/8-scale IDCT needs.
 */
export async function decodeJpeg(input: ImageInput, context: Context): Promise<Orientation> {
  const size = inputSize(input);
  if (size > maxJpegFileBytes)
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(size)} file exceeds the limit of ${formatMegabytes(maxJpegFileBytes)} for a JPEG.`,
    );
  const reader = await openReader(input, truncatedJpeg);
  try {
    // Looked for in the first bytes, which the reader buffers anyway and the whole file is then read from; past
    // `jpegPeekBytes` of other segments (a large profile), by a second read walking the markers.
    let frame = await findJpegFrame(jpegPrefix(reader, jpegPeekBytes));
    if (frame === "undecided") {
      const walker = await openReader(input, truncatedJpeg);
      try {
        frame = await findJpegFrame(jpegWalk(walker));
      } finally {
        await walker.cancel();
      }
    }
    if (frame !== null && frame !== "undecided" && !frame.progressive)
      return await decodeBaselineJpeg(reader, size, frame, context);
    return await decodeJpegInScratch(reader, size, context);
  } finally {
    await reader.cancel();
  }
}

/** Largest JPEG file: a baseline one beside the smallest target within the large-JPEG allowance. */
const maxJpegFileBytes = largeJpegCodecBytes - 2_000_000;

/** How far into the file the frame header is looked for in what the reader buffers before the file is read. */
const jpegPeekBytes = 1_048_576;

/** Progressive JPEG (or no frame header found: readJpegHeader says why): the file into the scratch. */
async function decodeJpegInScratch(reader: ByteReader, size: number, context: Context): Promise<Orientation> {
  if (!context.roomFor(size))
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(size)} file exceeds the limit of ${formatMegabytes(largeJpegScratchBlockBytes)} for a progressive JPEG.`,
    );
  const bytes = context.scratch(size);
  await readRest(reader, bytes);
  context.tick();
  const header = readJpegHeader(bytes);
  refuseSourcePixels(header.width, header.height);
  // findJpegFrame walks the markers as readJpegHeader does: a baseline frame was found before reading.
  if (!header.progressive)
    throw new UnconvertibleImageError("The JPEG file cannot be read: its frame header cannot be read.");
  // Made before decoding: the profile's segments are views of the file, and lcms's parsing memory is freed
  // before the target is allocated.
  const colour = jpegColourTransform(
    context.codecs.codec,
    header.iccSegments,
    header.components.length,
    header.adobeTransform !== null,
  );
  const ink = colour && header.components.length === 4 ? colour : null;
  if (!ink) context.colour = colour;
  try {
    await decodeProgressiveJpeg(bytes, header, context, ink);
  } finally {
    if (ink) context.codecs.codec.freeColour(ink.handle);
  }
  return header.orientation;
}

/**
 * What a baseline decode holds in the codec beside the file and the target: the resizer (a few rows of
 * floats), libjpeg's buffers (an MCU row of each component, one output strip), an ink row and a kept CMYK
 * transform (0.5 MB). Measured under 1 MB at 24 MP.
 */
const jpegDecoderOverheadBytes = 2_000_000;

/**
 * Baseline JPEG, inside the codec: the file read whole beside the target, libjpeg-turbo's rows straight into
 * the resizer (jpeg.c). Admitted from the frame header and the file's size before anything is read: file +
 * target + decoder within the codec's share, or within the large-JPEG allowance with the scratch instance let
 * go (and the grown codec by the next JPEG, as for a large WebP).
 */
async function decodeBaselineJpeg(
  reader: ByteReader,
  size: number,
  frame: JpegFrame,
  context: Context,
): Promise<Orientation> {
  const codec = context.codecs.codec;
  const { width, height } = frame;
  refuseSourcePixels(width, height);
  const target = fitWithin(width, height, context.maxEdge);
  const need = size + target.width * target.height * 4 + jpegDecoderOverheadBytes;
  const limit = need <= codecShareBytes ? codecShareBytes : largeJpegCodecBytes;
  if (need > limit)
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(size)} file does not fit beside its ${target.width} × ${target.height} result in the ${formatMegabytes(limit)} a baseline JPEG may use.`,
    );
  if (limit > codecShareBytes) growCodecPastShare(context.codecs);
  const file = codec.malloc(size);
  if (file === 0) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  try {
    await readRest(reader, codec.heap(file, size));
    context.tick();
    const header = readJpegHeader(codec.heap(file, size));
    if (header.progressive || header.width !== width || header.height !== height)
      throw new UnconvertibleImageError("The JPEG file cannot be read: its frame header cannot be read.");
    const ink = baselineColour(header, size, limit, context);
    try {
      const budget = limit - need + jpegDecoderOverheadBytes / 2;
      decodeBaselineRows({ pointer: file, size }, header, target, { ink, budget }, context);
    } finally {
      if (ink) codec.freeColour(ink.handle);
    }
    return header.orientation;
  } finally {
    codec.free(file);
  }
}

/**
 * The baseline file's colour transform, made beside the file before the target exists: a grey or RGB one
 * goes to `context.colour` (applied to the target), a CMYK one is returned for the rows (`ink`). A profile
 * whose work would not fit beside the file within `limit` is ignored, and a CMYK file then keeps the plain
 * formula when the built-in profile's work would not fit either.
 */
function baselineColour(header: JpegHeader, size: number, limit: number, context: Context): ColourTransform | null {
  const cmyk = header.components.length === 4;
  const adobe = header.adobeTransform !== null;
  const profileBytes = header.iccSegments.reduce((total, segment) => total + segment.data.length, 0);
  const fits = (bytes: number) => size + profileWorkBytes(bytes) <= limit;
  const segments = fits(profileBytes) ? header.iccSegments : [];
  if (cmyk && !fits(cmykFallbackProfileBytes)) return null;
  const colour = jpegColourTransform(context.codecs.codec, segments, header.components.length, adobe);
  if (cmyk) return colour;
  context.colour = colour;
  return null;
}

/**
 * Creates the resizer and its target and has jpeg.c decode the file at `file` into them. `budget` bounds
 * libjpeg's own allocations: what is left of the codec's allowance, which a file coded in several scans (its
 * whole-image coefficient buffer) may not fit.
 */
function decodeBaselineRows(
  file: { pointer: number; size: number },
  header: JpegHeader,
  target: { width: number; height: number },
  plan: { ink: ColourTransform | null; budget: number },
  context: Context,
): void {
  const { width, height } = header;
  const m = coveringScale(width, height, target);
  const cmyk = header.components.length === 4;
  // RGB rows, or CMYK rows turned RGB by the ink transform: 3 bytes a pixel; the formula writes RGBA.
  // The target keeps the original's proportions (the M/8 scale rounds up its edges).
  const resizer = createResizer(context, scaled(width, m), scaled(height, m), {
    opaque: true,
    channels: cmyk && !plan.ink ? 4 : 3,
    size: target,
  });
  try {
    context.tick();
    const status = context.codecs.codec.decodeJpeg(file.pointer, file.size, resizer, {
      scale: m,
      ink: plan.ink?.handle ?? 0,
      inverted: header.adobeTransform !== null,
      maxMemory: plan.budget,
    });
    if (status === jpegStatus.outOfMemory)
      throw new ImageTooLargeError(
        `The image is too large to convert: its image data is coded in several scans, which needs more memory than a JPEG of ${width} × ${height} pixels may use beside its ${formatMegabytes(file.size)} file.`,
      );
    if (status !== jpegStatus.ok || resizer.rowsPushed !== scaled(height, m))
      throw new UnconvertibleImageError("The JPEG file is damaged: its image data cannot be decoded.");
  } finally {
    resizer.free();
  }
}

async function decodeProgressiveJpeg(
  file: Uint8Array,
  header: JpegHeader,
  context: Context,
  ink: ColourTransform | null,
): Promise<void> {
  // Where the file is: growing the scratch (roomFor) grows its memory, which detaches `file`.
  const fileAt = file.byteOffset;
  const fileSize = file.length;
  const { width, height } = header;
  const target = fitWithin(width, height, context.maxEdge);
  const n = coveringScale(width, height, target);
  const plan = {
    width,
    height,
    components: header.components,
    n,
    adobeTransform: header.adobeTransform,
    inkRows: ink !== null,
  };
  const storageSize = progressiveStorageBytes(plan);
  if (!context.roomFor(storageSize)) {
    throw tooLarge(
      width,
      height,
      Math.floor((width * height * (largeJpegScratchBlockBytes - fileSize)) / storageSize),
      `a progressive JPEG of this file size (${formatMegabytes(fileSize)})`,
    );
  }
  const bytes = heapBytes(context.codecs.turbo, fileAt, fileSize);
  const storage = context.scratch(storageSize);
  const memory = context.codecs.turbo.exports.memory;
  await streamRows(
    context,
    scaled(width, n),
    scaled(height, n),
    true,
    (push) => decodeProgressive(bytes, plan, storage, push, memory),
    { size: target, ink: ink ?? undefined },
  );
}
