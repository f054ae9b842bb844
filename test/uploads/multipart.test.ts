import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { mediaKey, stagedKey } from "../../src/storage/keys";
import { uploadMessages } from "../../src/uploads/messages";
import { leaseMs } from "../../src/uploads/upload-state";
import { isolateClock } from "../support/clock";
import { seedStore, uuid } from "../support/factories";
import { json, origin } from "../support/http";
import { countRoundTrips } from "../support/round-trips";
import {
  callWith,
  freshIp,
  MiB,
  type MultipartReservation,
  mp4OfSize,
  multipartEnv,
  partOf,
  putBytes,
  putPart,
  reserve,
  reserveParts,
} from "../support/uploads";

/** 11 MiB + 5 bytes: with the tests' 5 MiB ceiling, parts of 5 MiB, 5 MiB and 1 MiB + 5 bytes. */
const threeParts = 11 * MiB + 5;

type Status = {
  id: string;
  state: string;
  expires_at: string;
  multipart?: { part_size: number; part_count: number; part_url: string };
  parts?: { part_number: number; size: number; etag: string }[];
};

const bearer = (owner: { storeId: string; token: string }) => ({
  Authorization: `Bearer ${owner.token}`,
  "X-Service-Store": owner.storeId,
});

const readUpload = async (owner: { storeId: string; token: string }, id: string, bindings = multipartEnv()) =>
  callWith(bindings, `/media-uploads/${id}`, { headers: bearer(owner) });

const completeWith = (owner: { storeId: string; token: string }, id: string, bindings = multipartEnv()) =>
  callWith(bindings, `/media-uploads/${id}/complete`, { method: "POST", headers: bearer(owner) });

