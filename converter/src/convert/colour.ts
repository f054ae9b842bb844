import type { IccSegment } from "./jpeg-header";
import { type ColourKind, colourKind, type WebpCodec } from "./webp-codec";

/**
 * Colour management (docs/conversion.md, "Colour"): an ICC profile embedded in the upload (JPEG APP2, PNG
 * iCCP, WebP ICCP) is applied with Little CMS inside the codec (converter/wasm/webp/colour.c), turning the pixels into
 * sRGB, the space a WebP without a profile is shown in. A profile that is missing, too large, damaged, or made
 * for another colour space than the image's is ignored: the image converts as if untagged (as libvips and
 * browsers do), never refused. CMYK JPEGs without a profile go through libvips's own press profile.
 */

/**
 * Largest profile applied, in bytes. Matrix profiles (Display P3, Adobe RGB, ProPhoto, grey) are 0.5–25 KB;
 * press CMYK profiles with their lookup tables 0.5–3 MB. Larger ones are ignored: making the transform takes
 * ~6.5 times the profile's size in the codec's memory (`profileWorkBytes`), and at this size a 2560 × 2560
 * conversion still peaks inside the codec's share (measured: 44.4 MB of 48 with a 3.2 MB profile).
 */
export const maxProfileBytes = 3_500_000;

/**
 * Allowance for making a transform from a profile of `size` bytes, in the codec's memory, freed again once
 * the transform exists (but for the transform): the profile's bytes, lcms's own copy, its parsed tables and
 * the copies it makes of them while joining and optimising the pipeline, and the transform's precalculated
 * table. Measured: +0.26 MB for Display P3 (480 B), +20.6 MB for a 3.2 MB lookup-table profile
 * (colour.test.ts checks it). It guards RGB profiles of WebP inputs, made beside the file. A CMYK transform
 * (JPEG only: libvips's chain with libvips's black point, colour.c, resampled by lcms into a 17⁴ table, 0.5 MB
 * kept) is made before the decoder allocates anything, so its work never sits beside the target.
 */
export function profileWorkBytes(size: number): number {
  return 2_000_000 + Math.ceil(6.5 * size);
}

/** Size of the built-in CMYK profile (libvips's, in the codec's static data, build.sh): its transform's work. */
export const cmykFallbackProfileBytes = 961_644;

/** The transform for a decoded image: RGB and grey are applied in place to the target after resizing. */
export type ColourTransform = { handle: number; kind: ColourKind };

/**
 * Joins a JPEG's APP2 `ICC_PROFILE` segments, in sequence order, into a newly malloc'd block in the codec's
 * memory. Null (profile ignored) when there are none, when the numbering is inconsistent (a segment missing
 * or repeated, counts that disagree), when the joined size is above `maxProfileBytes`, or without memory.
 */
function joinJpegProfile(codec: WebpCodec, segments: IccSegment[]): { pointer: number; size: number } | null {
  const first = segments[0];
  if (!first) return null;
  const count = first.count;
  if (count === 0 || segments.length !== count) return null;
  const ordered: (Uint8Array | undefined)[] = new Array(count);
  let size = 0;
  for (const segment of segments) {
    const index = segment.sequence - 1;
    if (segment.count !== count || index < 0 || index >= count || ordered[index]) return null;
    ordered[index] = segment.data;
    size += segment.data.length;
  }
  if (size > maxProfileBytes) return null;
  // Segments may be views of the codec's own memory (a baseline JPEG is read there), which the malloc may
  // grow, detaching them: they are found again by their place.
  const memory = codec.heap(0, 0).buffer;
  const places = (ordered as Uint8Array[]).map((data) => ({ data, at: data.byteOffset, length: data.length }));
  const pointer = codec.malloc(size);
  if (pointer === 0) return null;
  const target = codec.heap(pointer, size);
  let at = 0;
  for (const place of places) {
    target.set(place.data.buffer === memory ? codec.heap(place.at, place.length) : place.data, at);
    at += place.length;
  }
  return { pointer, size };
}

/**
 * A transform from the profile at `profile` (in the codec's memory; null for the built-in CMYK profile) to
 * sRGB for pixels of `kind`; the profile's bytes are freed here unless `keep` (a WebP file's own chunk).
 * Null when lcms refuses it.
 */
export function colourTransform(
  codec: WebpCodec,
  profile: { pointer: number; size: number } | null,
  kind: ColourKind,
  keep = false,
): ColourTransform | null {
  try {
    const handle = codec.createColourTransform(profile?.pointer ?? 0, profile?.size ?? 0, kind);
    return handle === 0 ? null : { handle, kind };
  } finally {
    if (profile && !keep) codec.free(profile.pointer);
  }
}

/** The transform for a JPEG's profile: grey, RGB or (with the built-in profile when it has none) CMYK. */
export function jpegColourTransform(
  codec: WebpCodec,
  segments: IccSegment[],
  components: number,
  adobe: boolean,
): ColourTransform | null {
  const profile = joinJpegProfile(codec, segments);
  if (components !== 4) {
    return profile ? colourTransform(codec, profile, components === 1 ? colourKind.grey : colourKind.rgb) : null;
  }
  const kind = adobe ? colourKind.cmykInverted : colourKind.cmyk;
  // A profile lcms refuses (or one for another colour space) leaves the built-in one, as libvips does.
  return (profile && colourTransform(codec, profile, kind)) ?? colourTransform(codec, null, kind);
}

/** Applies a grey or RGB transform to the `width × height` RGBA at `pointer`, in place, and frees it. */
export function applyToTarget(codec: WebpCodec, transform: ColourTransform, pointer: number, pixels: number): void {
  try {
    codec.applyColour(transform.handle, pointer, pointer, pixels);
  } finally {
    codec.freeColour(transform.handle);
  }
}
