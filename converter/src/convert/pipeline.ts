import { formatMegapixels, maxSourceEdge, maxSourcePixels } from "./budget";
import type { CodecResizer } from "./codec-decoders";
import type { ColourTransform } from "./colour";
import { ImageTooLargeError, UnconvertibleImageError } from "./errors";
import { type Codecs, largeJpegScratchBlockBytes } from "./instances";
import { heapBytes } from "./native";
import { fitWithin } from "./resize";

/** The decoded, reduced image: RGBA `width × height` at `pointer` in the codec's memory. */
/** The decoded image at the output size, RGBA; `opaque` when its source has no alpha (every alpha is 255). */
export type Target = { pointer: number; width: number; height: number; opaque: boolean };

/** What every decoder gets: the instances, the scratch allocator, the edge, and the lock's heartbeat. */
export type Context = {
  codecs: Codecs;
  /** Bump allocation in the scratch block, reset after every conversion. */
  scratch(size: number): Uint8Array;
  /**
   * Makes room for `more` bytes beyond what is used: true when the block has it, or could be grown to it
   * within the large-JPEG allowance (then it is); false otherwise.
   */
  roomFor(more: number): boolean;
  maxEdge: number;
  /** An exact output size instead of fitting `maxEdge` (WebP input only: `resizeHostedWebp`). */
  size: { width: number; height: number } | null;
  tick: () => void;
  /** The target, once allocated (freed by the encoder, or here on failure). */
  target: Target | null;
  /** The embedded profile's grey or RGB transform, applied to the target once decoded (colour.ts). */
  colour: ColourTransform | null;
};

/**
 * The context of one conversion over `current`: its scratch allocations start at the bottom of the block and
 * are let go with the context (the next conversion bumps from the bottom again).
 */
export function createContext(
  current: Codecs,
  maxEdge: number,
  size: { width: number; height: number } | null,
  tick: () => void,
): Context {
  let used = 0;
  return {
    codecs: current,
    scratch(size) {
      const next = used + Math.ceil(size / 16) * 16;
      // Admission keeps every plan within the block; reaching this is a planning error, not a user's.
      if (next > current.scratchBytes)
        throw new Error(`scratch plan exceeded: ${next} > ${current.scratchBytes} bytes`);
      const view = heapBytes(current.turbo, current.scratch + used, size);
      used = next;
      return view;
    },
    roomFor(more) {
      const total = used + Math.ceil(more / 16) * 16;
      if (total <= current.scratchBytes) return true;
      if (total > largeJpegScratchBlockBytes) return false;
      current.growScratch(total);
      return true;
    },
    maxEdge,
    size,
    tick,
    target: null,
    colour: null,
  };
}

export function tooLarge(width: number, height: number, limit: number, what = "an image"): ImageTooLargeError {
  return new ImageTooLargeError(
    `The image is too large to convert: ${width} × ${height} pixels exceeds the limit of ${formatMegapixels(limit)} for ${what}.`,
  );
}

/** Refuses, from the header alone, sources whose decoding would take too long or whose rows would be huge. */
export function refuseSourcePixels(width: number, height: number): void {
  if (width > maxSourceEdge || height > maxSourceEdge)
    throw new ImageTooLargeError(
      `The image is too large to convert: ${width} × ${height} pixels exceeds the limit of ${maxSourceEdge} pixels on an edge.`,
    );
  if (width * height > maxSourcePixels) throw tooLarge(width, height, maxSourcePixels);
}

/** Allocates the target (RGBA at the output size) in the codec's memory. */
export function allocateTarget(context: Context, width: number, height: number, opaque = false): Target {
  const size = width * height * 4;
  const pointer = context.codecs.codec.malloc(size);
  if (pointer === 0) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  context.target = { pointer, width, height, opaque };
  return context.target;
}

/**
 * Creates the downscaler from a `width × height` source to a newly allocated target at the output size, both
 * in the codec's memory. A source `opaque` by its format skips the alpha weighting; RGB sources (3 channels)
 * are opaque.
 */
export function createResizer(
  context: Context,
  width: number,
  height: number,
  options: { opaque: boolean; channels: 3 | 4; size?: { width: number; height: number } },
): CodecResizer {
  const size = options.size ?? fitWithin(width, height, context.maxEdge);
  // An opaque source's resizer writes 255 into every alpha.
  const target = allocateTarget(context, size.width, size.height, options.opaque);
  const resizer = context.codecs.codec.createResizer(width, height, size.width, size.height, target.pointer, options);
  if (!resizer) throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  return resizer;
}

/**
 * Runs a row decoder of a `width × height` source into a newly allocated target at the output size. Each row
 * the decoder pushes (`channels` bytes a pixel) is copied into the codec's memory and reduced there.
 */
export async function streamRows(
  context: Context,
  width: number,
  height: number,
  opaque: boolean,
  decode: (push: (row: Uint8Array) => void) => void | Promise<void>,
  options: { size?: { width: number; height: number }; channels?: 3 | 4; ink?: ColourTransform } = {},
): Promise<void> {
  const codec = context.codecs.codec;
  // CMYK rows (4 bytes a pixel) land in a block of their own and leave the colour transform as RGB rows.
  const ink = options.ink;
  const channels = ink ? 3 : (options.channels ?? 4);
  const inkRow = ink ? codec.malloc(width * 4) : 0;
  if (ink && inkRow === 0)
    throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
  try {
    const resizer = createResizer(context, width, height, {
      opaque: opaque || channels === 3,
      channels,
      size: options.size,
    });
    try {
      // The codec's memory does not grow while rows stream (nothing else allocates there), so the view stays valid.
      const row = ink ? codec.heap(inkRow, width * 4) : codec.heap(resizer.row, width * channels);
      let pushed = 0;
      await decode((source) => {
        row.set(source.length === row.length ? source : source.subarray(0, row.length));
        if (ink) codec.applyColour(ink.handle, inkRow, resizer.row, width);
        resizer.push();
        pushed += 1;
        if ((pushed & 63) === 0) context.tick();
      });
      if (pushed !== height) throw new UnconvertibleImageError("The image data ends before its last row.");
    } finally {
      resizer.free();
    }
  } finally {
    if (inkRow) codec.free(inkRow);
  }
}
