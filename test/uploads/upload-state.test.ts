import { describe, expect, it } from "vitest";
import { sameMediaType } from "../../src/lib/media-type";
import {
  abandonComplete,
  beginComplete,
  beginPut,
  completeLeaseMs,
  finishComplete,
  finishPut,
  leaseMs,
  publicState,
  renewPut,
  type Transition,
  type UploadRecord,
} from "../../src/uploads/upload-state";

const now = 1_000_000;
const hosted = { name: "a.jpg", file_url: "https://x/media/s/u.webp", type: "image" as const };

function record(overrides: Partial<UploadRecord> = {}): UploadRecord {
  return {
    id: "u",
    tokenHash: "hash",
    filename: "a.jpg",
    contentType: "image/jpeg",
    size: 10,
    type: "image",
    state: "reserved",
    expiresAt: now + 60_000,
    leaseUntil: null,
    completeAttempt: 0,
    putAttempt: 0,
    result: null,
    failure: null,
    multipart: null,
    ...overrides,
  };
}

const put = { tokenHash: "hash", contentType: "image/jpeg", contentLength: 10 };
const state = (t: Transition) => ("next" in t ? t.next.state : null);
const refusal = (t: Transition) => ("refusal" in t ? [t.refusal.status, t.refusal.reason] : null);

describe("upload state table: the byte PUT", () => {
  it("row: reserved + byte PUT with matching token, type and length before expiry → stored (via storing)", () => {
    const begun = beginPut(record(), put, now);
    expect(state(begun)).toBe("storing");
    const stored = finishPut("next" in begun ? begun.next : null, 1, true, now + 1);
    expect(state(stored)).toBe("stored");
  });

  it("row: reserved + byte PUT with another Content-Type → 422, stays reserved", () => {
    expect(refusal(beginPut(record(), { ...put, contentType: "image/png" }, now))).toEqual([
      422,
      "content_type_mismatch",
    ]);
    expect(refusal(beginPut(record(), { ...put, contentType: undefined }, now))).toEqual([
      422,
      "content_type_mismatch",
    ]);
  });

  it("row: reserved + byte PUT with another Content-Length → 422, stays reserved", () => {
    expect(refusal(beginPut(record(), { ...put, contentLength: 11 }, now))).toEqual([422, "content_length_mismatch"]);
    expect(refusal(beginPut(record(), { ...put, contentLength: undefined }, now))).toEqual([
      422,
      "content_length_mismatch",
    ]);
  });

  it("compares media types on type/subtype, case-insensitively, ignoring parameters", () => {
    expect(sameMediaType("IMAGE/JPEG; q=1", "image/jpeg")).toBe(true);
    expect(sameMediaType("image/jpg", "image/jpeg")).toBe(false);
    expect(state(beginPut(record(), { ...put, contentType: "Image/JPEG;charset=x" }, now))).toBe("storing");
  });

  it("row: stored + byte PUT again → 409 already stored (also processing and completed)", () => {
    for (const s of ["stored", "processing", "completed"] as const) {
      expect(refusal(beginPut(record({ state: s }), put, now))).toEqual([409, "already_stored"]);
    }
  });

  it("a second PUT while one is in flight → 409 being stored; a dead PUT's lease can be taken over", () => {
    const inFlight = record({ state: "storing", leaseUntil: now + 1 });
    expect(refusal(beginPut(inFlight, put, now))).toEqual([409, "being_stored"]);
    expect(state(beginPut(record({ state: "storing", leaseUntil: now }), put, now))).toBe("storing");
  });

  it("a failed PUT leaves the upload reserved", () => {
    expect(state(finishPut(record({ state: "storing", leaseUntil: now + leaseMs }), 0, false, now))).toBe("reserved");
  });

  it("a PUT taken over by a later one (its lease ran out) is refused, renewing or finishing, and changes nothing", () => {
    const first = beginPut(record(), put, now);
    const taken = beginPut("next" in first ? { ...first.next, leaseUntil: now } : null, put, now);
    expect(taken).toMatchObject({ next: { state: "storing", putAttempt: 2 } });
    const current = "next" in taken ? taken.next : null;
    expect(refusal(renewPut(current, 1, now + 1))).toEqual([409, "being_stored"]);
    expect(refusal(finishPut(current, 1, true, now + 1))).toEqual([409, "being_stored"]);
    expect(renewPut(current, 2, now + 1)).toMatchObject({ next: { leaseUntil: now + 1 + leaseMs } });
    const stored = finishPut(current, 2, true, now + 2);
    expect(refusal(finishPut("next" in stored ? stored.next : null, 1, false, now + 3))).toEqual([
      409,
      "already_stored",
    ]);
  });

  it("404 for an unknown upload or a wrong token, before any other check", () => {
    expect(refusal(beginPut(null, put, now))).toEqual([404, "not_found"]);
    expect(refusal(beginPut(record({ state: "stored" }), { ...put, tokenHash: "other" }, now))).toEqual([
      404,
      "not_found",
    ]);
  });
});

