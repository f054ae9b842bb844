import { codecShareBytes, formatMegabytes, largeWebpCodecBytes } from "./budget";
import type { ByteReader } from "./byte-reader";
import { colourTransform, maxProfileBytes, profileWorkBytes } from "./colour";
import { ImageTooLargeError, UnconvertibleImageError } from "./errors";
import type { Orientation } from "./exif";
import { type ImageInput, inputSize, openReader, readWhole } from "./input";
import { growCodecPastShare } from "./instances";
import { allocateTarget, type Context, createResizer, refuseSourcePixels, tooLarge } from "./pipeline";
import { fitWithin } from "./resize";
import { colourKind, encodeMemoryBytes, losslessWindowTooSmall, type WebpCodec, webpStatus } from "./webp-codec";
import { readWebpHeader, readWebpStart } from "./webp-header";

const truncatedWebp = () =>
  new UnconvertibleImageError("The WebP file is incomplete: it ends in the middle of its data.");

/**
 * WebP. Lossless files are decoded from the stream (`decodeLosslessWebp`): the file is never held, only a
 * window of it. Other files are read whole into the codec's memory beside the target, and libwebp decodes
 * them scaled straight to the target size (no full-size output buffer), or, with alpha and made smaller, at
 * full size row by row into the resizer (`decodeLossyInto`). Either way a transparent image made smaller is
 * averaged with colour weighted by alpha, in floats. Admission: target + file + libwebp's
 * work within the codec's share, or, for transparent lossy files, within the large-WebP allowance with the
 * scratch instance let go, and the grown codec let go by the next JPEG (docs/conversion.md, "Admission").
 */
export async function decodeWebpInput(input: ImageInput, context: Context): Promise<Orientation> {
  if (await decodeLosslessWebp(input, context)) return 1;
  return decodeWholeWebp(input, context);
}

/** Least window a lossless WebP is streamed through (or its whole bitstream, if smaller). */
const minLosslessWindowBytes = 1 << 20;
/** Window a lossless WebP is streamed through when memory allows: fewer, longer decoding steps. */
const losslessWindowBytes = 2 << 20;

/** An ICC profile read into the codec's memory (freed by whoever holds it last). */
type HeldProfile = { pointer: number; size: number };

/**
 * Lossless WebP from the stream: the RIFF chunks up to the image (the ICCP profile read into the codec's
 * memory), then the VP8L bitstream through a window of the codec's memory into libwebp's lossless decoder
 * (codec.c, `lossless_*`), which scales rows into the target as they complete. The codec holds the target,
 * libwebp's ARGB plane of the whole image (4 B per source pixel: its back-references reach a million pixels
 * back), its row cache and tables, and the window: never the file, whatever its size. False (nothing
 * allocated, the reader closed) when the file is not lossless: the caller reads it whole.
 */
async function decodeLosslessWebp(input: ImageInput, context: Context): Promise<boolean> {
  const codec = context.codecs.codec;
  const reader = await openReader(input, truncatedWebp);
  const profile: { held: HeldProfile | null } = { held: null };
  try {
    const start = await readWebpStart(reader, async (size) => {
      const pointer = size <= maxProfileBytes ? codec.malloc(size) : 0;
      if (pointer === 0) return reader.skip(size);
      profile.held = { pointer, size };
      for (let at = 0; at < size; ) {
        const piece = await reader.takeSome(size - at);
        codec.heap(pointer + at, piece.length).set(piece);
        at += piece.length;
      }
    });
    if (start.animated)
      throw new UnconvertibleImageError("The WebP image is animated; animated images are not converted.");
    const image = start.image;
    if (image?.type !== "VP8L") return false;
    refuseSourcePixels(image.width, image.height);
    const target = context.size ?? fitWithin(image.width, image.height, context.maxEdge);
    const plan = planLosslessWindow(context, image, target);
    // The transform is made first, its work freed before anything large exists; a profile whose work would
    // not fit beside the plan is ignored.
    const held = profile.held;
    profile.held = null;
    if (held && profileWorkBytes(held.size) + plan.base + plan.window <= plan.limit)
      context.colour = colourTransform(codec, held, colourKind.rgb);
    else if (held) codec.free(held.pointer);
    await streamLossless(reader, context, image, target, plan.window);
    return true;
  } finally {
    if (profile.held) codec.free(profile.held.pointer);
    await reader.cancel();
  }
}

