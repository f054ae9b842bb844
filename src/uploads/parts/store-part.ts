import { stagedKey } from "../../storage/keys";
import { type Streamed, streamToR2 } from "../byte-put";
import { whileHoldingLease } from "../complete/lease";
import type { CoordinatorStub } from "../coordinator/client";
import type { Outcome } from "../coordinator/store-coordinator";
import type { PartTicket } from "../parts-state";

/** A stored part: R2's ETag, and the coordinator's outcome (the reservation's new end). */
type StoredPartResult = { etag: string; finished: Outcome<{ expiresAt: number }> };

/**
 * Streams one part's body into the upload's R2 multipart upload and records the outcome with the
 * coordinator. A failed body or write stores nothing (R2 keeps an earlier copy of the part, if any) and
 * frees the part for another PUT. The part's lease is renewed while the body streams (complete/lease.ts).
 */
export async function storePart(
  bucket: R2Bucket,
  coordinator: CoordinatorStub,
  at: { storeId: string; uploadId: string; ttlMs: number; requestId: string },
  ticket: PartTicket,
  body: ReadableStream,
): Promise<Streamed<StoredPartResult>> {
  const upload = bucket.resumeMultipartUpload(stagedKey(at.storeId, at.uploadId), ticket.r2UploadId);
  const fields = { request_id: at.requestId, upload_id: at.uploadId, part_number: ticket.partNumber };
  const renew = async () => (await coordinator.renewPart(at.uploadId, ticket.partNumber, ticket.attempt)).ok;
  const streamed = await whileHoldingLease(
    renew,
    () =>
      streamToR2(body, ticket.size, (stream) => upload.uploadPart(ticket.partNumber, stream), {
        message: "upload: storing a part failed",
        fields,
      }),
    fields,
  );
  const stored = streamed.stored ? { size: ticket.size, etag: streamed.value.etag } : null;
  // A reservation that lapsed meanwhile answers 404; the part stays in R2's upload until the alarm aborts it.
  const finished = await coordinator.finishPart(
    at.uploadId,
    ticket.partNumber,
    { attempt: ticket.attempt, stored },
    at.ttlMs,
  );
  if (!streamed.stored) return streamed;
  return { stored: true, value: { etag: streamed.value.etag, finished } };
}
