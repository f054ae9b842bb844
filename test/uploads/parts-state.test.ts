import { describe, expect, it } from "vitest";
import {
  beginPart,
  finishPart,
  maxParts,
  missingParts,
  type PartRecord,
  partLength,
  planParts,
  preferredPartBytes,
} from "../../src/uploads/parts-state";
import { leaseMs, type UploadRecord } from "../../src/uploads/upload-state";

const MiB = 2 ** 20;
const now = 1_000_000_000;
const ttlMs = 900_000;

function upload(overrides: Partial<UploadRecord> = {}): UploadRecord {
  return {
    id: "u",
    tokenHash: "hash",
    filename: "film.mp4",
    contentType: "video/mp4",
    size: 20 * MiB + 3,
    type: "image",
    state: "reserved",
    expiresAt: now + ttlMs,
    leaseUntil: null,
    completeAttempt: 0,
    putAttempt: 0,
    result: null,
    failure: null,
    multipart: { partSize: 8 * MiB, partCount: 3, r2UploadId: "r2", maxExpiresAt: now + 24 * 3_600_000 },
    ...overrides,
  };
}

const attempt = (partNumber: number, contentLength: number, overrides = {}) => ({
  tokenHash: "hash",
  contentType: "video/mp4",
  contentLength,
  partNumber,
  ...overrides,
});

const refusal = (result: object) =>
  "refusal" in result
    ? [(result.refusal as { status: number }).status, (result.refusal as { reason: string }).reason]
    : null;

describe("planParts: how an upload is cut", () => {
  it("takes 8 MiB parts, the last the rest", () => {
    expect(preferredPartBytes).toBe(8 * MiB);
    expect(planParts(300_000_000, 100_000_000)).toEqual({ partSize: 8 * MiB, partCount: 36 });
    expect(planParts(1, 100_000_000)).toEqual({ partSize: 8 * MiB, partCount: 1 });
  });

  it("never exceeds the body ceiling, and grows in whole MiB only to stay within 10,000 parts", () => {
    expect(planParts(30 * MiB, 6 * MiB)).toEqual({ partSize: 6 * MiB, partCount: 5 });
    expect(planParts(maxParts * 8 * MiB + 1, 100_000_000)).toEqual({ partSize: 9 * MiB, partCount: 8889 });
    expect(planParts(maxParts * 6 * MiB, 6 * MiB)).toEqual({ partSize: 6 * MiB, partCount: maxParts });
    expect(planParts(maxParts * 6 * MiB + 1, 6 * MiB)).toBeNull();
  });

  it("partLength: every part but the last is part_size; missingParts counts parts without an ETag", () => {
    const plan = { partSize: 8 * MiB, partCount: 3 };
    expect([1, 2, 3].map((n) => partLength(plan, 20 * MiB + 3, n))).toEqual([8 * MiB, 8 * MiB, 4 * MiB + 3]);
    const parts: PartRecord[] = [
      { partNumber: 1, size: 8 * MiB, etag: "a", leaseUntil: null, attempt: 1 },
      { partNumber: 2, size: null, etag: null, leaseUntil: now + 1, attempt: 1 },
    ];
    expect(missingParts(plan, parts)).toBe(2);
  });
});