async function prepare(owner: { storeId: string; token: string }, body: Record<string, unknown>, bindings: Env) {
  return callWith(bindings, "/media-uploads", {
    method: "POST",
    headers: { ...bearer(owner), "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** Sends every part of `file`, in order, and expects each 204. */
async function putAllParts(reservation: MultipartReservation, file: Uint8Array) {
  for (let n = 1; n <= reservation.multipart.part_count; n++) {
    expect((await putPart(reservation, n, partOf(reservation, file, n))).status, `part ${n}`).toBe(204);
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

const coordinatorOf = (storeId: string) => env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));

const r2UploadIdOf = (storeId: string, id: string) =>
  runInDurableObject(
    coordinatorOf(storeId),
    (_instance, state) =>
      state.storage.sql.exec<{ r2: string | null }>("SELECT r2_upload_id AS r2 FROM uploads WHERE id = ?", id).one().r2,
  );

/** SHA-256 of some bytes, hex: large files compare by digest (a failed comparison of 11 MiB arrays would print them). */
async function digest(bytes: Uint8Array): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...hash].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The digest of what the public media route serves for the upload, as a client downloads it. */
async function servedDigest(storeId: string, id: string, ext: string) {
  const response = await callWith(multipartEnv(), `${origin}/media/${storeId}/${id}.${ext}`);
  expect(response.status).toBe(200);
  return digest(new Uint8Array(await response.arrayBuffer()));
}

describe("prepare: multipart reservations", () => {
  it("multipart: true answers the plan (5 MiB parts at a 5 MiB ceiling, the last the rest) and upload_request without Content-Length", async () => {
    const owner = await seedStore();
    const reservation = await reserveParts(owner, threeParts);
    const url = `${origin}/api/v1/media-uploads/${reservation.id}`;
    expect(reservation.multipart).toEqual({
      part_size: 5 * MiB,
      part_count: 3,
      part_url: `${url}/parts/{part_number}`,
    });
    expect(reservation.upload_request).toEqual({
      method: "PUT",
      url,
      headers: { "X-Upload-Token": expect.stringMatching(/^ut1\./), "Content-Type": "video/mp4" },
    });
  });

  it("a size above the single-PUT ceiling is multipart whatever the body says; at the ceiling it is one PUT", async () => {
    const owner = await seedStore();
    const bindings = multipartEnv();
    const over = await prepare(
      owner,
      { filename: "a.mp4", content_type: "video/mp4", size: 5 * MiB + 1, multipart: false },
      bindings,
    );
    expect(over.status).toBe(201);
    expect((await json<MultipartReservation>(over)).multipart).toMatchObject({ part_size: 5 * MiB, part_count: 2 });
    const at = await prepare(owner, { filename: "a.mp4", content_type: "video/mp4", size: 5 * MiB }, bindings);
    expect(at.status).toBe(201);
    const single = await json<Record<string, unknown>>(at);
    expect(single).not.toHaveProperty("multipart");
    expect(single.upload_request).toMatchObject({ headers: { "Content-Length": String(5 * MiB) } });
  });

  it("defaults: the ceiling is 100,000,000 bytes and parts are 8 MiB; a store's limit can be raised past the ceiling", async () => {
    const owner = await seedStore({ store: { upload_limit_bytes: 5_000_000_000 } });
    const body = { filename: "4k.mov", content_type: "video/quicktime" };
    const single = await prepare(owner, { ...body, size: 100_000_000 }, env);
    expect(single.status).toBe(201);
    expect(await json(single)).not.toHaveProperty("multipart");
    const above = await prepare(owner, { ...body, size: 100_000_001 }, env);
    expect(above.status).toBe(201);
    expect((await json<MultipartReservation>(above)).multipart).toMatchObject({ part_size: 8 * MiB, part_count: 12 });
    const fiveGb = await prepare(owner, { ...body, size: 5_000_000_000 }, env);
    expect(fiveGb.status).toBe(201);
    expect((await json<MultipartReservation>(fiveGb)).multipart).toMatchObject({ part_size: 8 * MiB, part_count: 597 });
  });

  it("a file that would need more than 10,000 parts within the ceiling answers 422 errors.size; parts grow first", async () => {
    const owner = await seedStore({ store: { upload_limit_bytes: 10 ** 12 } });
    // 100 GB in 8 MiB parts would be 11,921 parts: they grow to 10 MiB, 9,537 of them.
    const grown = await prepare(owner, { filename: "a.mp4", content_type: "video/mp4", size: 10 ** 11 }, env);
    expect(grown.status).toBe(201);
    expect((await json<MultipartReservation>(grown)).multipart).toMatchObject({
      part_size: 10 * MiB,
      part_count: 9537,
    });
    // Parts may not outgrow one request body: at a 6 MiB ceiling, 10,000 parts hold at most 60,000 MiB.
    const bindings = multipartEnv({ SINGLE_PUT_LIMIT_BYTES: String(6 * MiB) });
    const tooLarge = await prepare(
      owner,
      { filename: "a.mp4", content_type: "video/mp4", size: 10_000 * 6 * MiB + 1 },
      bindings,
    );
    expect(tooLarge.status).toBe(422);
    expect(await json(tooLarge)).toEqual({
      message: "The given data was invalid.",
      errors: { size: [uploadMessages.tooManyParts(10_000, 6 * MiB)] },
    });
  });

  it("validates multipart as a boolean (422 errors.multipart)", async () => {
    const owner = await seedStore();
    const response = await prepare(
      owner,
      { filename: "a.mp4", content_type: "video/mp4", size: 10, multipart: "yes" },
      multipartEnv(),
    );
    expect(response.status).toBe(422);
    expect(Object.keys((await json<{ errors: object }>(response)).errors)).toEqual(["multipart"]);
  });
});

describe("PUT /media-uploads/{id}/parts/{part_number}", () => {
  it("order: parts in any order and in parallel, each 204 with its ETag; GET lists them sorted; complete hosts the exact bytes", async () => {
    const owner = await seedStore();
    const file = mp4OfSize(threeParts, 7);
    const reservation = await reserveParts(owner, file.length);
    const responses = await Promise.all(
      [3, 1, 2].map(async (n) => [n, await putPart(reservation, n, partOf(reservation, file, n))] as const),
    );
    const etags = new Map<number, string>();
    for (const [n, response] of responses) {
      expect(response.status, `part ${n}`).toBe(204);
      expect(await response.text()).toBe("");
      etags.set(n, response.headers.get("ETag") as string);
    }
    expect(new Set(etags.values()).size).toBe(3);

    const status = await json<Status>(await readUpload(owner, reservation.id));
    expect(status).toMatchObject({ state: "stored", multipart: reservation.multipart });
    expect(status.parts).toEqual([
      { part_number: 1, size: 5 * MiB, etag: etags.get(1) },
      { part_number: 2, size: 5 * MiB, etag: etags.get(2) },
      { part_number: 3, size: MiB + 5, etag: etags.get(3) },
    ]);

    const completed = await completeWith(owner, reservation.id);
    expect(completed.status).toBe(201);
    expect(await json(completed)).toEqual({
      name: "film.mp4",
      file_url: `${origin}/media/${owner.storeId}/${reservation.id}.mp4`,
      type: "video",
      width: null,
      height: null,
      srcset: null,
      sources: null,
      placeholder: null,
      placeholder_url: null,
      dominant_color: null,
    });
    expect(await servedDigest(owner.storeId, reservation.id, "mp4")).toBe(await digest(file));
    // Hosted in place: the assembled bytes stay where the parts became one object, the hosted key names them.
    expect((await env.BUCKET.head(stagedKey(owner.storeId, reservation.id)))?.size).toBe(file.length);
    expect((await env.BUCKET.head(mediaKey(owner.storeId, reservation.id, "mp4")))?.size).toBe(0);
    const after = await json<Status>(await readUpload(owner, reservation.id));
    expect(after).toMatchObject({ state: "completed", parts: [] });
  });

  it("retry of a part: a part sent again replaces the earlier one (new ETag, the new bytes are hosted)", async () => {
    const owner = await seedStore();
    const first = mp4OfSize(threeParts, 1);
    const second = mp4OfSize(threeParts, 2);
    const reservation = await reserveParts(owner, first.length);
    await putAllParts(reservation, first);
    const before = await json<Status>(await readUpload(owner, reservation.id));

    const again = await putPart(reservation, 2, partOf(reservation, second, 2));
    expect(again.status).toBe(204);
    const etag = again.headers.get("ETag");
    expect(etag).not.toBe(before.parts?.[1]?.etag);
    const after = await json<Status>(await readUpload(owner, reservation.id));
    expect(after.parts?.map((part) => part.etag)).toEqual([before.parts?.[0]?.etag, etag, before.parts?.[2]?.etag]);

    expect((await completeWith(owner, reservation.id)).status).toBe(201);
    const expected = Uint8Array.from(first);
    expected.set(partOf(reservation, second, 2), 5 * MiB);
    expect(await servedDigest(owner.storeId, reservation.id, "mp4")).toBe(await digest(expected));
  });

  it("answers a wrong Content-Length or Content-Type 422, a part number outside 1..part_count 422 errors.part_number, and a malformed one 400", async () => {
    const owner = await seedStore();
    const file = mp4OfSize(threeParts);
    const reservation = await reserveParts(owner, file.length);
    const part3 = partOf(reservation, file, 3);

    const short = await putPart(reservation, 1, part3);
    expect(short.status).toBe(422);
    expect(await json(short)).toEqual({
      message: `The Content-Length does not match the size of part 1, ${5 * MiB} bytes.`,
    });
    const type = await putPart(reservation, 3, part3, { "Content-Type": "image/png" });
    expect(type.status).toBe(422);
    expect(await json(type)).toEqual({
      message: "The Content-Type does not match the reserved content type video/mp4.",
    });
    for (const n of [0, 4]) {
      const outside = await putPart(reservation, n, part3);
      expect(outside.status, `part ${n}`).toBe(422);
      expect(await json(outside)).toEqual({
        message: "The given data was invalid.",
        errors: { part_number: ["The part number must be an integer between 1 and 3."] },
      });
    }
    for (const n of ["abc", "-1", "1.5"]) {
      const malformed = await putPart(reservation, n, part3);
      expect(malformed.status, n).toBe(400);
      expect(await json(malformed)).toEqual({ message: uploadMessages.invalidPartNumber });
    }
    // Nothing of it was stored, and the part takes its right length afterwards.
    expect((await json<Status>(await readUpload(owner, reservation.id))).parts).toEqual([]);
    expect((await putPart(reservation, 3, part3)).status).toBe(204);
  });

  it("answers no token 401, a malformed id 400, an unknown id or a wrong token 404, as the byte PUT does", async () => {
    const owner = await seedStore();
    const reservation = await reserveParts(owner, threeParts);
    const body = new Uint8Array(5 * MiB);
    const noToken = await putPart(reservation, 1, body, { "X-Upload-Token": "" });
    expect(noToken.status).toBe(401);
    expect(await json(noToken)).toEqual({ message: uploadMessages.tokenRequired });
    const malformed = await callWith(multipartEnv(), `/media-uploads/not-a-uuid/parts/1`, {
      method: "PUT",
      body,
      headers: { ...reservation.upload_request.headers, "CF-Connecting-IP": freshIp() },
    });
    expect(malformed.status).toBe(400);
    expect(await json(malformed)).toEqual({ message: "Invalid upload ID." });
    const token = reservation.upload_request.headers["X-Upload-Token"] as string;
    const wrongToken = token.replace(/.$/, (c) => (c === "A" ? "B" : "A"));
    for (const headers of [{ "X-Upload-Token": wrongToken }, { "X-Upload-Token": "garbage" }]) {
      const refused = await putPart(reservation, 1, body, headers);
      expect(refused.status).toBe(404);
      expect(await json(refused)).toEqual({ message: `Upload with ID ${reservation.id} not found` });
    }
    const unknownId = uuid();
    const unknown = await callWith(multipartEnv(), `/media-uploads/${unknownId}/parts/1`, {
      method: "PUT",
      body,
      headers: { ...reservation.upload_request.headers, "CF-Connecting-IP": freshIp() },
    });
    expect(unknown.status).toBe(404);
    expect(await json(unknown)).toEqual({ message: `Upload with ID ${unknownId} not found` });
  });

  it("order: a wrong token is 404 before a wrong length (422); a completed upload is 409 before a bad part number (422)", async () => {
    const owner = await seedStore();
    const file = mp4OfSize(threeParts);
    const reservation = await reserveParts(owner, file.length);
    const wrong = await putPart(reservation, 9, new Uint8Array(3), {
      "X-Upload-Token": `ut1.${owner.storeId}.${"A".repeat(43)}`,
    });
    expect(wrong.status).toBe(404);
    await putAllParts(reservation, file);
    expect((await completeWith(owner, reservation.id)).status).toBe(201);
    const late = await putPart(reservation, 9, new Uint8Array(3));
    expect(late.status).toBe(409);
    expect(await json(late)).toEqual({ message: "The bytes of this upload are already stored." });
  });

  it("a part PUT of a single-PUT upload and a single PUT of a multipart upload answer 409 naming the right way", async () => {
    const owner = await seedStore();
    const single = await reserve(owner.token, owner.storeId, new Uint8Array(10));
    const asPart = await putPart(
      {
        ...single,
        multipart: { part_size: 10, part_count: 1, part_url: `${single.upload_request.url}/parts/{part_number}` },
      },
      1,
      new Uint8Array(10),
    );
    expect(asPart.status).toBe(409);
    expect(await json(asPart)).toEqual({
      message: "This upload takes its bytes in one PUT to upload_request.url, not in parts.",
    });
    const reservation = await reserveParts(owner, 10);
    const whole = await putBytes(reservation, new Uint8Array(10), { "Content-Length": "10" });
    expect(whole.status).toBe(409);
    expect(await json(whole)).toEqual({
      message: "This upload takes its bytes in parts: PUT each part to multipart.part_url.",
    });
  });

  it("a second PUT of a part in flight answers 409; a body shorter than its Content-Length stores nothing (400) and the part can be sent again", async () => {
    const owner = await seedStore();
    const reservation = await reserveParts(owner, 10);
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new Uint8Array(4));
        await held;
        controller.close(); // 4 of 10 bytes
      },
    });
    const first = putPart(reservation, 1, slow, { "Content-Length": "10" });
    // The first PUT holds the part once its begin went through; poll until the second one sees it.
    let second: Response | undefined;
    for (let attempt = 0; attempt < 50; attempt++) {
      second = await putPart(reservation, 1, new Uint8Array(10));
      if (second.status === 409) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(second?.status).toBe(409);
    expect(await second?.json()).toEqual({ message: "Part 1 of this upload is being stored by another request." });
    release();
    const cut = await first;
    expect(cut.status).toBe(400);
    expect(await json(cut)).toEqual({ message: uploadMessages.bodyLength });
    expect((await json<Status>(await readUpload(owner, reservation.id))).parts).toEqual([]);
    expect((await putPart(reservation, 1, new Uint8Array(10))).status).toBe(204);
  });
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
    const response = await prepare(
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

  describe("with the isolate's clock in the test's hand", () => {
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
      expect((await json<Status>(await readUpload(owner, reservation.id))).parts?.map((p) => p.part_number)).toEqual([
        2,
      ]);
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
