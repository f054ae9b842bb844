import { ApiError, validationError } from "../../http/errors";
import { keyTakenOver } from "../../http/idempotency";
import { log } from "../../lib/log";
import { stagedKey } from "../../storage/keys";
import type { CoordinatorStub } from "../coordinator/client";
import type { KeptChange } from "../coordinator/key-rows";
import type { NewUpload } from "../coordinator/upload-rows";
import { uploadMessages } from "../messages";
import { maxParts, planParts } from "../parts-state";
import { isHeifMediaType, isSvgMediaType } from "../sniff";

/** How a reservation's bytes are cut: null for one PUT. */
export type PartPlan = { partSize: number; partCount: number } | null;

/** Refuses a declared type no upload can be (HEIC, HEIF, AVIF: 422) or that this one cannot be (SVG as `image`). */
export function refuseDeclaredType(contentType: string, type: "image" | "file"): void {
  if (isHeifMediaType(contentType)) {
    throw new ApiError(422, uploadMessages.heif, { content_type: [uploadMessages.heif] });
  }
  if (type === "image" && isSvgMediaType(contentType)) {
    throw validationError({ content_type: [uploadMessages.svgAsImage] });
  }
}

/**
 * How the upload's `size` bytes go: within the store's `limit`, in one PUT, or in parts when asked for or
 * above the single-PUT ceiling `single()` (`SINGLE_PUT_LIMIT_BYTES`, also the largest part).
 */
export function planUpload(size: number, limit: number, single: () => number, multipart: boolean): PartPlan {
  if (size > limit) throw validationError({ size: [uploadMessages.size(limit)] });
  const ceiling = single();
  if (!multipart && size <= ceiling) return null;
  const plan = planParts(size, ceiling);
  if (plan === null) throw validationError({ size: [uploadMessages.tooManyParts(maxParts, ceiling)] });
  return plan;
}

/**
 * When the reservation lapses: `ttlMs` from now, for a multipart upload never after `maxMs` from now
 * (each part stored extends it up to there). Answers that cap too.
 */
export function reservationEnd(plan: PartPlan, now: number, ttlMs: number, maxMs: () => number) {
  const maxExpiresAt = plan ? now + maxMs() : null;
  return { expiresAt: Math.min(now + ttlMs, maxExpiresAt ?? Number.POSITIVE_INFINITY), maxExpiresAt };
}

/**
 * Records the reservation with the store's coordinator. A multipart upload's parts stream into one R2
 * multipart upload at the staged key, begun here (503 when storage refuses) and aborted again when the
 * coordinator does not take the reservation. `kept`: the request's `Idempotency-Key` record, written by the
 * coordinator with the reservation; a key another request took over meanwhile reserves nothing (409).
 */
export async function reserveUpload(
  bucket: R2Bucket,
  coordinator: CoordinatorStub,
  storeId: string,
  upload: Omit<NewUpload, "multipart"> & { plan: PartPlan; maxExpiresAt: number | null },
  requestId: string,
  kept: KeptChange | null = null,
): Promise<void> {
  const { plan, maxExpiresAt, ...reservation } = upload;
  const r2Upload = plan
    ? await bucket
        .createMultipartUpload(stagedKey(storeId, upload.id), { httpMetadata: { contentType: upload.contentType } })
        .catch((error) => {
          log.error("upload: creating the R2 multipart upload failed", { request_id: requestId, error: String(error) });
          throw new ApiError(503, uploadMessages.reserveFailed);
        })
    : null;
  const multipart =
    plan && r2Upload && maxExpiresAt !== null ? { ...plan, r2UploadId: r2Upload.uploadId, maxExpiresAt } : null;
  try {
    if (!(await coordinator.reserve(storeId, { ...reservation, multipart }, kept ?? undefined))) throw keyTakenOver();
  } catch (error) {
    await r2Upload?.abort().catch(() => {});
    throw error;
  }
}
