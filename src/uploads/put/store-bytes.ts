import { stagedKey } from "../../storage/keys";
import { type Streamed, streamToR2 } from "../byte-put";
import type { CoordinatorStub } from "../coordinator/client";
import type { Outcome } from "../coordinator/store-coordinator";
import type { UploadRecord } from "../upload-state";

/**
 * Streams the body into the upload's staged key and records the outcome with the coordinator: stored, with
 * the coordinator's outcome, or why not. A failed body or write leaves no object behind and the upload
 * `reserved` again.
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
  const streamed = await streamToR2(
    body,
    upload.size,
    (stream) => bucket.put(key, stream, { httpMetadata: { contentType: upload.contentType } }),
    { message: "upload: storing bytes failed", fields: { request_id: requestId, upload_id: upload.id } },
  );
  if (!streamed.stored) {
    await bucket.delete(key).catch(() => {});
    await coordinator.finishPut(upload.id, false);
    return streamed;
  }
  const finished = await coordinator.finishPut(upload.id, true);
  // The reservation lapsed while the bytes streamed in: keep nothing of it.
  if (!finished.ok) await bucket.delete(key);
  return { stored: true, value: finished };
}
