import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { stagedKey } from "../../src/storage/keys";
import { leaseRenewalMs } from "../../src/uploads/complete/lease";
import { abortRetryMs, expiryBatchSize } from "../../src/uploads/coordinator/expiry";
import type { NewUpload } from "../../src/uploads/coordinator/upload-rows";
import { completeLeaseMs, leaseMs } from "../../src/uploads/upload-state";
import { uuid } from "../support/factories";
import { poll } from "../support/poll";

const coordinatorOf = (storeId: string) => env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));

function newUpload(expiresAt: number): NewUpload {
  return {
    id: uuid(),
    tokenHash: "hash",
    filename: "plik.bin",
    contentType: "application/octet-stream",
    size: 3,
    type: "file",
    expiresAt,
  };
}

/**
 * Reserves `count` uploads of a fresh store expiring one millisecond apart from `firstExpiry`, oldest
 * first, with staged bytes for those `hasBytes` picks.
 */
async function reserveMany(count: number, firstExpiry: number, hasBytes: (index: number) => boolean) {
  const storeId = uuid();
  const coordinator = coordinatorOf(storeId);
  const uploads: NewUpload[] = [];
  for (let index = 0; index < count; index++) {
    const upload = newUpload(firstExpiry + index);
    await coordinator.reserve(storeId, upload);
    if (hasBytes(index)) await env.BUCKET.put(stagedKey(storeId, upload.id), "abc");
    uploads.push(upload);
  }
  return { storeId, coordinator, uploads };
}

const remainingIds = (coordinator: ReturnType<typeof coordinatorOf>) =>
  runInDurableObject(coordinator, (_instance, state) =>
    state.storage.sql
      .exec<{ id: string }>("SELECT id FROM uploads ORDER BY expires_at")
      .toArray()
      .map((row) => row.id),
  );

