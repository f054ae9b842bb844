import { stagedKey } from "../../storage/keys";
import { type Streamed, streamToR2 } from "../byte-put";
import { whileHoldingLease } from "../complete/lease";
import type { CoordinatorStub } from "../coordinator/client";
import type { Outcome } from "../coordinator/store-coordinator";
import type { UploadRecord } from "../upload-state";

/**
 * Streams the body into the upload's staged key and records the outcome with the coordinator: stored, with
 * the coordinator's outcome, or why not. A failed body or write leaves no object behind and the upload
 * `reserved` again. The PUT's lease is renewed while the body streams, however long a slow client takes
 * (complete/lease.ts); once a later PUT took the upload over, this one's finish is refused (409) and it
 * removes nothing: the object at the staged key is then the later PUT's.
 */
export async function storeBytes(
  bucket: R2Bucket,
  coordinator: CoordinatorStub,
  storeId: string,
  upload: UploadRecord,
  body: ReadableStream,
  requestId: string,
): Promise<Streamed<Outcome>> {
  const key = stagedKey(storeId, upload.id);
  const attempt = upload.putAttempt;
  const renew = async () => (await coordinator.renewPut(upload.id, attempt)).ok;
  const streamed = await whileHoldingLease(
    renew,
    () =>
      streamToR2(
        body,
        upload.size,
        (stream) => bucket.put(key, stream, { httpMetadata: { contentType: upload.contentType } }),
        { message: "upload: storing bytes failed", fields: { request_id: requestId, upload_id: upload.id } },
      ),
    { request_id: requestId, upload_id: upload.id },
  );
  if (!streamed.stored) {
    // Renewed first, so no later PUT can take the upload over between this check and the delete.
    const held = await coordinator.renewPut(upload.id, attempt);
    if (held.ok || held.refusal.status === 404) await bucket.delete(key).catch(() => {});
    await coordinator.finishPut(upload.id, attempt, false);
    return streamed;
  }
  const finished = await coordinator.finishPut(upload.id, attempt, true);
  // The reservation lapsed while the bytes streamed in (404): keep nothing of it.
  if (!finished.ok && finished.refusal.status === 404) await bucket.delete(key);
  return { stored: true, value: finished };
}