describe("upload state table: complete", () => {
  it("row: reserved + complete before the bytes are stored → 409 not stored (also while storing)", () => {
    expect(refusal(beginComplete(record(), now))).toEqual([409, "not_stored"]);
    expect(refusal(beginComplete(record({ state: "storing", leaseUntil: now + 1 }), now))).toEqual([409, "not_stored"]);
  });

  it("row: stored + complete → completed (via processing) with the hosted result", () => {
    const begun = beginComplete(record({ state: "stored" }), now);
    expect(state(begun)).toBe("processing");
    const done = finishComplete("next" in begun ? begun.next : null, 1, { hosted }, now);
    expect("next" in done && done.next).toMatchObject({ state: "completed", result: hosted });
  });

  it("exactly one winner: a complete while another is processing → 409 being processed", () => {
    expect(refusal(beginComplete(record({ state: "processing", leaseUntil: now + 1 }), now))).toEqual([
      409,
      "being_processed",
    ]);
  });

  it("row: completed + complete again → 410", () => {
    expect(refusal(beginComplete(record({ state: "completed", result: hosted }), now))).toEqual([410, "completed"]);
  });

  it("unhostable bytes stay stored and a later complete repeats the same 422", () => {
    const failed = finishComplete(record({ state: "processing" }), 0, { unhostable: "Not media." }, now);
    expect("next" in failed && failed.next).toMatchObject({ state: "stored", failure: "Not media." });
    const again = beginComplete("next" in failed ? failed.next : null, now);
    expect("refusal" in again && again.refusal).toEqual({ status: 422, reason: "unhostable", detail: "Not media." });
  });

  it("a complete may finish past the reservation's end while it holds its lease, not once both ran out (404)", () => {
    const lapsed = record({ state: "processing", expiresAt: now - 1, leaseUntil: now + 1 });
    expect(state(finishComplete(lapsed, 0, { hosted }, now))).toBe("completed");
    expect(refusal(finishComplete({ ...lapsed, leaseUntil: now }, 0, { hosted }, now))).toEqual([404, "not_found"]);
    // Within the reservation a complete whose lease ran out still finishes (no other took it over).
    expect(state(finishComplete(record({ state: "processing", leaseUntil: now - 1 }), 0, { hosted }, now))).toBe(
      "completed",
    );
  });

  it("a complete abandoned on a storage error leaves the upload stored for a retry", () => {
    expect(state(abandonComplete(record({ state: "processing" }), 0))).toBe("stored");
  });
});

describe("upload state table: expiry and public states", () => {
  it("row: reserved or stored + time past expires_at → expired: PUT and complete answer 404", () => {
    const late = now + 60_000;
    for (const s of ["reserved", "stored"] as const) {
      expect(refusal(beginPut(record({ state: s }), put, late))).toEqual([404, "not_found"]);
      expect(refusal(beginComplete(record({ state: s }), late))).toEqual([404, "not_found"]);
    }
  });

  it("a PUT that finishes after the reservation lapsed stores nothing (404)", () => {
    expect(refusal(finishPut(record({ state: "storing" }), 0, true, now + 60_000))).toEqual([404, "not_found"]);
  });

  it("a completed upload never expires", () => {
    expect(refusal(beginComplete(record({ state: "completed" }), now + 10 * 60_000))).toEqual([410, "completed"]);
  });

  it("shows in-flight states as their public state", () => {
    expect((["reserved", "storing", "stored", "processing", "completed"] as const).map((s) => publicState(s))).toEqual([
      "reserved",
      "reserved",
      "stored",
      "stored",
      "completed",
    ]);
  });
});

describe("upload state table: multipart uploads", () => {
  const multipart = { partSize: 8, partCount: 2, r2UploadId: "r2", maxExpiresAt: now + 3_600_000 };
  const parts = record({ size: 10, multipart });
  const hostedOutcome = { hosted };

  it("a byte PUT of a multipart upload answers 409 (its bytes go in parts), after the 404 checks", () => {
    expect(refusal(beginPut(parts, put, now))).toEqual([409, "multipart_only"]);
    expect(refusal(beginPut(parts, { ...put, tokenHash: "other" }, now))).toEqual([404, "not_found"]);
    expect(refusal(beginPut({ ...parts, state: "completed" }, put, now))).toEqual([409, "already_stored"]);
  });

  it("complete with parts missing answers 409 with how many; with none missing it takes the upload as is", () => {
    const missing = beginComplete(parts, now, 2);
    expect(refusal(missing)).toEqual([409, "parts_missing"]);
    expect("refusal" in missing && missing.refusal.detail).toBe("2");
    expect(beginComplete(parts, now, 0)).toEqual({
      next: { ...parts, state: "processing", leaseUntil: now + completeLeaseMs, completeAttempt: 1 },
    });
  });

  it("finishing a complete forgets R2's upload (the parts are one object now), hosted or not", () => {
    const processing = { ...parts, state: "processing" as const };
    for (const outcome of [hostedOutcome, { unhostable: "no" }]) {
      const next = finishComplete(processing, 0, outcome, now);
      expect("next" in next && next.next.multipart?.r2UploadId).toBeNull();
    }
  });

  it("a complete abandoned before assembling hands the parts back (reserved); after assembling the upload is stored", () => {
    const processing = { ...parts, state: "processing" as const };
    expect(abandonComplete(processing, 0, false)).toEqual({ next: { ...parts, state: "reserved", leaseUntil: null } });
    expect(abandonComplete(processing, 0, true)).toEqual({
      next: { ...parts, state: "stored", leaseUntil: null, multipart: { ...multipart, r2UploadId: null } },
    });
    const assembled = { ...processing, multipart: { ...multipart, r2UploadId: null } };
    expect(state(abandonComplete(assembled, 0, false))).toBe("stored");
  });
});
