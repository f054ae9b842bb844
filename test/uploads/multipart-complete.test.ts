import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { stagedKey } from "../../src/storage/keys";
import { uploadMessages } from "../../src/uploads/messages";
import { leaseMs } from "../../src/uploads/upload-state";
import { isolateClock } from "../support/clock";
import { seedStore } from "../support/factories";
import { json } from "../support/http";
import {
  completeWith,
  digest,
  prepareWith,
  putAllParts,
  r2UploadIdOf,
  readUpload,
  type Status,
  servedDigest,
  threeParts,
} from "../support/multipart";
import { countRoundTrips } from "../support/round-trips";
import {
  callWith,
  coordinatorOf,
  freshIp,
  MiB,
  mp4OfSize,
  multipartEnv,
  partOf,
  putPart,
  reserve,
  reserveParts,
} from "../support/uploads";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("complete and GET of a multipart upload", () => {
  it("missing part at complete: 409 saying how many; then, with every part, 201", async () => {
    const owner = await seedStore();
    const file = mp4OfSize(threeParts, 3);
    const reservation = await reserveParts(owner, file.length);
    const none = await completeWith(owner, reservation.id);
    expect(none.status).toBe(409);
    expect(await json(none)).toEqual({ message: "3 parts of this upload have not been stored yet; PUT them first." });
    expect((await putPart(reservation, 1, partOf(reservation, file, 1))).status).toBe(204);
    expect((await putPart(reservation, 3, partOf(reservation, file, 3))).status).toBe(204);
    const one = await completeWith(owner, reservation.id);
    expect(one.status).toBe(409);
    expect(await json(one)).toEqual({ message: "1 part of this upload has not been stored yet; PUT it first." });
    const status = await json<Status>(await readUpload(owner, reservation.id));
    expect(status.state).toBe("reserved");
    expect(status.parts?.map((part) => part.part_number)).toEqual([1, 3]);

    expect((await putPart(reservation, 2, partOf(reservation, file, 2))).status).toBe(204);
    expect((await completeWith(owner, reservation.id)).status).toBe(201);
    expect(await servedDigest(owner.storeId, reservation.id, "mp4")).toBe(await digest(file));
  });

  it("R2 failing to assemble the parts: 503, the parts are kept, and the next complete hosts them", async () => {
    const owner = await seedStore();
    const file = mp4OfSize(threeParts, 5);
    const reservation = await reserveParts(owner, file.length);
    await putAllParts(reservation, file);
    const resume = env.BUCKET.resumeMultipartUpload.bind(env.BUCKET);
    const spy = vi.spyOn(env.BUCKET, "resumeMultipartUpload").mockImplementation((key: string, uploadId: string) => {
      const upload = resume(key, uploadId);
      return { ...upload, complete: () => Promise.reject(new Error("R2 is unavailable")) } as R2MultipartUpload;
    });
    vi.spyOn(console, "error").mockImplementation(() => {});
    const failed = await completeWith(owner, reservation.id);
    expect(failed.status).toBe(503);
    expect(await json(failed)).toEqual({ message: uploadMessages.assemblyFailed });
    const kept = await json<Status>(await readUpload(owner, reservation.id));
    expect(kept.state).toBe("stored");
    expect(kept.parts).toHaveLength(3);

    spy.mockRestore();
    expect((await completeWith(owner, reservation.id)).status).toBe(201);
    expect(await servedDigest(owner.storeId, reservation.id, "mp4")).toBe(await digest(file));
  });

  it("R2 failing to start a multipart upload: prepare answers 503 and reserves nothing", async () => {
    const owner = await seedStore();
    vi.spyOn(env.BUCKET, "createMultipartUpload").mockRejectedValue(new Error("R2 is unavailable"));
    vi.spyOn(console, "error").mockImplementation(() => {});
    const response = await prepareWith(
      owner,
      { filename: "a.mp4", content_type: "video/mp4", size: 10, multipart: true },
      multipartEnv(),
    );
    expect(response.status).toBe(503);
    expect(await json(response)).toEqual({ message: uploadMessages.reserveFailed });
    const reserved = await runInDurableObject(
      coordinatorOf(owner.storeId),
      (_instance, state) => state.storage.sql.exec("SELECT id FROM uploads").toArray().length,
    );
    expect(reserved).toBe(0);
  });

  it("bytes that cannot be hosted: 422, the parts stay assembled, completing again repeats the 422", async () => {
    const owner = await seedStore();
    const file = new Uint8Array(6 * MiB).fill(42); // no known signature
    const reservation = await reserveParts(owner, file.length, multipartEnv(), { content_type: "image/png" });
    await putAllParts(reservation, file);
    const first = await completeWith(owner, reservation.id);
    expect(first.status).toBe(422);
    expect(await json(first)).toEqual({ message: uploadMessages.notMedia });
    expect(await r2UploadIdOf(owner.storeId, reservation.id)).toBeNull();
    expect((await env.BUCKET.head(stagedKey(owner.storeId, reservation.id)))?.size).toBe(file.length);
    expect((await completeWith(owner, reservation.id)).status).toBe(422);
    expect((await putPart(reservation, 1, partOf(reservation, file, 1))).status).toBe(409);
  });
});

