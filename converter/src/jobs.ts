import type { ConvertJob, ConvertOutcome, Refusal, WidthJob, WidthOutcome } from "../../src/converter/contract";
import { toHex } from "../../src/lib/encoding";
import {
  convertToWebp,
  type ImageInput,
  ImageTooLargeError,
  resizeHostedWebp,
  UnconvertibleImageError,
} from "./convert";
import { scanGifInput } from "./convert/raster-inputs";
import { readWebpHeader } from "./convert/webp-header";

/**
 * The converter's work over R2: what the API's binding asks (src/converter/contract.ts), each job reading its
 * source from the bucket itself and streaming it into the pipeline, so no image crosses the binding whole.
 */

/** The object as the pipeline's input: its open body first, then (should a decoder read again) a new GET. */
function objectInput(bucket: R2Bucket, object: R2ObjectBody): Exclude<ImageInput, Uint8Array> {
  return {
    size: object.size,
    open: async () => {
      if (!object.bodyUsed) return object.body;
      const again = await bucket.get(object.key);
      if (!again) throw new Error(`the object at ${object.key} went away while it was read`);
      return again.body;
    },
  };
}

/** The refusal a client is told for an error of the pipeline; null for any other error (a failure of ours). */
function refusalOf(error: unknown): Refusal | null {
  if (error instanceof ImageTooLargeError) return { refused: "too-large", detail: error.message };
  if (error instanceof UnconvertibleImageError) return { refused: "unconvertible", detail: error.message };
  return null;
}

/** Writes `pieces` to R2 as one object of `size` bytes, in order, without joining them into one more copy. */
async function putPieces(bucket: R2Bucket, key: string, pieces: Uint8Array[], size: number, options: R2PutOptions) {
  const { readable, writable } = new FixedLengthStream(size);
  const writing = (async () => {
    const writer = writable.getWriter();
    for (const piece of pieces) await writer.write(piece);
    await writer.close();
  })();
  await Promise.all([bucket.put(key, readable, options), writing]);
}

/**
 * Converts a staged still image to WebP at `job.target`. A GIF's blocks are walked first (without decoding):
 * more than one frame is an animation, which is hosted unchanged, not converted.
 */
export async function convertStaged(bucket: R2Bucket, job: ConvertJob): Promise<ConvertOutcome> {
  const object = await bucket.get(job.source);
  if (!object) return { missing: true };
  const input = objectInput(bucket, object);
  try {
    // A GIF that cannot be walked is converted all the same: the conversion reports why it cannot be read.
    const gifScan = job.format === "gif" ? await scanGifInput(input).catch(() => undefined) : undefined;
    if (gifScan && "scan" in gifScan && gifScan.scan.frames > 1) return { animated: true };
    const converted = await convertToWebp(input, job.format, { maxEdge: job.maxEdge, gifScan });
    const { width, height, size } = converted;
    // The size in the object's metadata tells the media route, from its `head`, that narrower widths exist.
    await putPieces(bucket, job.target, converted.chunks, size, {
      httpMetadata: { contentType: "image/webp" },
      customMetadata: { width: String(width), height: String(height) },
    });
    return { converted: { width, height, size } };
  } catch (error) {
    const refusal = refusalOf(error);
    if (refusal) return refusal;
    throw error;
  } finally {
    if (!object.bodyUsed) await object.body.cancel().catch(() => {});
  }
}

/**
 * Re-encodes a hosted WebP at the job's size (a `?width=` variant) and answers its bytes with the entity tag
 * R2 gives a single put of them (their MD5), so the API can answer before it stores them.
 */
export async function makeWidth(bucket: R2Bucket, job: WidthJob): Promise<WidthOutcome> {
  const object = await bucket.get(job.source);
  if (!object) return { missing: true };
  try {
    const { bytes } = await resizeHostedWebp(objectInput(bucket, object), { width: job.width, height: job.height });
    const digest = new Uint8Array(await crypto.subtle.digest("MD5", bytes));
    return { bytes, etag: `"${toHex(digest)}"` };
  } finally {
    if (!object.bodyUsed) await object.body.cancel().catch(() => {});
  }
}

/** A hosted WebP's canvas size and animation flag, from its first bytes; null when missing or unreadable. */
export async function describeWebp(
  bucket: R2Bucket,
  key: string,
): Promise<{ width: number; height: number; animated: boolean } | null> {
  const start = await bucket.get(key, { range: { offset: 0, length: 64 } });
  if (!start) return null;
  try {
    const { width, height, animated } = readWebpHeader(new Uint8Array(await start.arrayBuffer()));
    return { width, height, animated };
  } catch {
    return null; // not a WebP the pipeline could read: served as it is
  }
}
