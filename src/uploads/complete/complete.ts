import type { ConverterService } from "../../converter/contract";
import type { Database } from "../../db/client";
import { ApiError } from "../../http/errors";
import type { ClaimVerdict, KeptAnswer, KeyClaim, KeyClaimRequest } from "../../lib/idempotency";
import { log } from "../../lib/log";
import { stagedKey } from "../../storage/keys";
import { type CoordinatorStub, unwrap } from "../coordinator/client";
import type { CompleteTicket } from "../coordinator/store-coordinator";
import { uploadMessages } from "../messages";
import { storeUploadLimit } from "../store-limit";
import type { CompleteOutcome, HostedFile } from "../upload-state";
import { hostUpload } from "./hosting";
import { whileHoldingLease } from "./lease";

/**
 * What a complete works with, each passed in: the store's coordinator, the bucket, the database (the store's
 * upload limit), the converter Worker's binding (undefined when the deployment has none: a still image then
 * answers 503), where hosted files are found, and the settings it reads at the step that needs them, so a
 * malformed one fails only the completes that reach it.
 */
type CompleteDeps = {
  coordinator: CoordinatorStub;
  bucket: R2Bucket;
  db: Database;
  converter: ConverterService | undefined;
  requestId: string;
  /** Base of public media URLs (no trailing slash), and the origin of private-file locators. */
  urls: { mediaBaseUrl: string; origin: string };
  settings: { defaultUploadLimit(): number; maxImageEdge(): number };
  /**
   * The request's `Idempotency-Key`, if it sent one: the claim, made in the begin (`settled` hands the begin's
   * verdict back, and throws when the key is not this request's), and the answer each outcome gives, which the
   * coordinator keeps in the transaction that records the outcome.
   */
  key?: {
    request: KeyClaimRequest;
    settled(verdict: ClaimVerdict): KeyClaim;
    answerOf(outcome: CompleteOutcome): KeptAnswer;
  } | null;
};

/**
 * A complete, whole: the coordinator's begin (404/410/409), the store's limit (422; read from D1 beside the
 * begin, one round trip of latency, not two), a multipart upload's assembly, the hosting (hosting.ts: still
 * images converted by the converter Worker, everything else hosted in place), and the outcome recorded with
 * the coordinator: 422 when the bytes cannot be hosted. Any other failure hands the upload back as `stored`
 * (or, parts not assembled, `reserved` with its parts). The complete's lease is renewed while it runs
 * (lease.ts), and every call presents its attempt: once a later complete took the upload over, this one's
 * calls are refused and change nothing.
 */
export async function completeUpload(deps: CompleteDeps, storeId: string, uploadId: string): Promise<HostedFile> {
  const { coordinator } = deps;
  const limit = storeUploadLimit(deps.db, storeId, deps.settings.defaultUploadLimit);
  limit.catch(() => {}); // awaited at its step, unless begin refuses first
  const begun = await coordinator.beginComplete(uploadId, undefined, deps.key?.request);
  const ref = deps.key && begun.key ? deps.key.settled(begun.key).ref : null;
  const upload = unwrap(begun, uploadId);
  const attempt = upload.completeAttempt;
  const renew = async () => (await coordinator.renewComplete(upload.id, attempt)).ok;
  return whileHoldingLease(
    renew,
    async () => {
      const r2UploadId = upload.multipart?.r2UploadId ?? null;
      let assembled = r2UploadId === null;
      let outcome: CompleteOutcome;
      try {
        checkWithinLimit(upload.size, await limit);
        if (r2UploadId !== null) {
          await assembleParts(deps.bucket, storeId, upload, r2UploadId, deps.requestId);
          assembled = true;
        }
        outcome = await hostUpload({ ...deps, attempt }, storeId, upload);
      } catch (error) {
        await coordinator.abandonComplete(upload.id, attempt, assembled);
        throw error;
      }
      const kept = deps.key && ref ? { ref, answer: deps.key.answerOf(outcome) } : undefined;
      const finished = unwrap(
        await coordinator.finishComplete(upload.id, attempt, outcome, undefined, kept),
        upload.id,
      );
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
function checkWithinLimit(size: number, limit: number): void {
  if (size > limit) throw new ApiError(422, uploadMessages.sizeOverLimit(size, limit));
}

/**
 * Assembles a multipart upload's stored parts (R2 upload `r2UploadId`) into its staged object; 503 when
 * storage fails. A complete that died after R2 assembled them left the object behind and R2's upload
 * finished: that object, if it has the upload's size, is the assembly.
 */
async function assembleParts(
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
