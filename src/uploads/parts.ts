import type { CoordinatorStub } from "./coordinator";
import { stagedKey } from "./keys";
import type { PartTicket, StoredPart } from "./parts-state";
import { isBodyFailure } from "./staging";
import type { Outcome } from "./store-coordinator";

/** Whether the part was stored (R2's ETag, the coordinator's outcome), or why not. */
export type PartResult =
  | { stored: true; etag: string; finished: Outcome<{ expiresAt: number }> }
  | { stored: false; cause: "body" | "storage" };

/**
 * Streams one part's body into the upload's R2 multipart upload and records the outcome with the
 * coordinator. The part's exact length is known, so the body goes to R2 without being held in memory;
 * a failed body or write stores nothing (R2 keeps an earlier copy of the part, if any) and frees the
 * part for another PUT.
 */
export async function storePart(
  env: Env,
  coordinator: CoordinatorStub,
  storeId: string,
  uploadId: string,
  ticket: PartTicket,
  body: ReadableStream,
  ttlMs: number,
  requestId: string,
): Promise<PartResult> {
  const upload = env.BUCKET.resumeMultipartUpload(stagedKey(storeId, uploadId), ticket.r2UploadId);
  let etag: string;
  try {
    ({ etag } = await upload.uploadPart(ticket.partNumber, body.pipeThrough(new FixedLengthStream(ticket.size))));
  } catch (error) {
    const cause = isBodyFailure(error) ? "body" : "storage";
    if (cause === "storage") {
      console.error(
        JSON.stringify({
          level: "error",
          message: "upload: storing a part failed",
          request_id: requestId,
          upload_id: uploadId,
          part_number: ticket.partNumber,
          error: String(error),
        }),
      );
    }
    await coordinator.finishPart(uploadId, ticket.partNumber, { leaseUntil: ticket.leaseUntil, stored: null }, ttlMs);
    return { stored: false, cause };
  }
  // A reservation that lapsed meanwhile answers 404; the part stays in R2's upload until the alarm aborts it.
  const finished = await coordinator.finishPart(
    uploadId,
    ticket.partNumber,
    { leaseUntil: ticket.leaseUntil, stored: { size: ticket.size, etag } },
    ttlMs,
  );
  return { stored: true, etag, finished };
}

/**
 * Assembles a multipart upload's parts into its staged object. A complete that died after R2 assembled
 * them left the object behind and R2's upload finished: that object, if it has the upload's size, is
 * the assembly.
 */
export async function assembleParts(
  bucket: R2Bucket,
  storeId: string,
  uploadId: string,
  r2UploadId: string,
  size: number,
  parts: StoredPart[],
): Promise<void> {
  const key = stagedKey(storeId, uploadId);
  try {
    await bucket
      .resumeMultipartUpload(key, r2UploadId)
      .complete(parts.map((part) => ({ partNumber: part.partNumber, etag: part.etag })));
  } catch (error) {
    const staged = await bucket.head(key);
    if (staged?.size !== size) throw error;
  }
}
