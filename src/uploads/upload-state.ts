/**
 * The upload state machine of docs/api.md, "Upload states", as pure functions: each takes the
 * stored record (or its absence) and the moment, and answers the next record and what the caller
 * must say. The Durable Object applies them atomically; nothing here touches storage.
 *
 * Stored states: `reserved`, `storing` (a byte PUT is in flight), `stored`, `processing` (a complete
 * is in flight), `completed`. `expired` is not stored: a record past `expiresAt` that is not completed
 * answers like an unknown one, and the alarm deletes it and its bytes.
 *
 * A multipart upload stays `reserved` while its parts arrive (each part has its own small state, see
 * parts-state.ts); its complete assembles the parts into the staged object and goes on as a single upload.
 */

import { sameMediaType } from "../lib/media-type";

type UploadState = "reserved" | "storing" | "stored" | "processing" | "completed";
type PublicUploadState = "reserved" | "stored" | "completed";

/**
 * The hosted file result of a completed upload. A converted image also records its size (absent on every
 * other result, and on images converted before sizes were recorded); the answer adds `srcset` from it. It
 * records its placeholder (ThumbHash, base64) and dominant colour too, absent on images converted before
 * they were made.
 */
export type HostedFile = {
  name: string;
  file_url: string;
  type: "image" | "video" | "file";
  width?: number;
  height?: number;
  placeholder?: string;
  dominant_color?: string;
};

/** How a multipart upload is cut, and where its parts live in R2 until complete assembles them. */
export type MultipartState = {
  /** Bytes of every part but the last, which holds the rest. */
  partSize: number;
  partCount: number;
  /** R2's id of the multipart upload at the staged key; null once complete assembled the parts. */
  r2UploadId: string | null;
  /** Stored parts push `expiresAt` forward, never past this (`MULTIPART_MAX_HOURS` after prepare). */
  maxExpiresAt: number;
};

export type UploadRecord = {
  id: string;
  tokenHash: string;
  filename: string;
  contentType: string;
  size: number;
  type: "image" | "file";
  state: UploadState;
  expiresAt: number;
  /** When an in-flight PUT or complete is presumed dead and its lease may be taken over. */
  leaseUntil: number | null;
  /**
   * The number of the upload's latest byte PUT, counted up by every begin: the PUT that holds the lease
   * presents it to renew and finish, so one that was taken over while cut off changes nothing.
   */
  putAttempt: number;
  /**
   * The number of the upload's latest complete, counted up by every begin: the complete that holds the
   * lease presents it to renew, record its hosted key, finish or abandon, so one that was taken over while
   * cut off (and wakes up late) changes nothing.
   */
  completeAttempt: number;
  /** Set once completed. */
  result: HostedFile | null;
  /** The 422 a completed attempt gave for bytes that cannot be hosted; a later complete repeats it. */
  failure: string | null;
  /** Null for an upload whose bytes come in one PUT. */
  multipart: MultipartState | null;
};

/**
 * `detail`: the reserved value a mismatched header should have had, why the bytes cannot be hosted, or
 * how many parts are missing; `part`: the part number a part's refusal is about.
 */
export type Refusal = { status: 404 | 409 | 410 | 422; reason: RefusalReason; detail?: string; part?: number };
export type RefusalReason =
  | "not_found"
  | "already_stored"
  | "being_stored"
  | "not_stored"
  | "being_processed"
  | "completed"
  | "content_type_mismatch"
  | "content_length_mismatch"
  | "unhostable"
  | "multipart_only"
  | "not_multipart"
  | "part_number"
  | "part_being_stored"
  | "part_length_mismatch"
  | "parts_missing";

export type Transition = { next: UploadRecord } | { refusal: Refusal };

/**
 * How long an in-flight byte PUT, part PUT (parts-state.ts: its part) or complete holds the upload unless it
 * renews its lease (complete/lease.ts renews it every third of this while the work runs, however long).
 * Short, so that one whose process died (an isolate killed over memory or CPU, a runtime restart) blocks its
 * retry for seconds: 15 s is the longest a client waits to see its retry go through. Long enough that a
 * renewal may be late or lost twice, as when the isolate is busy or one call to the coordinator is slow,
 * before another request may take over; and if one still does, the attempt numbers keep the two from both
 * recording an outcome.
 */
export const leaseMs = 15_000;

/** A complete's lease: {@link leaseMs}, as for the byte and part PUTs. */
export const completeLeaseMs = leaseMs;

