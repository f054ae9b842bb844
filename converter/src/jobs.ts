import type {
  AvifJob,
  AvifOutcome,
  ConvertJob,
  ConvertOutcome,
  Refusal,
  SourceBytes,
  WidthJob,
  WidthOutcome,
} from "../../src/converter/contract";
import { toHex } from "../../src/lib/encoding";
import {
  convertToWebp,
  encodeHostedAvif,
  type ImageInput,
  ImageTooLargeError,
  resizeHostedWebp,
  UnconvertibleImageError,
} from "./convert";
import { scanGifInput } from "./convert/raster-inputs";
import { readWebpHeader } from "./convert/webp-header";

/**
 * The converter's work: what the API's binding asks (src/converter/contract.ts). Each job reads its source
 * through the API's `open` callback, streamed into the pipeline, so no image crosses the binding whole.
 */

/** The source as the pipeline's input: every `open` is a new read from the first byte. */
function sourceInput(source: SourceBytes): Exclude<ImageInput, Uint8Array> {
  return { size: source.size, open: () => source.open() };
}

/** The refusal a client is told for an error of the pipeline; null for any other error (a failure of ours). */
function refusalOf(error: unknown): Refusal | null {
  if (error instanceof ImageTooLargeError) return { refused: "too-large", detail: error.message };
  if (error instanceof UnconvertibleImageError) return { refused: "unconvertible", detail: error.message };
  return null;
}

/** The encoder's pieces, in order, as one byte stream (the binding carries byte streams without a copy here). */
function streamOf(pieces: Uint8Array[]): ReadableStream<Uint8Array> {
  let next = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      const piece = pieces[next++];
      if (piece) controller.enqueue(piece);
      else controller.close();
    },
  });
}

/**
 * Converts a still image to WebP. A GIF's blocks are walked first (without decoding): more than one frame is an
 * animation, which is hosted unchanged, not converted.
 */
export async function convertStill(job: ConvertJob): Promise<ConvertOutcome> {
  const input = sourceInput(job.source);
  try {
    // A GIF that cannot be walked is converted all the same: the conversion reports why it cannot be read.
    const gifScan = job.format === "gif" ? await scanGifInput(input).catch(() => undefined) : undefined;
    if (gifScan && "scan" in gifScan && gifScan.scan.frames > 1) return { animated: true };
    const { width, height, size, chunks, placeholder } = await convertToWebp(input, job.format, {
      maxEdge: job.maxEdge,
      gifScan,
    });
    if (!placeholder) throw new Error("a conversion made no placeholder");
    const { placeholder: hash, dominantColor } = placeholder;
    return { converted: { width, height, size, body: streamOf(chunks), placeholder: hash, dominantColor } };
  } catch (error) {
    const refusal = refusalOf(error);
    if (refusal) return refusal;
    throw error;
  }
}

/**
 * Re-encodes a hosted WebP at the job's size (a `?width=` variant) and answers its bytes with the entity tag
 * R2 gives a single put of them (their MD5), so the API can answer before it stores them.
 */
export async function makeWidth(job: WidthJob): Promise<WidthOutcome> {
  return refusedOr(async () => {
    const { bytes } = await resizeHostedWebp(sourceInput(job.source), { width: job.width, height: job.height });
    return { bytes, etag: await r2Etag(bytes) };
  });
}

/**
 * Runs a job, answering the pipeline's refusal as an outcome as `convertStill` does: thrown out of an RPC
 * method, even one the API catches, the runtime reports it as an uncaught exception of the converter.
 */
async function refusedOr<T>(job: () => Promise<T>): Promise<T | Refusal> {
  try {
    return await job();
  } catch (error) {
    const refusal = refusalOf(error);
    if (refusal) return refusal;
    throw error;
  }
}

/** The entity tag R2 gives a single put of `bytes`: their MD5. */
async function r2Etag(bytes: Uint8Array): Promise<string> {
  return `"${toHex(new Uint8Array(await crypto.subtle.digest("MD5", bytes)))}"`;
}

/**
 * Encodes a hosted WebP as an AVIF of exactly the job's size (`?format=avif`; past the encoder's pixel budget a
 * grid of tiles, convert/avif.ts), and answers its bytes and entity tag as a width does.
 */
export async function makeAvif(job: AvifJob): Promise<AvifOutcome> {
  return refusedOr(async () => {
    const size = { width: job.width, height: job.height };
    const { bytes, width, height } = await encodeHostedAvif(sourceInput(job.source), size);
    return { bytes, etag: await r2Etag(bytes), width, height };
  });
}

/** A WebP's canvas size and animation flag from its first bytes; null when they are not a readable WebP. */
export function describeWebp(head: Uint8Array): { width: number; height: number; animated: boolean } | null {
  try {
    const { width, height, animated } = readWebpHeader(head);
    return { width, height, animated };
  } catch {
    return null; // not a WebP the pipeline could read: served as it is
  }
}
