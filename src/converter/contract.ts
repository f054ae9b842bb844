/**
 * What the API Worker asks of the converter Worker (converter/src/index.ts) over the `CONVERTER` service
 * binding, and what it answers. Both Workers read this file; it holds types and the one limit both check, no
 * code that runs, so the API's bundle carries nothing of the converter.
 */

/** A still image's format, as sniffing found it from the bytes. */
export type StillFormat = "jpeg" | "png" | "webp" | "gif" | "bmp";

/** Largest `MAX_IMAGE_EDGE` the converter's memory plan holds (docs/conversion.md). */
export const maxSupportedEdge = 2560;

/** Converts the still image at `source` (a staged upload) to a WebP written at `target`. */
export type ConvertJob = {
  /** R2 key of the staged bytes; left in place (the API deletes them once the complete is recorded). */
  source: string;
  /** R2 key of the WebP, written with its `width` and `height` in its custom metadata. */
  target: string;
  format: StillFormat;
  /** Long edge of the WebP (`MAX_IMAGE_EDGE`): never upscaled. */
  maxEdge: number;
};

/** Why the bytes cannot be converted: the message's detail, in plain words, and which kind of refusal. */
export type Refusal = { refused: "too-large" | "unconvertible"; detail: string };

export type ConvertOutcome =
  /** Written at the job's `target`. */
  | { converted: { width: number; height: number; size: number } }
  /** A GIF of more than one frame: hosted unchanged, as an animation, not converted. */
  | { animated: true }
  | Refusal
  /** No object at `source`. */
  | { missing: true };

/** Re-encodes the converted image at `source` exactly `width × height` (a `?width=` variant). */
export type WidthJob = { source: string; width: number; height: number };

export type WidthOutcome =
  /** The variant's bytes, and R2's entity tag for them as one put would give it (their MD5). */
  { bytes: Uint8Array; etag: string } | { missing: true };

/** The converter's RPC methods: what the API's binding may call. */
export interface ConverterService {
  convert(job: ConvertJob): Promise<ConvertOutcome>;
  makeWidth(job: WidthJob): Promise<WidthOutcome>;
  /** The size of a hosted WebP from its first bytes (images hosted before their size was kept in metadata). */
  describe(key: string): Promise<{ width: number; height: number; animated: boolean } | null>;
}