/** A refusal of the transition, for the caller to answer. */
export const refuse = (status: Refusal["status"], reason: RefusalReason, detail?: string): Transition => ({
  refusal: { status, reason, ...(detail ? { detail } : {}) },
});

/** Whether the record answers like an unknown upload: absent, or its reservation lapsed before completion. */
export function isGone(record: UploadRecord | null, now: number): record is null {
  return record === null || (record.state !== "completed" && now >= record.expiresAt);
}

/** Whether an in-flight PUT or complete (or part, for a part's lease) still holds its lease. */
export function leaseHeld(record: { leaseUntil: number | null }, now: number) {
  return record.leaseUntil !== null && now < record.leaseUntil;
}

export type PutAttempt = { tokenHash: string; contentType: string | undefined; contentLength: number | undefined };

/**
 * A byte PUT begins: 404 (unknown, wrong token, expired) → 409 (stored, a PUT in flight, or the upload
 * takes parts) → 422 (headers).
 */
export function beginPut(record: UploadRecord | null, attempt: PutAttempt, now: number): Transition {
  if (isGone(record, now) || record.tokenHash !== attempt.tokenHash) return refuse(404, "not_found");
  if (record.multipart) return refuse(409, record.state === "reserved" ? "multipart_only" : "already_stored");
  if (record.state === "storing" && leaseHeld(record, now)) return refuse(409, "being_stored");
  if (record.state === "stored" || record.state === "processing" || record.state === "completed") {
    return refuse(409, "already_stored");
  }
  if (attempt.contentType === undefined || !sameMediaType(attempt.contentType, record.contentType)) {
    return refuse(422, "content_type_mismatch", record.contentType);
  }
  if (attempt.contentLength !== record.size) return refuse(422, "content_length_mismatch", String(record.size));
  return { next: { ...record, state: "storing", leaseUntil: now + leaseMs, putAttempt: record.putAttempt + 1 } };
}

/** Whether byte PUT `attempt` may still act on the upload: not lapsed, `storing`, and no later PUT began. */
function holdsPut(record: UploadRecord | null, attempt: number, now: number): record is UploadRecord {
  return !isGone(record, now) && record.state === "storing" && record.putAttempt === attempt;
}

/**
 * Why byte PUT `attempt` may no longer act on the upload: a later PUT took it over (409: being stored, or
 * already stored once that one stored it), or the reservation lapsed or the PUT already ended (404).
 */
function refusePutAttempt(record: UploadRecord | null, attempt: number, now: number): Transition {
  if (!isGone(record, now) && record.putAttempt !== attempt) {
    return refuse(409, record.state === "storing" || record.state === "reserved" ? "being_stored" : "already_stored");
  }
  return refuse(404, "not_found");
}

/** Byte PUT `attempt`, still streaming, holds the upload for another `leaseMs`; refused like its finish. */
export function renewPut(record: UploadRecord | null, attempt: number, now: number): Transition {
  if (!holdsPut(record, attempt, now)) return refusePutAttempt(record, attempt, now);
  return { next: { ...record, leaseUntil: now + leaseMs } };
}

/**
 * Byte PUT `attempt` ends: the bytes are stored, or the upload is `reserved` again; a lapsed reservation is
 * gone (404). One that was taken over by a later PUT is refused (409) and changes nothing: the bytes at the
 * staged key are the later PUT's to keep or remove.
 */
export function finishPut(record: UploadRecord | null, attempt: number, stored: boolean, now: number): Transition {
  if (!holdsPut(record, attempt, now)) return refusePutAttempt(record, attempt, now);
  return { next: { ...record, state: stored ? "stored" : "reserved", leaseUntil: null } };
}

/**
 * A complete begins: 404 → 410 completed → 409 not stored yet (for a multipart upload: `missingParts`
 * of its parts not stored yet) / being processed → 422 known unhostable.
 */
export function beginComplete(record: UploadRecord | null, now: number, missingParts = 0): Transition {
  if (isGone(record, now)) return refuse(404, "not_found");
  if (record.state === "completed") return refuse(410, "completed");
  if (record.multipart && record.state === "reserved") {
    if (missingParts > 0) return refuse(409, "parts_missing", String(missingParts));
    return { next: takeComplete(record, now) };
  }
  if (record.state === "reserved" || record.state === "storing") return refuse(409, "not_stored");
  if (record.state === "processing" && leaseHeld(record, now)) return refuse(409, "being_processed");
  if (record.failure !== null) return refuse(422, "unhostable", record.failure);
  return { next: takeComplete(record, now) };
}

