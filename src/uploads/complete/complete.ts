import { ApiError } from "../../http/errors";
import { log } from "../../lib/log";
import { stagedKey } from "../../storage/keys";
import { type CoordinatorStub, unwrap } from "../coordinator/client";
import type { CompleteTicket } from "../coordinator/store-coordinator";
import { uploadMessages } from "../messages";
import type { CompleteOutcome, HostedFile } from "../upload-state";
import { whileHoldingLease } from "./lease";

/** The steps of a complete between its begin and its finish, each over its own storage. */
type CompleteSteps = {
  /** Refuses (422) an upload whose size is outside the store's limit as it is now (D1). */
  checkLimit(): Promise<void>;
  /** Assembles a multipart upload's parts into its staged object (R2 upload `r2UploadId`). */
  assemble(r2UploadId: string): Promise<void>;
  /** Hosts the staged bytes (R2, the conversion); `beforeWrite` records the hosted key before anything is written there. */
  host(beforeWrite: (hostedKey: string) => Promise<void>): Promise<CompleteOutcome>;
};

/**
 * Runs a complete the coordinator has begun and records its outcome there: 422 when the size is outside
 * the store's limit or the bytes cannot be hosted; a multipart upload's parts are assembled first. Any
 * other failure hands the upload back as `stored` (or, parts not assembled, `reserved` with its parts).
 * The complete's lease is renewed while it runs (lease.ts), and every call presents its attempt: once a
 * later complete took the upload over, this one's calls are refused and change nothing.
 */
export async function completeUpload(
  coordinator: CoordinatorStub,
  upload: CompleteTicket,
  steps: CompleteSteps,
): Promise<HostedFile> {
  const attempt = upload.completeAttempt;
  const renew = async () => (await coordinator.renewComplete(upload.id, attempt)).ok;
  return whileHoldingLease(
    renew,
    async () => {
      const r2UploadId = upload.multipart?.r2UploadId ?? null;
      let assembled = r2UploadId === null;
      let outcome: CompleteOutcome;
      try {
        await steps.checkLimit();
        if (r2UploadId !== null) {
          await steps.assemble(r2UploadId);
          assembled = true;
        }
        outcome = await steps.host(async (hostedKey) => {
          unwrap(await coordinator.recordHostedKey(upload.id, attempt, hostedKey), upload.id);
        });
      } catch (error) {
        await coordinator.abandonComplete(upload.id, attempt, assembled);
        throw error;
      }
      const finished = unwrap(await coordinator.finishComplete(upload.id, attempt, outcome), upload.id);
      if ("unhostable" in outcome) throw new ApiError(422, outcome.unhostable);
      return finished.result as HostedFile;
    },
    { upload_id: upload.id },
  );
}

/**
 * The store's limit may have been lowered since prepare. Checked at complete's 422 step, after the
 * 404/410/409 refusals, and not remembered as the bytes' failure: once the limit is raised again, a retry
 * hosts them.
 */
export function checkWithinLimit(size: number, limit: number): void {
  if (size > limit) throw new ApiError(422, uploadMessages.sizeOverLimit(size, limit));
}

/**
 * Assembles a multipart upload's stored parts (R2 upload `r2UploadId`) into its staged object; 503 when
 * storage fails. A complete that died after R2 assembled them left the object behind and R2's upload
 * finished: that object, if it has the upload's size, is the assembly.
 */
export async function assembleParts(
  bucket: R2Bucket,
  storeId: string,
  upload: Pick<CompleteTicket, "id" | "size" | "parts">,
  r2UploadId: string,
  requestId: string,
): Promise<void> {
  const key = stagedKey(storeId, upload.id);
  try {
    await bucket
      .resumeMultipartUpload(key, r2UploadId)
      .complete(upload.parts.map((part) => ({ partNumber: part.partNumber, etag: part.etag })));
  } catch (error) {
    let failure = error;
    try {
      if ((await bucket.head(key))?.size === upload.size) return;
    } catch (headFailure) {
      failure = headFailure;
    }
    log.error("upload: assembling the parts failed", {
      request_id: requestId,
      upload_id: upload.id,
      error: String(failure),
    });
    throw new ApiError(503, uploadMessages.assemblyFailed);
  }
}
