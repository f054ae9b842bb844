import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { mediaKey, stagedKey } from "../../src/storage/keys";
import { uploadMessages } from "../../src/uploads/messages";
import { seedStore, uuid } from "../support/factories";
import { json, origin } from "../support/http";
import {
  completeWith,
  digest,
  prepareWith,
  putAllParts,
  readUpload,
  type Status,
  servedDigest,
  threeParts,
} from "../support/multipart";
import { poll } from "../support/poll";
import {
  callWith,
  freshIp,
  MiB,
  type MultipartReservation,
  mp4OfSize,
  multipartEnv,
  notConvertedFields,
  partOf,
  putBytes,
  putPart,
  reserve,
  reserveParts,
} from "../support/uploads";

afterEach(() => {
  vi.restoreAllMocks();
});

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
    const over = await prepareWith(
      owner,
      { filename: "a.mp4", content_type: "video/mp4", size: 5 * MiB + 1, multipart: false },
      bindings,
    );
    expect(over.status).toBe(201);
    expect((await json<MultipartReservation>(over)).multipart).toMatchObject({ part_size: 5 * MiB, part_count: 2 });
    const at = await prepareWith(owner, { filename: "a.mp4", content_type: "video/mp4", size: 5 * MiB }, bindings);
    expect(at.status).toBe(201);
    const single = await json<Record<string, unknown>>(at);
    expect(single).not.toHaveProperty("multipart");
    expect(single.upload_request).toMatchObject({ headers: { "Content-Length": String(5 * MiB) } });
  });

  it("defaults: the ceiling is 100,000,000 bytes and parts are 8 MiB; a store's limit can be raised past the ceiling", async () => {
    const owner = await seedStore({ store: { upload_limit_bytes: 5_000_000_000 } });
    const body = { filename: "4k.mov", content_type: "video/quicktime" };
    const single = await prepareWith(owner, { ...body, size: 100_000_000 }, env);
    expect(single.status).toBe(201);
    expect(await json(single)).not.toHaveProperty("multipart");
    const above = await prepareWith(owner, { ...body, size: 100_000_001 }, env);
    expect(above.status).toBe(201);
    expect((await json<MultipartReservation>(above)).multipart).toMatchObject({ part_size: 8 * MiB, part_count: 12 });
    const fiveGb = await prepareWith(owner, { ...body, size: 5_000_000_000 }, env);
    expect(fiveGb.status).toBe(201);
    expect((await json<MultipartReservation>(fiveGb)).multipart).toMatchObject({ part_size: 8 * MiB, part_count: 597 });
  });

  it("a file that would need more than 10,000 parts within the ceiling answers 422 errors.size; parts grow first", async () => {
    const owner = await seedStore({ store: { upload_limit_bytes: 10 ** 12 } });
    // 100 GB in 8 MiB parts would be 11,921 parts: they grow to 10 MiB, 9,537 of them.
    const grown = await prepareWith(owner, { filename: "a.mp4", content_type: "video/mp4", size: 10 ** 11 }, env);
    expect(grown.status).toBe(201);
    expect((await json<MultipartReservation>(grown)).multipart).toMatchObject({
      part_size: 10 * MiB,
      part_count: 9537,
    });
    // Parts may not outgrow one request body: at a 6 MiB ceiling, 10,000 parts hold at most 60,000 MiB.
    const bindings = multipartEnv({ SINGLE_PUT_LIMIT_BYTES: String(6 * MiB) });
    const tooLarge = await prepareWith(
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
    const response = await prepareWith(
      owner,
      { filename: "a.mp4", content_type: "video/mp4", size: 10, multipart: "yes" },
      multipartEnv(),
    );
    expect(response.status).toBe(422);
    expect(Object.keys((await json<{ errors: object }>(response)).errors)).toEqual(["multipart"]);
  });
});

describe("PUT /media-uploads/{id}/parts/{part_number}: order and retries", () => {
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
      ...notConvertedFields,
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
});

describe("PUT /media-uploads/{id}/parts/{part_number}: refusals", () => {
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
});

describe("PUT /media-uploads/{id}/parts/{part_number}: the order of refusals, and a part in flight", () => {
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
    const second = await poll(
      () => putPart(reservation, 1, new Uint8Array(10)),
      (answer) => answer.status === 409,
      { intervalMs: 20, timeoutMs: 3_000, what: "a second PUT of the part refused" },
    );
    expect(second.status).toBe(409);
    expect(await second.json()).toEqual({ message: "Part 1 of this upload is being stored by another request." });
    release();
    const cut = await first;
    expect(cut.status).toBe(400);
    expect(await json(cut)).toEqual({ message: uploadMessages.bodyLength });
    expect((await json<Status>(await readUpload(owner, reservation.id))).parts).toEqual([]);
    expect((await putPart(reservation, 1, new Uint8Array(10))).status).toBe(204);
  });
});