describe("complete and GET of a multipart upload, with the isolate's clock in the test's hand", () => {
  // Expiry is read from Date.now() by the Worker and its coordinator (one isolate): the tests move the
  // clock past the reservation's end instead of waiting for it.
  const clock = isolateClock();

  it("each stored part moves expires_at to now + UPLOAD_TTL_SECONDS", async () => {
    const owner = await seedStore();
    const bindings = multipartEnv({ UPLOAD_TTL_SECONDS: "3" });
    const file = mp4OfSize(threeParts);
    const reservation = await reserveParts(owner, file.length, bindings);
    const reserved = Date.parse(reservation.expires_at);
    clock.advance(1500);
    const before = Date.now();
    expect((await putPart(reservation, 1, partOf(reservation, file, 1), {}, bindings)).status).toBe(204);
    const status = await json<Status>(await readUpload(owner, reservation.id, bindings));
    const extended = Date.parse(status.expires_at);
    expect(extended).toBeGreaterThan(reserved + 1000);
    expect(extended).toBeGreaterThanOrEqual(before + 3000);
    expect(extended).toBeLessThanOrEqual(Date.now() + 3000);
  });

  it("a part PUT whose process died holds its part (409) for the lease, seconds not minutes; then a retry stores the part", async () => {
    expect(leaseMs).toBeLessThanOrEqual(15_000);
    const owner = await seedStore();
    const file = mp4OfSize(threeParts);
    const reservation = await reserveParts(owner, file.length);
    const part = partOf(reservation, file, 2);
    // How far a part PUT gets before its isolate is killed: begun, never finished, no longer renewing.
    const begun = await coordinatorOf(owner.storeId).beginPart(reservation.id, {
      tokenHash: await sha256Hex(reservation.upload_request.headers["X-Upload-Token"] ?? ""),
      contentType: "video/mp4",
      contentLength: part.length,
      partNumber: 2,
    });
    expect(begun.ok).toBe(true);
    expect((await putPart(reservation, 2, part)).status).toBe(409);
    clock.advance(leaseMs - 1000);
    expect((await putPart(reservation, 2, part)).status).toBe(409);

    clock.advance(1000);
    expect((await putPart(reservation, 2, part)).status).toBe(204);
    expect((await json<Status>(await readUpload(owner, reservation.id))).parts?.map((p) => p.part_number)).toEqual([2]);
  });

  it("expiry aborts the R2 multipart upload: nothing is left, and the part PUT, GET and complete answer 404", async () => {
    const owner = await seedStore();
    const bindings = multipartEnv({ UPLOAD_TTL_SECONDS: "1" });
    const file = mp4OfSize(threeParts);
    const reservation = await reserveParts(owner, file.length, bindings);
    expect((await putPart(reservation, 1, partOf(reservation, file, 1), {}, bindings)).status).toBe(204);
    const r2UploadId = (await r2UploadIdOf(owner.storeId, reservation.id)) as string;
    expect(r2UploadId).toBeTruthy();

    clock.advance(1100);
    expect((await putPart(reservation, 2, partOf(reservation, file, 2), {}, bindings)).status).toBe(404);
    await runDurableObjectAlarm(coordinatorOf(owner.storeId));

    // R2 refuses parts of an aborted upload, and assembling it; its parts are gone.
    const aborted = env.BUCKET.resumeMultipartUpload(stagedKey(owner.storeId, reservation.id), r2UploadId);
    await expect(aborted.uploadPart(2, partOf(reservation, file, 2))).rejects.toThrow();
    await expect(aborted.complete([])).rejects.toThrow();
    expect(await env.BUCKET.head(stagedKey(owner.storeId, reservation.id))).toBeNull();
    const leftovers = await runInDurableObject(coordinatorOf(owner.storeId), (_instance, state) => ({
      uploads: state.storage.sql.exec("SELECT id FROM uploads WHERE id = ?", reservation.id).toArray().length,
      parts: state.storage.sql
        .exec("SELECT part_number FROM upload_parts WHERE upload_id = ?", reservation.id)
        .toArray().length,
    }));
    expect(leftovers).toEqual({ uploads: 0, parts: 0 });
    expect((await readUpload(owner, reservation.id, bindings)).status).toBe(404);
    expect((await completeWith(owner, reservation.id, bindings)).status).toBe(404);
  });
});

