import { bmpAlphaIsUsed, decodeBmp, readBmpHeader, truncatedBmp } from "./bmp";
import { codecShareBytes } from "./budget";
import type { CodecResizer } from "./codec-decoders";
import { colourTransform, maxProfileBytes } from "./colour";
import { ImageTooLargeError, UnconvertibleImageError } from "./errors";
import type { Orientation } from "./exif";
import { decodeGif, type GifScan, scanGif, truncatedGif } from "./gif";
import { type ImageInput, openReader } from "./input";
import { type Context, createResizer, refuseSourcePixels, streamRows, tooLarge } from "./pipeline";
import { decodePng, pngDecoderOverheadBytes, pngDecoderPlan, readPngHeader, truncatedPng } from "./png";
import { fitWithin } from "./resize";
import { colourKind } from "./webp-codec";

/**
 * What walking a GIF's blocks found: its scan, or why it cannot be read. The sniff's frame count gets it, and
 * hands it to `convertToWebp` for the same input, so a still GIF is walked once, not once more to convert.
 */
export type GifScanOutcome = { scan: GifScan } | { refusal: UnconvertibleImageError };

/**
 * Walks a GIF's blocks, streamed, without decoding pixels (`scanGif`): counts its frames (more than one is an
 * animation, hosted unchanged) and checks every descriptor. Errors other than the file's own (a failed read)
 * are thrown.
 */
export async function scanGifInput(input: ImageInput): Promise<GifScanOutcome> {
  const reader = await openReader(input, truncatedGif);
  try {
    return { scan: await scanGif(reader) };
  } catch (error) {
    if (error instanceof UnconvertibleImageError) return { refusal: error };
    throw error;
  } finally {
    await reader.cancel();
  }
}

/** A GIF's frame count (`scanGifInput`); throws why a file cannot be read. */
export async function gifFrameCount(input: ImageInput): Promise<number> {
  const outcome = await scanGifInput(input);
  if ("refusal" in outcome) throw outcome.refusal;
  return outcome.scan.frames;
}

/**
 * PNG: chunks read from the input stream, the image data inflated, unfiltered and reduced inside the codec
 * (png.c), so neither the file nor a full-size row set exists; an interlaced image keeps its even rows (half
 * of it) in the codec's memory beside the target.
 */
export async function decodePngInput(input: ImageInput, context: Context): Promise<Orientation> {
  const reader = await openReader(input, truncatedPng);
  try {
    const header = await readPngHeader(reader);
    refuseSourcePixels(header.width, header.height);
    const size = fitWithin(header.width, header.height, context.maxEdge);
    if (header.interlaced) {
      const room = codecShareBytes - size.width * size.height * 4 - pngDecoderOverheadBytes;
      // Even rows: 4 bytes a pixel for half the rows, 2 bytes per source pixel.
      if (Math.ceil(header.height / 2) * header.width * 4 > room)
        throw tooLarge(header.width, header.height, Math.floor(room / 2), "an interlaced PNG");
    }
    if (header.iccProfile) {
      const profile = context.codecs.codec.inflateProfile(header.iccProfile, maxProfileBytes);
      const grey = header.colorType === 0 || header.colorType === 4;
      if (profile)
        context.colour = colourTransform(context.codecs.codec, profile, grey ? colourKind.grey : colourKind.rgb);
    }
    // 8-bit RGB scanlines go to the resizer as they are; other layouts are widened to RGBA first.
    const direct = header.colorType === 2 && header.bitDepth === 8 && !header.mayHaveAlpha && !header.interlaced;
    const resizer = createResizer(context, header.width, header.height, {
      opaque: !header.mayHaveAlpha,
      channels: direct ? 3 : 4,
      size,
    });
    try {
      const decoder = context.codecs.codec.createPngDecoder(pngDecoderPlan(header), resizer);
      if (!decoder) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
      try {
        await decodePng(header, reader, decoder, context.tick);
      } finally {
        decoder.free();
      }
      if (resizer.rowsPushed !== header.height)
        throw new UnconvertibleImageError("The image data ends before its last row.");
    } finally {
      resizer.free();
    }
    return header.orientation;
  } finally {
    await reader.cancel();
  }
}

/** BMP: rows streamed in stored order; a bottom-up file is turned upright with the orientation step. */
export async function decodeBmpInput(input: ImageInput, context: Context): Promise<Orientation> {
  const reader = await openReader(input, truncatedBmp);
  try {
    const header = await readBmpHeader(reader);
    refuseSourcePixels(header.width, header.height);
    // An alpha mask whose bits are zero in every pixel is shown opaque: a first read looks for one that is not.
    let opaque = !header.mayHaveAlpha;
    if (!opaque) {
      const scanner = await openReader(input, truncatedBmp);
      try {
        opaque = !(await bmpAlphaIsUsed(scanner, await readBmpHeader(scanner)));
      } finally {
        await scanner.cancel();
      }
    }
    await streamRows(context, header.width, header.height, opaque, (push) => decodeBmp(reader, header, push, opaque));
    return header.topDown ? 1 : 4;
  } finally {
    await reader.cancel();
  }
}

/** Largest interlaced GIF frame whose visible indices admission allows: 12 MB (the decoder keeps half of them). */
const maxInterlacedGifBytes = 12_000_000;

/**
 * GIF: every block walked first (`scanGif`: one frame, every descriptor checked) before anything is
 * allocated, by the caller's `scanGifInput` (the sniff's frame count) or here; then a second read decodes the
 * first frame onto a transparent canvas of the logical screen inside the codec (gif.c), rows into the
 * resizer, and stops after its last visible row.
 */
export async function decodeGifInput(
  input: ImageInput,
  context: Context,
  scanned: GifScanOutcome | undefined,
): Promise<void> {
  const outcome = scanned ?? (await scanGifInput(input));
  if ("refusal" in outcome) throw outcome.refusal;
  const scan = outcome.scan;
  if (scan.frames > 1)
    throw new UnconvertibleImageError("The GIF image is animated; animated images are not converted.");
  admitGif(scan.width, scan.height, scan.decodeBytes);
  const reader = await openReader(input, truncatedGif);
  const made: { resizer: CodecResizer | null; height: number } = { resizer: null, height: 0 };
  try {
    await decodeGif(
      reader,
      context.codecs.codec,
      (screen, frame) => {
        // Admitted from this read's own header too: it is what the memory is allocated for.
        const interlacedBytes = frame.interlaced ? frame.visibleWidth * frame.visibleHeight : 0;
        admitGif(screen.width, screen.height, screen.width * 4 + interlacedBytes);
        // A frame covering the whole screen without a transparent index paints every pixel opaque.
        const opaque =
          frame.transparentIndex === null &&
          frame.left === 0 &&
          frame.top === 0 &&
          frame.visibleWidth === screen.width &&
          frame.visibleHeight === screen.height;
        made.resizer = createResizer(context, screen.width, screen.height, { opaque, channels: 4 });
        made.height = screen.height;
        return made.resizer;
      },
      { tick: context.tick },
    );
    if (made.resizer?.rowsPushed !== made.height)
      throw new UnconvertibleImageError("The image data ends before its last row.");
  } finally {
    made.resizer?.free();
    await reader.cancel();
  }
}

/** Refuses a GIF screen, or an interlaced frame's indices, beyond the limits, from the header alone. */
function admitGif(width: number, height: number, decodeBytes: number): void {
  refuseSourcePixels(width, height);
  if (decodeBytes > maxInterlacedGifBytes)
    throw tooLarge(width, height, maxInterlacedGifBytes, "an interlaced GIF frame");
}
