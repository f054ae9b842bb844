/**
 * The parts of a multipart upload (docs/uploads.md), as pure functions beside the
 * upload's own state table (upload-state.ts): how an upload is cut, and what a part PUT may do. Each
 * part is stored or not; a part PUT in flight holds the part's lease, so two PUTs of one part never
 * race inside R2, where the one finishing last would win whatever the coordinator recorded.
 */
import { sameMediaType } from "../lib/media-type";
import {
  isGone,
  leaseHeld,
  leaseMs,
  type MultipartState,
  type PutAttempt,
  type Refusal,
  type RefusalReason,
  type UploadRecord,
} from "./upload-state";

/** R2's limits on a multipart upload: at most 10,000 parts, each but the last at least 5 MiB. */
export const maxParts = 10_000;
const MiB = 2 ** 20;

/**
 * The part size an upload gets unless it is too large for it: a dropped connection costs at most this
 * much, and a 1 GB upload is about 120 requests.
 */
export const preferredPartBytes = 8 * MiB;

/** A part as the coordinator keeps it. */
export type PartRecord = {
  partNumber: number;
  /** Set once the part was stored; a part sent again keeps the earlier one until the new one is stored. */
  size: number | null;
  /** R2's ETag of the stored part. */
  etag: string | null;
  /** While set and in the future, a PUT of this part is in flight. */
  leaseUntil: number | null;
  /**
   * The number of the part's latest PUT, counted up by every begin: the PUT that holds the lease presents it
   * to renew and finish, so one that was taken over while cut off records nothing.
   */
  attempt: number;
};

/** A part that is stored, as `GET /media-uploads/{id}` lists it and complete hands it to R2. */
export type StoredPart = { partNumber: number; size: number; etag: string };

/** The ETag of a part as HTTP carries it (a quoted entity tag), also in the part list, so a client compares them as they are. */
export function partEtag(etag: string): string {
  return `"${etag}"`;
}

/**
 * How `size` bytes are cut: parts of `preferredPartBytes`, or larger (whole MiB) when that would take
 * more than 10,000 parts, never larger than one request body may be (`bodyCeiling`, at least 5 MiB).
 * Null when the upload cannot be cut into 10,000 parts that small.
 */
export function planParts(size: number, bodyCeiling: number): { partSize: number; partCount: number } | null {
  const needed = Math.ceil(size / maxParts / MiB) * MiB;
  const partSize = Math.max(needed, Math.min(preferredPartBytes, bodyCeiling));
  if (partSize > bodyCeiling) return null;
  return { partSize, partCount: Math.max(1, Math.ceil(size / partSize)) };
}

/** The exact length of part `partNumber` (1-based) of an upload of `size` bytes. */
export function partLength(plan: Pick<MultipartState, "partSize" | "partCount">, size: number, partNumber: number) {
  return partNumber < plan.partCount ? plan.partSize : size - plan.partSize * (plan.partCount - 1);
}

/** How many parts of the upload are not stored yet. */
export function missingParts(plan: Pick<MultipartState, "partCount">, parts: readonly PartRecord[]): number {
  return plan.partCount - parts.filter((part) => part.etag !== null).length;
}

/** The part of a multipart upload whose PUT may go on, and the R2 upload it streams into. */
export type PartTicket = {
  partNumber: number;
  /** Exactly this many bytes. */
  size: number;
  r2UploadId: string;
  /** This PUT's attempt at the part; its renewals and its finish present it. */
  attempt: number;
};

type PartTransition = { next: PartRecord; ticket: PartTicket } | { refusal: Refusal };

const refusePart = (status: Refusal["status"], reason: RefusalReason, part?: number, detail?: string) => ({
  refusal: { status, reason, ...(detail === undefined ? {} : { detail }), ...(part === undefined ? {} : { part }) },
});

/**
 * A part PUT begins, in the byte PUT's order: 404 (unknown, wrong token, expired) → 409 (the upload is
 * single-PUT, assembled or completed; this part is in flight) → 422 (part number outside 1..part count,
 * Content-Type, Content-Length of this part).
 */
export function beginPart(
  record: UploadRecord | null,
  part: PartRecord | null,
  attempt: PutAttempt & { partNumber: number },
  now: number,
): PartTransition {
  if (isGone(record, now) || record.tokenHash !== attempt.tokenHash) return refusePart(404, "not_found");
  const plan = record.multipart;
  if (!plan) return refusePart(409, "not_multipart");
  if (record.state !== "reserved" || plan.r2UploadId === null) return refusePart(409, "already_stored");
  const { partNumber } = attempt;
  if (partNumber < 1 || partNumber > plan.partCount) {
    return refusePart(422, "part_number", partNumber, String(plan.partCount));
  }
  if (part && leaseHeld(part, now)) return refusePart(409, "part_being_stored", partNumber);
  if (attempt.contentType === undefined || !sameMediaType(attempt.contentType, record.contentType)) {
    return refusePart(422, "content_type_mismatch", partNumber, record.contentType);
  }
  const size = partLength(plan, record.size, partNumber);
  if (attempt.contentLength !== size) return refusePart(422, "part_length_mismatch", partNumber, String(size));
  const attemptNumber = (part?.attempt ?? 0) + 1;
  return {
    next: {
      partNumber,
      size: part?.size ?? null,
      etag: part?.etag ?? null,
      leaseUntil: now + leaseMs,
      attempt: attemptNumber,
    },
    ticket: { partNumber, size, r2UploadId: plan.r2UploadId, attempt: attemptNumber },
  };
}

/** Whether the upload still takes parts: known, not lapsed, multipart and not yet assembled. */
function takesParts(record: UploadRecord | null, now: number): record is UploadRecord {
  return !isGone(record, now) && record.multipart !== null && record.state === "reserved";
}

/**
 * Part PUT `attempt`, still streaming, holds its part for another `leaseMs`: refused (404) once the
 * reservation lapsed or the upload no longer takes parts, and (409) once a later PUT of the part took it over.
 */
export function renewPart(
  record: UploadRecord | null,
  part: PartRecord | null,
  attempt: number,
  now: number,
): { next: PartRecord } | { refusal: Refusal } {
  if (!takesParts(record, now)) return refusePart(404, "not_found");
  if (part === null || part.attempt !== attempt) return refusePart(409, "part_being_stored", part?.partNumber);
  return { next: { ...part, leaseUntil: now + leaseMs } };
}

type PartFinish = { next: PartRecord; upload: UploadRecord } | { refusal: Refusal };

/**
 * A part PUT ends: the part stored (its size and ETag recorded, and the reservation extended to now +
 * `ttlMs`, never beyond the upload's cap), or not (the part as it was before). A lapsed reservation is
 * gone, and a PUT whose part was taken over by a later PUT of the part (another attempt) records nothing.
 */
export function finishPart(
  record: UploadRecord | null,
  part: PartRecord | null,
  finish: { attempt: number; stored: { size: number; etag: string } | null },
  now: number,
  ttlMs: number,
): PartFinish {
  if (!takesParts(record, now) || !record.multipart) return refusePart(404, "not_found");
  if (part === null || part.attempt !== finish.attempt) {
    return refusePart(409, "part_being_stored", part?.partNumber);
  }
  if (!finish.stored) return { next: { ...part, leaseUntil: null }, upload: record };
  const expiresAt = Math.max(record.expiresAt, Math.min(now + ttlMs, record.multipart.maxExpiresAt));
  return {
    next: { ...part, size: finish.stored.size, etag: finish.stored.etag, leaseUntil: null },
    upload: { ...record, expiresAt },
  };
}