describe("limits of the part PUT", () => {
  it("part PUTs are not held to the 20 byte PUTs per minute: 30 from one IP all pass", async () => {
    const owner = await seedStore();
    const reservation = await reserveParts(owner, 10);
    const ip = freshIp();
    for (let i = 0; i < 30; i++) {
      const response = await putPart(reservation, 1, new Uint8Array(10), { "CF-Connecting-IP": ip });
      expect(response.status, `PUT ${i + 1}`).toBe(204);
      expect(response.headers.get("RateLimit-Policy")).toBe("600;w=60");
    }
  });

  it("PART_LIMIT_PER_MINUTE: the IP's part PUT past it answers 429 with Retry-After; another IP is unaffected", async () => {
    const owner = await seedStore();
    const bindings = multipartEnv({ PART_LIMIT_PER_MINUTE: "3" });
    const reservation = await reserveParts(owner, 10, bindings);
    const ip = freshIp();
    const send = (from: string) => putPart(reservation, 1, new Uint8Array(10), { "CF-Connecting-IP": from }, bindings);
    for (let i = 0; i < 3; i++) expect((await send(ip)).status).toBe(204);
    const refused = await send(ip);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("RateLimit-Policy")).toBe("3;w=60");
    const retryAfter = Number(refused.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(await json(refused)).toEqual({ message: `Too many requests, retry after ${retryAfter} seconds.` });
    expect((await send(freshIp())).status).toBe(204);
  });

  it("guessing stays slow: wrong tokens count toward the byte PUT limit, and once it is spent every part PUT of the IP answers 429, a right token's too", async () => {
    const owner = await seedStore();
    const bindings = multipartEnv({ PUT_LIMIT_PER_MINUTE: "3" });
    const reservation = await reserveParts(owner, 10, bindings);
    const ip = freshIp();
    const guess = (token: string) =>
      putPart(reservation, 1, new Uint8Array(10), { "CF-Connecting-IP": ip, "X-Upload-Token": token }, bindings);
    const wrong = `ut1.${owner.storeId}.${"B".repeat(43)}`;
    for (let i = 0; i < 3; i++) expect((await guess(wrong)).status, `guess ${i + 1}`).toBe(404);
    const spent = await guess(wrong);
    expect(spent.status).toBe(429);
    expect(spent.headers.get("RateLimit-Policy")).toBe("3;w=60");
    expect((await guess(reservation.upload_request.headers["X-Upload-Token"] as string)).status).toBe(429);
    // A single PUT of the same IP is refused as well: both count on one window.
    const single = await reserve(owner.token, owner.storeId, new Uint8Array(3));
    const singlePut = await callWith(bindings, `/media-uploads/${single.id}`, {
      method: "PUT",
      body: new Uint8Array(3),
      headers: { ...single.upload_request.headers, "CF-Connecting-IP": ip },
    });
    expect(singlePut.status).toBe(429);
    // Another IP's parts go on.
    expect(
      (await putPart(reservation, 1, new Uint8Array(10), { "CF-Connecting-IP": freshIp() }, bindings)).status,
    ).toBe(204);
  });

  it("round trips: a part PUT makes no D1 call and four Durable Object calls (two limits at once, begin, finish)", async () => {
    const owner = await seedStore();
    const reservation = await reserveParts(owner, 10, env);
    const { response, trips } = await countRoundTrips(`/media-uploads/${reservation.id}/parts/1`, {
      method: "PUT",
      body: new Uint8Array(10),
      headers: { ...reservation.upload_request.headers, "Content-Length": "10", "CF-Connecting-IP": freshIp() },
    });
    expect(response.status).toBe(204);
    expect(trips).toEqual({ d1: 0, durableObjects: 4 });
  });
});