/** The VP8L bitstream: its size, its image's, and whether its header says alpha is used. */
type LosslessImage = { width: number; height: number; size: number; alpha: boolean };

/**
 * Admission of a lossless WebP: the window it is streamed through, the memory it may use (the codec's share,
 * or the large-WebP allowance with the scratch let go), and what it holds besides the window (`base`).
 */
function planLosslessWindow(
  context: Context,
  image: LosslessImage,
  target: { width: number; height: number },
): { window: number; limit: number; base: number } {
  // Target, ARGB plane, libwebp's row cache (17 rows of the source) and its tables (measured under 1 MB).
  const base = target.width * target.height * 4 + image.width * image.height * 4 + image.width * 17 * 4 + 2_000_000;
  const encodeNeed = encodeMemoryBytes(target.width, target.height);
  const minWindow = Math.min(image.size, minLosslessWindowBytes);
  let limit = codecShareBytes;
  let window = Math.min(image.size, losslessWindowBytes, codecShareBytes - base);
  if (window < minWindow || encodeNeed > limit) {
    limit = largeWebpCodecBytes;
    window = Math.min(image.size, losslessWindowBytes, limit - base);
  }
  if (window < minWindow || encodeNeed > limit) {
    const room = Math.floor((limit - target.width * target.height * 4 - 2_000_000 - minWindow) / 4);
    throw tooLarge(image.width, image.height, Math.max(0, room), "a lossless WebP");
  }
  if (limit > codecShareBytes) {
    // The codec grows past its share: the scratch (40 MB, only JPEGs use it) is let go now, and the grown codec
    // by the next JPEG conversion, so the two are never held together.
    growCodecPastShare(context.codecs);
  }
  return { window, limit, base };
}

/** Streams the VP8L bitstream from `reader` through a `window` of the codec's memory into a new target. */
async function streamLossless(
  reader: ByteReader,
  context: Context,
  image: LosslessImage,
  target: { width: number; height: number },
  window: number,
): Promise<void> {
  // A transparent image made smaller: full-size rows into our resizer, which weights colour by alpha in floats
  // (libwebp's scaling premultiplies into 8 bits, so a faint pixel keeps only a few levels of its colour).
  const resized = image.alpha && (target.width !== image.width || target.height !== image.height);
  const resizer = resized
    ? createResizer(context, image.width, image.height, { opaque: false, channels: 4, size: target })
    : null;
  try {
    await feedLossless(
      reader,
      context,
      image,
      window,
      resizer ?? { ...target, out: allocateTarget(context, target.width, target.height).pointer },
    );
  } finally {
    resizer?.free();
  }
}

/** Feeds the bitstream from `reader` through the window into a lossless stream writing `into`. */
async function feedLossless(
  reader: ByteReader,
  context: Context,
  image: LosslessImage,
  window: number,
  into: Parameters<WebpCodec["createLosslessStream"]>[2],
): Promise<void> {
  const codec = context.codecs.codec;
  const stream = codec.createLosslessStream(image.size, window, into);
  if (!stream) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  try {
    for (;;) {
      // The window is filled before each decoding step: a step goes back to the last 8-row checkpoint.
      const room = stream.room();
      let filled = 0;
      while (filled < room) {
        const piece = await reader.takeSome(room - filled);
        codec.heap(stream.input() + filled, piece.length).set(piece);
        filled += piece.length;
      }
      context.tick();
      const status = stream.feed(filled);
      if (status === webpStatus.ok) break;
      if (status === webpStatus.suspended) continue;
      if (status === losslessWindowTooSmall)
        throw new ImageTooLargeError(
          `The image is too large to convert: its lossless image data needs more than the ${formatMegabytes(window)} a WebP of ${image.width} × ${image.height} pixels may read at once.`,
        );
      if (status === webpStatus.outOfMemory)
        throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
      throw new UnconvertibleImageError("The WebP file is damaged: its image data cannot be decoded.");
    }
  } finally {
    stream.free();
  }
}

