/**
 * What the API Worker asks of the converter Worker (converter/src/index.ts) over the `CONVERTER` service
 * binding, and what it answers. Both Workers read this file; it holds types and the one limit both check, no
 * code that runs, so the API's bundle carries nothing of the converter.
 *
 * Bytes travel through the binding as streams, never whole: the converter reads a source by calling back into
 * the API (`open`, an RPC callback that GETs the object from R2 each time it is called) and answers what it
 * made as a stream the API pipes into R2. The converter binds no storage of its own, so the two Workers never
 * share a bucket: two `wrangler dev` processes cannot share one local R2 store under concurrent writes, and
 * one path serves production and local development alike.
 */

/** A still image's format, as sniffing found it from the bytes. */
export type StillFormat = "jpeg" | "png" | "webp" | "gif" | "bmp";

/** Largest `MAX_IMAGE_EDGE` the converter's memory plan holds (docs/conversion.md). */
export const maxSupportedEdge = 2560;

/** An object's bytes as the converter reads them: its size, and its body from the first byte on each call. */
export type SourceBytes = {
  size: number;
  open(): Promise<ReadableStream<Uint8Array>>;
};

/** Converts a still image (a staged upload) to WebP. */
export type ConvertJob = {
  source: SourceBytes;
  format: StillFormat;
  /** Long edge of the WebP (`MAX_IMAGE_EDGE`): never upscaled. */
  maxEdge: number;
};

/** Why the bytes cannot be converted: the message's detail, in plain words, and which kind of refusal. */
export type Refusal = { refused: "too-large" | "unconvertible"; detail: string };

/**
 * A WebP made by the converter: its size in pixels, its length, its bytes as a stream of that length, and what
 * a page shows before it arrives, read from the same decoded pixels: `placeholder`, the image's ThumbHash
 * (base64, alpha kept), and `dominantColor`, the alpha-weighted mean of its sRGB values (lowercase `#rrggbb`).
 */
export type ConvertedWebp = {
  width: number;
  height: number;
  size: number;
  body: ReadableStream<Uint8Array>;
  placeholder: string;
  dominantColor: string;
};

export type ConvertOutcome =
  | { converted: ConvertedWebp }
  /** A GIF of more than one frame: hosted unchanged, as an animation, not converted. */
  | { animated: true }
  | Refusal;

/** Re-encodes a converted image exactly `width × height` (a `?width=` variant). */
export type WidthJob = { source: SourceBytes; width: number; height: number };

/** A variant's bytes (small: a width), and R2's entity tag for them as one put would give it (their MD5). */
type WidthVariant = { bytes: Uint8Array; etag: string };

/**
 * A width made, or refused: the hosted file cannot be read (damaged since it was hosted). A refusal is an
 * answer, not an exception: the runtime reports an exception an RPC method throws as uncaught in the converter.
 */
export type WidthOutcome = WidthVariant | Refusal;

/**
 * Encodes a converted image as an AVIF `width × height` (at most the hosted image's size): a `?format=avif`
 * variant. The converter scales a size past its encoder's pixel budget down to fit (docs/conversion.md).
 */
export type AvifJob = { source: SourceBytes; width: number; height: number };

/** An AVIF's bytes, their entity tag (as for a width), and the size it was encoded at. */
type AvifVariant = WidthVariant & { width: number; height: number };

/** An AVIF made, or refused as a width is. */
export type AvifOutcome = AvifVariant | Refusal;

/** The converter's RPC methods: what the API's binding may call. */
export interface ConverterService {
  convert(job: ConvertJob): Promise<ConvertOutcome>;
  makeWidth(job: WidthJob): Promise<WidthOutcome>;
  makeAvif(job: AvifJob): Promise<AvifOutcome>;
  /** A WebP's canvas size from its first bytes (images hosted before their size was kept in metadata). */
  describe(head: Uint8Array): Promise<{ width: number; height: number; animated: boolean } | null>;
}