/** The upload held by a new complete: a new attempt with a fresh lease. */
function takeComplete(record: UploadRecord, now: number): UploadRecord {
  return {
    ...record,
    state: "processing",
    leaseUntil: now + completeLeaseMs,
    completeAttempt: record.completeAttempt + 1,
  };
}

/** Whether complete `attempt` may still act on the upload: no later complete began, and it is `stillCompleting`. */
function holds(record: UploadRecord | null, attempt: number, now: number): record is UploadRecord {
  return stillCompleting(record, now) && record.completeAttempt === attempt;
}

/**
 * Why complete `attempt` may no longer act on the upload: a later complete took it over (409 being
 * processed, or 410 once that one completed it), or it is no longer `stillCompleting` (404: the bytes may be
 * gone).
 */
function refuseAttempt(record: UploadRecord | null, attempt: number, now: number): Transition {
  if (record !== null && record.completeAttempt !== attempt) {
    if (record.state === "completed") return refuse(410, "completed");
    if (!isGone(record, now)) return refuse(409, "being_processed");
  }
  return refuse(404, "not_found");
}

/**
 * A complete that is still running renews its lease: another `completeLeaseMs` from now. Refused like a
 * finish once the attempt was taken over or may no longer finish; a refused complete stops renewing.
 */
export function renewComplete(record: UploadRecord | null, attempt: number, now: number): Transition {
  if (!holds(record, attempt, now)) return refuseAttempt(record, attempt, now);
  return { next: { ...record, leaseUntil: now + completeLeaseMs } };
}

export type CompleteOutcome = { hosted: HostedFile } | { unhostable: string };

/** A multipart upload whose parts are now one staged object: nothing of it is left in R2's upload. */
function assembled(record: UploadRecord): UploadRecord {
  return record.multipart ? { ...record, multipart: { ...record.multipart, r2UploadId: null } } : record;
}

/**
 * Whether a complete in flight may still write its hosted object and finish: the upload is `processing`,
 * and not both lapsed and out of its lease. The alarm removes a lapsed upload (and its bytes) only once no
 * complete holds it, so a complete that finishes within its lease never finishes on removed bytes.
 */
export function stillCompleting(record: UploadRecord | null, now: number): record is UploadRecord {
  return record !== null && record.state === "processing" && (!isGone(record, now) || leaseHeld(record, now));
}

/**
 * Complete `attempt` ends: `completed` with its result, or back to `stored` remembering why the bytes cannot
 * be hosted. Either way a multipart upload's parts were assembled first. A complete that is no longer
 * `stillCompleting` is refused like an unknown upload: the alarm may have removed its bytes. One that was
 * taken over by a later complete is refused (409, or 410 once that one completed it) and changes nothing:
 * the later complete's outcome is the upload's.
 */
export function finishComplete(
  record: UploadRecord | null,
  attempt: number,
  outcome: CompleteOutcome,
  now: number,
): Transition {
  if (!holds(record, attempt, now)) return refuseAttempt(record, attempt, now);
  if ("hosted" in outcome) {
    return {
      next: { ...assembled(record), state: "completed", leaseUntil: null, result: outcome.hosted, failure: null },
    };
  }
  // The failure is answered again until the reservation lapses and the alarm removes the upload.
  return { next: { ...assembled(record), state: "stored", leaseUntil: null, failure: outcome.unhostable } };
}

/**
 * Complete `attempt` failed for a reason other than the bytes (storage error): the upload is `stored` again,
 * or, for a multipart upload whose parts were not assembled (`partsAssembled` false), `reserved` with its
 * parts, so a retry assembles them. One that was taken over is refused (409) and hands nothing back.
 */
export function abandonComplete(record: UploadRecord | null, attempt: number, partsAssembled = true): Transition {
  if (record === null || record.state !== "processing") return refuse(404, "not_found");
  if (record.completeAttempt !== attempt) return refuse(409, "being_processed");
  if (record.multipart?.r2UploadId && !partsAssembled) {
    return { next: { ...record, state: "reserved", leaseUntil: null } };
  }
  return { next: { ...assembled(record), state: "stored", leaseUntil: null } };
}

/** What `GET /media-uploads/{id}` calls the state. */
export function publicState(state: UploadState): PublicUploadState {
  if (state === "storing") return "reserved";
  if (state === "processing") return "stored";
  return state;
}