describe("beginPart: the part PUT's order of checks", () => {
  it("404 for a lapsed or unknown upload and a wrong token, before anything else", () => {
    expect(refusal(beginPart(null, null, attempt(9, 1), now))).toEqual([404, "not_found"]);
    expect(refusal(beginPart(upload({ expiresAt: now }), null, attempt(1, 8 * MiB), now))).toEqual([404, "not_found"]);
    expect(refusal(beginPart(upload(), null, attempt(9, 1, { tokenHash: "other" }), now))).toEqual([404, "not_found"]);
  });

  it("409 for a single-PUT upload, an assembled or completed one, and a part in flight; then 422", () => {
    expect(refusal(beginPart(upload({ multipart: null }), null, attempt(1, 1), now))).toEqual([409, "not_multipart"]);
    for (const state of ["processing", "completed", "stored"] as const) {
      expect(refusal(beginPart(upload({ state }), null, attempt(9, 1), now)), state).toEqual([409, "already_stored"]);
    }
    const inFlight = { partNumber: 2, size: null, etag: null, leaseUntil: now + 1, attempt: 1 };
    expect(refusal(beginPart(upload(), inFlight, attempt(2, 1), now))).toEqual([409, "part_being_stored"]);
    const lapsedLease = { ...inFlight, leaseUntil: now };
    expect("ticket" in beginPart(upload(), lapsedLease, attempt(2, 8 * MiB), now)).toBe(true);
  });

  it("422 part number, then Content-Type, then the part's own Content-Length", () => {
    expect(refusal(beginPart(upload(), null, attempt(0, 1, { contentType: "x/y" }), now))).toEqual([
      422,
      "part_number",
    ]);
    expect(refusal(beginPart(upload(), null, attempt(4, 1), now))).toEqual([422, "part_number"]);
    expect(refusal(beginPart(upload(), null, attempt(3, 1, { contentType: "image/png" }), now))).toEqual([
      422,
      "content_type_mismatch",
    ]);
    expect(refusal(beginPart(upload(), null, attempt(3, 8 * MiB), now))).toEqual([422, "part_length_mismatch"]);
    const last = beginPart(upload(), null, attempt(3, 4 * MiB + 3, { contentType: "VIDEO/MP4; codecs=x" }), now);
    expect(last).toEqual({
      next: { partNumber: 3, size: null, etag: null, leaseUntil: now + leaseMs, attempt: 1 },
      ticket: { partNumber: 3, size: 4 * MiB + 3, r2UploadId: "r2", attempt: 1 },
    });
  });

  it("a part sent again keeps the stored copy until the new one is stored", () => {
    const stored = { partNumber: 1, size: 8 * MiB, etag: "old", leaseUntil: null, attempt: 1 };
    const again = beginPart(upload(), stored, attempt(1, 8 * MiB), now);
    expect(again).toMatchObject({ next: { size: 8 * MiB, etag: "old", leaseUntil: now + leaseMs, attempt: 2 } });
  });
});

describe("finishPart: recording a part, sliding the reservation", () => {
  const leased = { partNumber: 1, size: null, etag: null, leaseUntil: now + leaseMs, attempt: 1 };

  it("records size and ETag and moves expires_at to now + TTL", () => {
    const later = now + 600_000;
    const finished = finishPart(upload(), leased, { attempt: 1, stored: { size: 8, etag: "e" } }, later, ttlMs);
    expect(finished).toEqual({
      next: { partNumber: 1, size: 8, etag: "e", leaseUntil: null, attempt: 1 },
      upload: upload({ expiresAt: later + ttlMs }),
    });
  });

  it("never past MULTIPART_MAX_HOURS after prepare, and never earlier than it was", () => {
    const capped = upload({
      multipart: { partSize: 8 * MiB, partCount: 3, r2UploadId: "r2", maxExpiresAt: now + 1000 },
    });
    const finished = finishPart(capped, leased, { attempt: 1, stored: { size: 8, etag: "e" } }, now + 10, ttlMs);
    expect(finished).toMatchObject({ upload: { expiresAt: now + ttlMs } }); // already later than the cap allows: kept
    const tight = upload({
      expiresAt: now + 10,
      multipart: { partSize: 8 * MiB, partCount: 3, r2UploadId: "r2", maxExpiresAt: now + 1000 },
    });
    expect(finishPart(tight, leased, { attempt: 1, stored: { size: 8, etag: "e" } }, now, ttlMs)).toMatchObject({
      upload: { expiresAt: now + 1000 },
    });
  });

  it("a failed part frees the lease and keeps the earlier copy; a lapsed reservation or a lease taken over records nothing", () => {
    const resent = { partNumber: 1, size: 8, etag: "old", leaseUntil: now + leaseMs, attempt: 1 };
    expect(finishPart(upload(), resent, { attempt: 1, stored: null }, now, ttlMs)).toEqual({
      next: { ...resent, leaseUntil: null },
      upload: upload(),
    });
    const lapsed = upload({ expiresAt: now });
    expect(refusal(finishPart(lapsed, leased, { attempt: 1, stored: { size: 8, etag: "e" } }, now, ttlMs))).toEqual([
      404,
      "not_found",
    ]);
    const takenOver = { ...leased, leaseUntil: now + 2 * leaseMs, attempt: 2 };
    expect(
      refusal(finishPart(upload(), takenOver, { attempt: 1, stored: { size: 8, etag: "e" } }, now, ttlMs)),
    ).toEqual([409, "part_being_stored"]);
  });
});