/** Every key list the coordinators hand to one R2 delete call, in order. */
function recordDeleteCalls() {
  const calls: string[][] = [];
  const original = env.BUCKET.delete.bind(env.BUCKET);
  vi.spyOn(env.BUCKET, "delete").mockImplementation((keys: string | string[]) => {
    calls.push(Array.isArray(keys) ? keys : [keys]);
    return original(keys);
  });
  return calls;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("expiry alarm batches", () => {
  it("removes at most one batch of the longest-lapsed uploads per run, in one R2 delete, and re-arms at once while more remain", async () => {
    const start = Date.now();
    // Expiring a minute ahead keeps the object's own alarm out of the way; removal is asked to look later.
    const { storeId, coordinator, uploads } = await reserveMany(7, start + 60_000, () => true);
    const later = start + 120_000;
    const deletes = recordDeleteCalls();

    const first = await runInDurableObject(coordinator, async (instance, state) => ({
      removed: await instance.removeLapsed(3, later),
      alarm: await state.storage.getAlarm(),
    }));
    expect(first.removed).toBe(3);
    expect(first.alarm).not.toBeNull();
    expect(first.alarm as number).toBeLessThanOrEqual(Date.now());
    expect(await remainingIds(coordinator)).toEqual(uploads.slice(3).map((upload) => upload.id));
    expect(deletes).toEqual([uploads.slice(0, 3).map((upload) => stagedKey(storeId, upload.id))]);
    for (const upload of uploads.slice(0, 3)) expect(await env.BUCKET.head(stagedKey(storeId, upload.id))).toBeNull();
    for (const upload of uploads.slice(3)) expect(await env.BUCKET.head(stagedKey(storeId, upload.id))).not.toBeNull();

    const second = await runInDurableObject(coordinator, (instance) => instance.removeLapsed(3, later));
    const last = await runInDurableObject(coordinator, (instance) => instance.removeLapsed(3, later));
    expect([second, last]).toEqual([3, 1]);
    expect(await remainingIds(coordinator)).toEqual([]);
    const batchDeletes = deletes.filter((keys) => keys.some((key) => key.includes(storeId)));
    expect(batchDeletes.map((keys) => keys.length)).toEqual([3, 3, 1]);
  });

  it(`the alarm itself drains more than ${expiryBatchSize} lapsed uploads in runs of at most ${expiryBatchSize} keys per R2 delete`, async () => {
    const count = expiryBatchSize + 20;
    const deletes = recordDeleteCalls();
    // Bytes for a few are enough to see them go; deleting a key that has none is harmless.
    const sampledIndexes = [0, expiryBatchSize, count - 1];
    const { storeId, coordinator, uploads } = await reserveMany(count, Date.now() + 2000, (index) =>
      sampledIndexes.includes(index),
    );
    const sampled = uploads.filter((_upload, index) => sampledIndexes.includes(index));

    await poll(
      () => remainingIds(coordinator),
      (ids) => ids.length === 0,
      { timeoutMs: 15_000, intervalMs: 200, what: "every lapsed upload deleted" },
    );
    const storeDeletes = deletes.filter((keys) => keys.some((key) => key.includes(storeId)));
    expect(storeDeletes.length).toBeGreaterThanOrEqual(2);
    for (const keys of storeDeletes) expect(keys.length).toBeLessThanOrEqual(expiryBatchSize);
    expect(storeDeletes.flat().sort()).toEqual(uploads.map((upload) => stagedKey(storeId, upload.id)).sort());
    for (const upload of sampled) expect(await env.BUCKET.head(stagedKey(storeId, upload.id))).toBeNull();
  }, 30_000);
});

describe("multipart uploads in the coordinator", () => {
  it("an object whose uploads table predates multipart gets the new columns when it starts", async () => {
    const storeId = uuid();
    const coordinator = coordinatorOf(storeId);
    const columns = await runInDurableObject(coordinator, (instance, state) => {
      const sql = state.storage.sql;
      // The attempt numbers came later still (migrations 2 and 3).
      const later = ["complete_attempt", "put_attempt"];
      for (const column of ["part_size", "part_count", "r2_upload_id", "max_expires_at", ...later]) {
        sql.exec(`ALTER TABLE uploads DROP COLUMN ${column}`);
      }
      sql.exec("ALTER TABLE upload_parts DROP COLUMN attempt");
      // And the Idempotency-Key records (migration 4).
      sql.exec("DROP TABLE idempotency_keys");
      // An object that old predates numbered migrations too: it has no record of them (src/uploads/coordinator/migrations.ts).
      sql.exec("DROP TABLE schema_migrations");
      // A fresh instance over the old table, as after a deploy.
      new (instance.constructor as new (ctx: DurableObjectState, env: Env) => unknown)(state, env);
      return sql
        .exec<{ name: string }>("PRAGMA table_info(uploads)")
        .toArray()
        .map((column) => column.name);
    });
    expect(columns).toEqual(
      expect.arrayContaining([
        "part_size",
        "part_count",
        "r2_upload_id",
        "max_expires_at",
        "complete_attempt",
        "put_attempt",
      ]),
    );
    await coordinator.reserve(storeId, { ...newUpload(Date.now() + 60_000) });
  });

  it("the alarm aborts a lapsed upload's R2 multipart upload; one whose abort fails stays and is retried a minute later", async () => {
    const storeId = uuid();
    const coordinator = coordinatorOf(storeId);
    const start = Date.now();
    const ids = [uuid(), uuid()];
    const r2Uploads: R2MultipartUpload[] = [];
    for (const id of ids) {
      const r2 = await env.BUCKET.createMultipartUpload(stagedKey(storeId, id));
      r2Uploads.push(r2);
      await coordinator.reserve(storeId, {
        ...newUpload(start + 60_000),
        id,
        multipart: { partSize: 5 * 2 ** 20, partCount: 1, r2UploadId: r2.uploadId, maxExpiresAt: start + 3_600_000 },
      });
    }
    const original = env.BUCKET.resumeMultipartUpload.bind(env.BUCKET);
    vi.spyOn(env.BUCKET, "resumeMultipartUpload").mockImplementation((key: string, uploadId: string) => {
      if (uploadId !== r2Uploads[1]?.uploadId) return original(key, uploadId);
      return { ...original(key, uploadId), abort: () => Promise.reject(new Error("R2 is unavailable")) };
    });
    vi.spyOn(console, "error").mockImplementation(() => {});

    const result = await runInDurableObject(coordinator, async (instance, state) => ({
      removed: await instance.removeLapsed(10, start + 120_000),
      alarm: await state.storage.getAlarm(),
    }));
    expect(result.removed).toBe(1);
    expect(await remainingIds(coordinator)).toEqual([ids[1]]);
    expect(result.alarm).toBeGreaterThanOrEqual(start + abortRetryMs - 1000);
    // The first upload's R2 upload is aborted: R2 refuses its parts.
    await expect(r2Uploads[0]?.uploadPart(1, "x")).rejects.toThrow();
    await expect(r2Uploads[1]?.uploadPart(1, "x")).resolves.toBeDefined();
  });
});

describe("a complete's lease and its attempts", () => {
  const hosted = { name: "plik.bin", file_url: "https://media.example/x.mp4", type: "video" as const };

  /** A stored single-PUT upload of a fresh store, reserved for an hour from `now`. */
  async function storedUpload(now: number) {
    const storeId = uuid();
    const coordinator = coordinatorOf(storeId);
    const upload = newUpload(now + 3_600_000);
    await coordinator.reserve(storeId, upload);
    await runInDurableObject(coordinator, (_instance, state) => {
      state.storage.sql.exec("UPDATE uploads SET state = 'stored' WHERE id = ?", upload.id);
    });
    return { coordinator, id: upload.id };
  }

  /** The attempt a begin handed out; fails the test when the begin was refused. */
  async function begin(coordinator: ReturnType<typeof coordinatorOf>, id: string, now: number) {
    const begun = await coordinator.beginComplete(id, now);
    if (!begun.ok) throw new Error(`begin refused: ${JSON.stringify(begun.refusal)}`);
    return begun.upload.completeAttempt;
  }

  it("a complete that never finishes (its process died) holds the upload for seconds, not minutes: then a retry takes it over", async () => {
    expect(completeLeaseMs).toBeLessThanOrEqual(15_000);
    const now = Date.now();
    const { coordinator, id } = await storedUpload(now);
    await begin(coordinator, id, now);
    expect(await coordinator.beginComplete(id, now + completeLeaseMs - 1)).toEqual({
      ok: false,
      refusal: { status: 409, reason: "being_processed" },
    });
    const retry = await begin(coordinator, id, now + completeLeaseMs);
    expect((await coordinator.finishComplete(id, retry, { hosted }, now + completeLeaseMs + 1)).ok).toBe(true);
  });

  it("each begin is a new attempt; once one took over, the earlier attempt's renewal, hosted key, finish and abandon are refused and change nothing", async () => {
    const now = Date.now();
    const { coordinator, id } = await storedUpload(now);
    const first = await begin(coordinator, id, now);
    const later = now + completeLeaseMs;
    const second = await begin(coordinator, id, later);
    expect(second).toBeGreaterThan(first);

    const taken = { ok: false, refusal: { status: 409, reason: "being_processed" } };
    expect(await coordinator.renewComplete(id, first, later + 1)).toEqual(taken);
    expect(await coordinator.recordHostedKey(id, first, "media/s/x.mp4", later + 1)).toEqual(taken);
    expect(await coordinator.finishComplete(id, first, { hosted }, later + 1)).toEqual(taken);
    expect(await coordinator.abandonComplete(id, first)).toEqual(taken);
    // The newer attempt still holds the upload: a third complete is refused, and the newer one finishes.
    expect(await coordinator.beginComplete(id, later + 2)).toEqual(taken);
    const finished = await coordinator.finishComplete(id, second, { hosted }, later + 3);
    expect(finished.ok && finished.upload).toMatchObject({ state: "completed", result: hosted });
    // Woken up after the newer attempt completed the upload, the cut one is told so (410), and the result stays.
    expect(await coordinator.finishComplete(id, first, { unhostable: "late" }, later + 4)).toEqual({
      ok: false,
      refusal: { status: 410, reason: "completed" },
    });
    expect((await coordinator.status(id, later + 5))?.upload).toMatchObject({ state: "completed", result: hosted });
  });

  it("renewed every leaseRenewalMs, a complete keeps its lease for as long as it runs (six minutes here), and only its own attempt renews", async () => {
    const now = Date.now();
    const { coordinator, id } = await storedUpload(now);
    const attempt = await begin(coordinator, id, now);
    const end = now + 6 * 60_000;
    for (let at = now + leaseRenewalMs; at <= end; at += leaseRenewalMs) {
      const renewed = await coordinator.renewComplete(id, attempt, at);
      expect(renewed).toEqual({ ok: true, upload: { leaseUntil: at + completeLeaseMs } });
      expect((await coordinator.beginComplete(id, at + 1)).ok).toBe(false);
    }
    expect(await coordinator.renewComplete(id, attempt + 1, end)).toMatchObject({ ok: false });
    expect((await coordinator.finishComplete(id, attempt, { hosted }, end + 1)).ok).toBe(true);
  });

  it("an attempt that ended (finished or abandoned) renews nothing: the upload is not held again", async () => {
    const now = Date.now();
    const { coordinator, id } = await storedUpload(now);
    const attempt = await begin(coordinator, id, now);
    expect((await coordinator.abandonComplete(id, attempt)).ok).toBe(true);
    expect((await coordinator.renewComplete(id, attempt, now + 1)).ok).toBe(false);
    expect((await coordinator.status(id, now + 2))?.upload).toMatchObject({ state: "stored", leaseUntil: null });
  });
});

describe("a byte PUT's and a part PUT's leases", () => {
  const put = { tokenHash: "hash", contentType: "application/octet-stream", contentLength: 3 };

  it("renewed every leaseRenewalMs, a byte PUT keeps the upload for as long as its body streams; once taken over, its renewal and finish are refused", async () => {
    const now = Date.now();
    const storeId = uuid();
    const coordinator = coordinatorOf(storeId);
    const upload = newUpload(now + 3_600_000);
    await coordinator.reserve(storeId, upload);
    const begun = await coordinator.beginPut(upload.id, put, now);
    const attempt = begun.ok ? begun.upload.putAttempt : -1;
    const end = now + 6 * 60_000;
    for (let at = now + leaseRenewalMs; at <= end; at += leaseRenewalMs) {
      expect(await coordinator.renewPut(upload.id, attempt, at)).toEqual({
        ok: true,
        upload: { leaseUntil: at + leaseMs },
      });
      expect(await coordinator.beginPut(upload.id, put, at + 1)).toMatchObject({
        ok: false,
        refusal: { status: 409, reason: "being_stored" },
      });
    }
    // It stops renewing (its process died): a retry takes the upload over once the lease ran out.
    const retry = await coordinator.beginPut(upload.id, put, end + leaseMs);
    expect(retry.ok && retry.upload.putAttempt).toBe(attempt + 1);
    const taken = { ok: false, refusal: { status: 409, reason: "being_stored" } };
    expect(await coordinator.renewPut(upload.id, attempt, end + leaseMs + 1)).toEqual(taken);
    expect(await coordinator.finishPut(upload.id, attempt, true, end + leaseMs + 1)).toEqual(taken);
    expect((await coordinator.finishPut(upload.id, attempt + 1, true, end + leaseMs + 2)).ok).toBe(true);
  });

  it("renewed every leaseRenewalMs, a part PUT keeps its part for as long as its body streams; once taken over, its renewal and finish are refused", async () => {
    const now = Date.now();
    const storeId = uuid();
    const coordinator = coordinatorOf(storeId);
    const upload = {
      ...newUpload(now + 3_600_000),
      multipart: { partSize: 5 * 2 ** 20, partCount: 2, r2UploadId: "r2", maxExpiresAt: now + 7_200_000 },
    };
    await coordinator.reserve(storeId, upload);
    const part = { ...put, contentLength: 5 * 2 ** 20, partNumber: 1 };
    const begun = await coordinator.beginPart(upload.id, part, now);
    const attempt = begun.ok ? begun.ticket.attempt : -1;
    const end = now + 6 * 60_000;
    for (let at = now + leaseRenewalMs; at <= end; at += leaseRenewalMs) {
      expect(await coordinator.renewPart(upload.id, 1, attempt, at)).toEqual({
        ok: true,
        upload: { leaseUntil: at + leaseMs },
      });
      expect((await coordinator.beginPart(upload.id, part, at + 1)).ok).toBe(false);
    }
    const retry = await coordinator.beginPart(upload.id, part, end + leaseMs);
    expect(retry.ok && retry.ticket.attempt).toBe(attempt + 1);
    const taken = { ok: false, refusal: { status: 409, reason: "part_being_stored", part: 1 } };
    expect(await coordinator.renewPart(upload.id, 1, attempt, end + leaseMs + 1)).toEqual(taken);
    const stored = { size: 5 * 2 ** 20, etag: "e" };
    expect(await coordinator.finishPart(upload.id, 1, { attempt, stored }, 60_000, end + leaseMs + 1)).toEqual(taken);
    expect(
      (await coordinator.finishPart(upload.id, 1, { attempt: attempt + 1, stored }, 60_000, end + leaseMs + 2)).ok,
    ).toBe(true);
  });
});