/** A WebP read whole into the codec's memory (lossy, with or without alpha). */
async function decodeWholeWebp(input: ImageInput, context: Context): Promise<Orientation> {
  const codec = context.codecs.codec;
  const size = inputSize(input);
  const fileLimit = codecShareBytes - encodeMemoryBytes(1, 1);
  if (size > fileLimit)
    throw new ImageTooLargeError(
      `The image is too large to convert: the ${formatMegabytes(size)} file exceeds the limit of ${formatMegabytes(fileLimit)} for a WebP image.`,
    );
  const file = codec.malloc(size);
  if (file === 0) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  try {
    await readWhole(input, codec.heap(file, size), truncatedWebp);
    context.tick();
    const header = readWebpHeader(codec.heap(file, size));
    if (header.animated)
      throw new UnconvertibleImageError("The WebP image is animated; animated images are not converted.");
    refuseSourcePixels(header.width, header.height);
    const target = context.size ?? fitWithin(header.width, header.height, context.maxEdge);
    const features = codec.features(file, size);
    if (!features) throw new UnconvertibleImageError("The WebP file is damaged: its header cannot be read.");
    // Decoding holds the file, the target and libwebp's work per source pixel (measured: none for lossy
    // opaque images, 4 bytes for lossless: libwebp 1.2.4 keeps the whole ARGB plane of a VP8L image, also
    // when decoding incrementally; 6 for lossy with alpha), plus up to 2 MB of tables and rows (measured at
    // most 1 MB; a transparent image made smaller adds the resizer and its rows, ~19 B per source column and
    // ~50 per target column: under 0.5 MB at the largest edges); encoding comes after the file is freed.
    const perSourcePixel = features.format === "lossless" ? 4 : features.hasAlpha ? 6 : 0;
    const decodeNeed = (pixels: number) =>
      size + target.width * target.height * 4 + 2_000_000 + pixels * perSourcePixel;
    const sourcePixels = header.width * header.height;
    const need = Math.max(decodeNeed(sourcePixels), encodeMemoryBytes(target.width, target.height));
    const limit = perSourcePixel === 0 ? codecShareBytes : largeWebpCodecBytes;
    if (need > limit) {
      const room = perSourcePixel === 0 ? 0 : Math.max(0, Math.floor((limit - decodeNeed(0)) / perSourcePixel));
      const kind = features.format === "lossless" ? "a lossless WebP" : "a WebP with transparency";
      throw room > 0
        ? tooLarge(header.width, header.height, room, `${kind} of ${formatMegabytes(size)}`)
        : new ImageTooLargeError(
            `The image is too large to convert: the ${formatMegabytes(size)} WebP file does not fit beside its ${target.width} × ${target.height} result.`,
          );
    }
    if (need > codecShareBytes) {
      // The codec grows past its share: the scratch (40 MB, only JPEGs use it) is let go now, and the grown codec
      // by the next JPEG conversion, so the two are never held together.
      growCodecPastShare(context.codecs);
    }
    // The transform is made beside the file, before the target exists; a profile whose work would not fit
    // the share beside this file is ignored.
    const icc = header.iccProfile;
    if (icc && icc.size <= maxProfileBytes && size + profileWorkBytes(icc.size) <= codecShareBytes)
      context.colour = colourTransform(codec, { pointer: file + icc.offset, size: icc.size }, colourKind.rgb, true);
    const status = decodeLossyInto(context, file, size, features, target, features.hasAlpha);
    if (status === webpStatus.outOfMemory)
      throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
    if (status !== 0) throw new UnconvertibleImageError("The WebP file is damaged: its image data cannot be decoded.");
    // Shown as stored, as browsers show a WebP: its EXIF orientation is not applied (webp-header.ts).
    return 1;
  } finally {
    codec.free(file);
  }
}

/**
 * Decodes the lossy WebP read whole at `file` into a new target of the `target` size; returns libwebp's status.
 * A transparent image made smaller is decoded at full size into our resizer, which weights colour by alpha;
 * libwebp's scaling while decoding (`decodeScaled`, no full-size rows at all) averages colour without alpha,
 * so the colour under transparent pixels would darken or tint the visible ones beside them. An opaque image
 * has nothing to weight and keeps that fast path, as does any image at its own size (no averaging).
 */
function decodeLossyInto(
  context: Context,
  file: number,
  size: number,
  source: { width: number; height: number },
  target: { width: number; height: number },
  hasAlpha: boolean,
): number {
  const codec = context.codecs.codec;
  if (!hasAlpha || (target.width === source.width && target.height === source.height)) {
    const result = allocateTarget(context, target.width, target.height);
    return codec.decodeScaled(file, size, result.pointer, target.width, target.height);
  }
  const resizer = createResizer(context, source.width, source.height, { opaque: false, channels: 4, size: target });
  try {
    return codec.decodeResized(file, size, resizer);
  } finally {
    resizer.free();
  }
}
