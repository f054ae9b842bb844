import { formatMegabytes } from "./budget";
import { type ColourTransform, jpegColourTransform } from "./colour";
import { ImageTooLargeError, UnconvertibleImageError } from "./errors";
import type { Orientation } from "./exif";
import { type ImageInput, inputSize, readWhole } from "./input";
import { largeJpegScratchBlockBytes } from "./instances";
import { cmykChannel, type JpegHeader, readJpegHeader } from "./jpeg-header";
import { decompressInto, heapBytes, pixelFormat } from "./native";
import { type Context, refuseSourcePixels, streamRows, tooLarge } from "./pipeline";
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
 * JPEG: the decoders need the whole file, read into scratch once its size is admitted. Baseline files go to
 * libjpeg-turbo, which decodes straight to the smallest M/8 scale covering the target (a 24 MP photo never
 * exists at full size); progressive files to the pipeline's own decoder (progressive/), which keeps only
 * the coefficients an N/8-scale IDCT needs. Both then stream rows into the target.
 */
export async function decodeJpeg(input: ImageInput, context: Context): Promise<Orientation> {
  const size = inputSize(input);
  if (!context.roomFor(size))
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(size)} file exceeds the limit of ${formatMegabytes(largeJpegScratchBlockBytes)} for a JPEG.`,
    );
  const bytes = context.scratch(size);
  await readWhole(input, bytes, truncatedJpeg);
  context.tick();
  const header = readJpegHeader(bytes);
  refuseSourcePixels(header.width, header.height);
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
    if (header.progressive) await decodeProgressiveJpeg(bytes, header, context, ink);
    else await decodeBaselineJpeg(bytes, header, context, ink);
  } finally {
    if (ink) context.codecs.codec.freeColour(ink.handle);
  }
  return header.orientation;
}

/**
 * Baseline JPEG. CMYK rows go through `ink`, the embedded (or built-in) profile's transform, when there is
 * one; the plain formula is only left for a codec whose memory cannot hold the transform.
 */
async function decodeBaselineJpeg(
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
  const m = coveringScale(width, height, target);
  const cmyk = header.components.length === 4;
  // Three bytes a pixel unless CMYK: a 24 MP file's M/8 pixels then fit beside the file.
  const channels = cmyk ? 4 : 3;
  const outWidth = scaled(width, m);
  const outHeight = scaled(height, m);
  const need = outWidth * outHeight * channels;
  if (!context.roomFor(need)) {
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(fileSize)} file leaves ${formatMegabytes(largeJpegScratchBlockBytes - fileSize)} of the ${formatMegabytes(largeJpegScratchBlockBytes)} a JPEG of ${width} × ${height} pixels may use, and it needs ${formatMegabytes(need)} more.`,
    );
  }
  const bytes = heapBytes(context.codecs.turbo, fileAt, fileSize);
  const destination = context.scratch(need).byteOffset;
  decompressInto(
    context.codecs.turbo,
    bytes.byteOffset,
    bytes.length,
    destination,
    outWidth,
    outHeight,
    cmyk ? pixelFormat.cmyk : pixelFormat.rgb,
    channels,
  );
  // libjpeg's own buffers may have grown its memory, detaching views taken before the decode.
  const decoded = heapBytes(context.codecs.turbo, destination, need);
  const inverted = header.adobeTransform !== null;
  const rowBytes = outWidth * channels;
  const cmykRow = cmyk && !ink ? new Uint8Array(outWidth * 4) : null;
  // The target keeps the original's proportions (the M/8 scale rounds up its edges).
  await streamRows(
    context,
    outWidth,
    outHeight,
    true,
    (push) => {
      for (let y = 0; y < outHeight; y += 1) {
        const source = decoded.subarray(y * rowBytes, (y + 1) * rowBytes);
        if (!cmykRow) {
          push(source);
          continue;
        }
        for (let x = 0, i = 0; x < outWidth; x += 1, i += 4) {
          const k = source[i + 3] as number;
          cmykRow[i] = Math.round(cmykChannel(source[i] as number, k, inverted));
          cmykRow[i + 1] = Math.round(cmykChannel(source[i + 1] as number, k, inverted));
          cmykRow[i + 2] = Math.round(cmykChannel(source[i + 2] as number, k, inverted));
          cmykRow[i + 3] = 255;
        }
        push(cmykRow);
      }
    },
    { size: target, channels: cmyk ? 4 : 3, ink: ink ?? undefined },
  );
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
