import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { mediaKey } from "../../src/storage/keys";
import { uploadMessages } from "../../src/uploads/messages";
import { completeLeaseMs } from "../../src/uploads/upload-state";
import { isolateClock } from "../support/clock";
import { seedStore, seedToken, uuid } from "../support/factories";
import { api, json, origin } from "../support/http";
import { gif, isoMedia, oggTheora, pdf, png, svg, truncatedPng, webm, zip } from "../support/media-bytes";
import {
  complete,
  coordinatorOf,
  host,
  notConvertedFields,
  putBytes,
  reserve,
  setUploadLimit,
  storedState,
} from "../support/uploads";

describe("POST /media-uploads/{id}/complete: what the sniffed bytes are hosted as", () => {
  it("complete rule 3 (docs/api.md, Complete): video bytes prepared as image host unchanged with type video (MP4, MOV, M4V, WebM, Ogg)", async () => {
    for (const [bytes, ext, mime] of [
      [isoMedia("isom"), "mp4", "video/mp4"],
      [isoMedia("qt  "), "mov", "video/quicktime"],
      [isoMedia("M4V "), "m4v", "video/x-m4v"],
      [webm(), "webm", "video/webm"],
      [oggTheora(), "ogv", "video/ogg"],
    ] as const) {
      const { storeId, reservation, response } = await host(bytes, {
        filename: `film.${ext}`,
        content_type: "image/jpeg",
      });
      expect(response.status, ext).toBe(201);
      expect(await json(response)).toEqual({
        name: `film.${ext}`,
        file_url: `${origin}/media/${storeId}/${reservation.id}.${ext}`,
        type: "video",
        ...notConvertedFields,
      });
      const served = await exports.default.fetch(`${origin}/media/${storeId}/${reservation.id}.${ext}`);
      expect(served.headers.get("Content-Type"), ext).toBe(mime);
      expect(new Uint8Array(await served.arrayBuffer())).toEqual(bytes);
    }
  });

  it("complete rule 1 (docs/api.md, Complete): type is sniffed from the bytes: an animated GIF named .mp4 is an image, hosted unchanged", async () => {
    const bytes = gif(2);
    const { storeId, reservation, response } = await host(bytes, { filename: "clip.mp4", content_type: "video/mp4" });
    expect(response.status).toBe(201);
    expect(await json(response)).toEqual({
      name: "clip.mp4",
      file_url: `${origin}/media/${storeId}/${reservation.id}.gif`,
      type: "image",
      ...notConvertedFields,
    });
  });

  it("complete rule 2 (docs/api.md, Complete): a still image prepared as image is converted to WebP (file_url ends in .webp)", async () => {
    const bytes = await png(300, 200);
    const { storeId, reservation, response } = await host(bytes, { filename: "baner.png", content_type: "image/png" });
    expect(response.status).toBe(201);
    const body = await json<{ file_url: string; type: string }>(response);
    const fileUrl = `${origin}/media/${storeId}/${reservation.id}.webp`;
    expect(body).toEqual({
      name: "baner.png",
      file_url: fileUrl,
      type: "image",
      width: 300,
      height: 200,
      srcset: `${fileUrl}?width=160 160w, ${fileUrl} 300w`,
      sources: [
        { type: "image/avif", srcset: `${fileUrl}?width=160&format=avif 160w, ${fileUrl}?format=avif 300w` },
        { type: "image/webp", srcset: `${fileUrl}?width=160 160w, ${fileUrl} 300w` },
      ],
      placeholder: expect.stringMatching(/^[A-Za-z0-9+/]+=*$/),
      placeholder_url: expect.stringMatching(/^data:image\/png;base64,/),
      dominant_color: expect.stringMatching(/^#[0-9a-f]{6}$/),
    });
    const stored = await env.BUCKET.get(mediaKey(storeId, reservation.id, "webp"));
    const head = new Uint8Array((await stored?.arrayBuffer()) ?? new ArrayBuffer(0)).subarray(0, 12);
    expect(new TextDecoder().decode(head.subarray(8, 12))).toBe("WEBP");
    expect(stored?.httpMetadata?.contentType).toBe("image/webp");
  });
});

describe("POST /media-uploads/{id}/complete: bytes that cannot be hosted", () => {
  it("HEIC or AVIF bytes under any declared type answer 422 with the convert-to-JPG-or-PNG message", async () => {
    for (const brand of ["heic", "avif"] as const) {
      const { response } = await host(isoMedia(brand), { filename: "photo.jpg", content_type: "image/jpeg" });
      expect(response.status).toBe(422);
      expect(await json(response)).toEqual({ message: uploadMessages.heif });
    }
  });

  it("PDF, ZIP and SVG prepared as image answer 422, stay stored, and completing again repeats the 422", async () => {
    for (const bytes of [pdf(), zip(), svg()]) {
      const { storeId, token, reservation, response } = await host(bytes, { content_type: "application/pdf" });
      expect(response.status).toBe(422);
      const first = await json(response);
      const status = await json(await api(`/media-uploads/${reservation.id}`, { token, store: storeId }));
      expect(status.state).toBe("stored");
      const again = await complete(token, storeId, reservation.id);
      expect(again.status).toBe(422);
      expect(await json(again)).toEqual(first);
      expect(await env.BUCKET.list({ prefix: `media/${storeId}/` }).then((l) => l.objects)).toEqual([]);
    }
  });

  it("corrupt image bytes (a PNG cut after its header) answer 422 cannot be hosted, nothing public written", async () => {
    const { storeId, response } = await host(await truncatedPng(), { content_type: "image/png" });
    expect(response.status).toBe(422);
    expect((await json<{ message: string }>(response)).message).toMatch(/cannot be hosted/);
    expect((await env.BUCKET.list({ prefix: `media/${storeId}/` })).objects).toEqual([]);
  });

  it("answers 422 naming the limit when the store's upload limit was lowered below the size after prepare; nothing is hosted and the upload stays stored", async () => {
    const { storeId, token } = await seedStore({ store: { upload_limit_bytes: 1_000_000 } });
    const bytes = isoMedia("isom");
    const reservation = await reserve(token, storeId, bytes, { content_type: "video/mp4" });
    expect((await putBytes(reservation, bytes)).status).toBe(204);
    const lowered = bytes.length - 1;
    await setUploadLimit(storeId, lowered);

    const refused = await complete(token, storeId, reservation.id);
    expect(refused.status).toBe(422);
    const body = await json<{ message: string }>(refused);
    expect(body).toEqual({ message: uploadMessages.sizeOverLimit(bytes.length, lowered) });
    expect(body.message).toContain(`${lowered} bytes`);
    expect((await env.BUCKET.list({ prefix: `media/${storeId}/` })).objects).toEqual([]);
    expect(await storedState(storeId, reservation.id)).toBe("stored");
    // The refusal is the limit's, not the bytes': once the limit allows them, complete hosts them.
    await setUploadLimit(storeId, bytes.length);
    expect((await complete(token, storeId, reservation.id)).status).toBe(201);
  });
});

describe("POST /media-uploads/{id}/complete: private files and the upload's state", () => {
  it("complete rule 4 (docs/api.md, Complete): prepare type file hosts the bytes privately with the sniffed type and a private locator", async () => {
    for (const [bytes, type] of [
      [pdf(), "file"],
      [zip(), "file"],
      [isoMedia("isom"), "video"],
      [gif(1), "image"],
      [svg(), "file"],
    ] as const) {
      const { storeId, token, reservation, response } = await host(bytes, {
        filename: "umowa/../final 📄.pdf",
        content_type: "application/pdf",
        type: "file",
      });
      expect(response.status).toBe(201);
      const body = await json<{ name: string; file_url: string; type: string }>(response);
      expect(body.name).toBe("umowa/../final 📄.pdf");
      expect(body.type).toBe(type);
      expect(body.file_url).toBe(
        `${origin}/files/${storeId}/${reservation.id}/${encodeURIComponent("umowa_.._final 📄.pdf")}`,
      );
      expect((await api(body.file_url.replace(`${origin}/api/v1`, ""), {})).status).not.toBe(200);
      const unsigned = await createApp().request(body.file_url, {}, env);
      expect(unsigned.status).toBe(403);
      void token;
    }
  });

  it("answers a complete before the bytes are stored 409", async () => {
    const { storeId, token } = await seedStore();
    const reservation = await reserve(token, storeId, new Uint8Array(5));
    const response = await complete(token, storeId, reservation.id);
    expect(response.status).toBe(409);
    expect(await json(response)).toEqual({
      message: "The bytes of this upload have not been stored yet; PUT them first.",
    });
  });

  it("answers a second complete 410", async () => {
    const { storeId, token, reservation, response } = await host(isoMedia("isom"), { content_type: "video/mp4" });
    expect(response.status).toBe(201);
    const again = await complete(token, storeId, reservation.id);
    expect(again.status).toBe(410);
    expect(await json(again)).toEqual({ message: "The upload has already been completed." });
  });

  it("race: two concurrent completes give exactly one 201", async () => {
    const { storeId, token } = await seedStore();
    const bytes = isoMedia("isom");
    const reservation = await reserve(token, storeId, bytes, { content_type: "video/mp4" });
    await putBytes(reservation, bytes);
    const results = await Promise.all([
      complete(token, storeId, reservation.id),
      complete(token, storeId, reservation.id),
    ]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses[0]).toBe(201);
    expect([409, 410]).toContain(statuses[1]);
  });
});

describe("POST /media-uploads/{id}/complete: ids, the store's limit and access", () => {
  it("answers unknown, other-store and malformed ids 404 / 404 / 400", async () => {
    const { storeId, token } = await seedStore();
    const other = await seedStore();
    const theirs = await reserve(other.token, other.storeId, new Uint8Array(3));
    for (const id of [uuid(), theirs.id]) {
      const response = await complete(token, storeId, id);
      expect(response.status).toBe(404);
      expect(await json(response)).toEqual({ message: `Upload with ID ${id} not found` });
    }
    const malformed = await complete(token, storeId, "nope");
    expect(malformed.status).toBe(400);
    expect(await json(malformed)).toEqual({ message: "Invalid upload ID." });
  });

  it("order: 429 comes before the malformed id; the store's 61st complete in a window is refused, another store's is not", async () => {
    const { storeId, token } = await seedStore();
    for (let call = 1; call <= 60; call++) {
      const response = await complete(token, storeId, uuid());
      expect(response.status, `call ${call}`).toBe(404);
    }
    const refused = await complete(token, storeId, "not-a-uuid");
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(await json(refused)).toEqual({ message: `Too many requests, retry after ${retryAfter} seconds.` });
    const other = await seedStore();
    expect((await complete(other.token, other.storeId, uuid())).status).toBe(404);
  }, 30_000);

  it("needs media:write and X-Service-Store", async () => {
    const { storeId } = await seedStore();
    const reader = await seedToken([storeId], ["products:read"]);
    expect((await complete(reader, storeId, uuid())).status).toBe(403);
    const { token } = await seedStore();
    expect((await api(`/media-uploads/${uuid()}/complete`, { method: "POST", token })).status).toBe(400);
  });
});

describe("POST /media-uploads/{id}/complete: a complete whose process died", () => {
  // The coordinator reads the lease's end from Date.now() in this isolate: the test moves that clock.
  const clock = isolateClock();

  it("holds the upload (409 being processed) for the lease, seconds not minutes; then a retry of complete hosts it", async () => {
    expect(completeLeaseMs).toBeLessThanOrEqual(15_000);
    const { storeId, token } = await seedStore();
    const bytes = isoMedia("isom");
    const reservation = await reserve(token, storeId, bytes, { content_type: "video/mp4" });
    expect((await putBytes(reservation, bytes)).status).toBe(204);
    // How far a complete gets before its isolate is killed over memory or CPU, or the runtime restarts:
    // begun, never finished nor abandoned, and no longer renewing its lease.
    expect((await coordinatorOf(storeId).beginComplete(reservation.id)).ok).toBe(true);
    const blocked = await complete(token, storeId, reservation.id);
    expect(blocked.status).toBe(409);
    expect(await json(blocked)).toEqual({ message: "This upload is being processed by another request." });
    clock.advance(completeLeaseMs - 1000);
    expect((await complete(token, storeId, reservation.id)).status).toBe(409);

    clock.advance(1000);
    const retried = await complete(token, storeId, reservation.id);
    expect(retried.status).toBe(201);
    expect(await json(retried)).toEqual({
      name: "plik.bin",
      file_url: `${origin}/media/${storeId}/${reservation.id}.mp4`,
      type: "video",
      ...notConvertedFields,
    });
  });
});
