import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { sha256Hex } from "../../src/lib/crypto";
import { mediaKey, stagedKey } from "../../src/storage/keys";
import { uploadMessages } from "../../src/uploads/messages";
import { storeBytes } from "../../src/uploads/put/store-bytes";
import { completeLeaseMs, leaseMs } from "../../src/uploads/upload-state";
import { isolateClock } from "../support/clock";
import { seedStore, seedToken, storeD1, uuid } from "../support/factories";
import { api, json, origin } from "../support/http";
import { gif, isoMedia, oggTheora, pdf, png, svg, truncatedPng, webm, zip } from "../support/media-bytes";

type Reservation = {
  id: string;
  expires_at: string;
  upload_request: { method: string; url: string; headers: Record<string, string> };
};

let ipCounter = 0;
/** A fresh client IP per call site, so the per-IP PUT limit of one test never touches another. */
const freshIp = () => `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter++ & 255}`;

async function prepare(token: string, store: string, body: Record<string, unknown>) {
  return api("/media-uploads", { method: "POST", token, store, body });
}

async function reserve(token: string, store: string, bytes: Uint8Array, options: Record<string, unknown> = {}) {
  const response = await prepare(token, store, {
    filename: "plik.bin",
    content_type: "application/octet-stream",
    size: bytes.length,
    ...options,
  });
  expect(response.status).toBe(201);
  return json<Reservation>(response);
}

function putBytes(
  reservation: Reservation,
  body: BodyInit | null,
  headers: Record<string, string> = {},
  ip = freshIp(),
) {
  return api(`/media-uploads/${reservation.id}`, {
    method: "PUT",
    rawBody: body ?? undefined,
    headers: { ...reservation.upload_request.headers, "CF-Connecting-IP": ip, ...headers },
  });
}

const coordinatorOf = (storeId: string) => env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));

/** The upload's stored state as its coordinator keeps it (`storing` and `processing` included). */
const storedState = (storeId: string, id: string) =>
  runInDurableObject(
    coordinatorOf(storeId),
    (_instance, state) =>
      state.storage.sql.exec<{ state: string }>("SELECT state FROM uploads WHERE id = ?", id).one().state,
  );

/** As the platform changes a store: its row in the global database and its copy in the store's home, which the API reads. */
async function setUploadLimit(storeId: string, bytes: number) {
  for (const db of new Set([env.DB, await storeD1(storeId)])) {
    await db.prepare("UPDATE stores SET upload_limit_bytes = ? WHERE id = ?").bind(bytes, storeId).run();
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

const complete = (token: string, store: string, id: string) =>
  api(`/media-uploads/${id}/complete`, { method: "POST", token, store });

/** Prepare, PUT and complete in one go; answers the complete response. */
async function host(bytes: Uint8Array, options: Record<string, unknown> = {}) {
  const { storeId, token } = await seedStore();
  const reservation = await reserve(token, storeId, bytes, options);
  const put = await putBytes(reservation, bytes);
  expect(put.status).toBe(204);
  return { storeId, token, reservation, response: await complete(token, storeId, reservation.id) };
}

describe("POST /media-uploads (prepare)", () => {
  it("reserves an upload: 201 with id, expires_at 15 minutes ahead and an absolute PUT request", async () => {
    const { storeId, token } = await seedStore();
    const before = Date.now();
    const response = await prepare(token, storeId, { filename: "okładka.jpg", content_type: "image/jpeg", size: 1234 });
    expect(response.status).toBe(201);
    const body = await json<Reservation>(response);
    expect(body.id).toMatch(/^[0-9a-f-]{36}$/);
    const expires = Date.parse(body.expires_at);
    expect(expires - before).toBeGreaterThanOrEqual(900_000 - 1000);
    expect(expires - before).toBeLessThanOrEqual(900_000 + 5000);
    expect(body.upload_request).toEqual({
      method: "PUT",
      url: `${origin}/api/v1/media-uploads/${body.id}`,
      headers: { "X-Upload-Token": expect.any(String), "Content-Type": "image/jpeg", "Content-Length": "1234" },
    });
  });

  it("gives every upload its own token", async () => {
    const { storeId, token } = await seedStore();
    const a = await reserve(token, storeId, new Uint8Array(3));
    const b = await reserve(token, storeId, new Uint8Array(3));
    expect(a.upload_request.headers["X-Upload-Token"]).not.toBe(b.upload_request.headers["X-Upload-Token"]);
    // A's token does not authorize B.
    const crossed = await putBytes(b, new Uint8Array(3), {
      "X-Upload-Token": a.upload_request.headers["X-Upload-Token"] as string,
    });
    expect(crossed.status).toBe(404);
  });

  it("refuses HEIC, HEIF and AVIF (any case, parameters ignored) with 422 saying to convert to JPG or PNG", async () => {
    const { storeId, token } = await seedStore();
    for (const type of ["image/heic", "IMAGE/HEIF", "image/avif; q=1"]) {
      const response = await prepare(token, storeId, { filename: "a.heic", content_type: type, size: 10 });
      expect(response.status, type).toBe(422);
      const body = await json<{ message: string; errors: Record<string, string[]> }>(response);
      expect(body.message).toMatch(/convert the image to JPG or PNG/);
      expect(body.errors.content_type).toHaveLength(1);
    }
  });

  it("refuses an SVG prepared as image but accepts it as file", async () => {
    const { storeId, token } = await seedStore();
    const asImage = await prepare(token, storeId, { filename: "logo.svg", content_type: "image/svg+xml", size: 10 });
    expect(asImage.status).toBe(422);
    expect((await json<{ errors: object }>(asImage)).errors).toHaveProperty("content_type");
    const asFile = await prepare(token, storeId, {
      filename: "logo.svg",
      content_type: "image/svg+xml",
      size: 10,
      type: "file",
    });
    expect(asFile.status).toBe(201);
  });

  it("validates every field: 422 The given data was invalid. with errors.<field>", async () => {
    const { storeId, token } = await seedStore({ store: { upload_limit_bytes: 5000 } });
    const cases: [Record<string, unknown>, string][] = [
      [{ content_type: "image/png", size: 1 }, "filename"],
      [{ filename: "", content_type: "image/png", size: 1 }, "filename"],
      [{ filename: "x".repeat(256), content_type: "image/png", size: 1 }, "filename"],
      [{ filename: "a.png", size: 1 }, "content_type"],
      [{ filename: "a.png", content_type: "png", size: 1 }, "content_type"],
      [{ filename: "a.png", content_type: "image/png" }, "size"],
      [{ filename: "a.png", content_type: "image/png", size: 0 }, "size"],
      [{ filename: "a.png", content_type: "image/png", size: 1.5 }, "size"],
      [{ filename: "a.png", content_type: "image/png", size: "10" }, "size"],
      [{ filename: "a.png", content_type: "image/png", size: 5001 }, "size"],
      [{ filename: "a.png", content_type: "image/png", size: 1, type: "video" }, "type"],
    ];
    for (const [body, field] of cases) {
      const response = await prepare(token, storeId, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      const parsed = await json<{ message: string; errors: Record<string, string[]> }>(response);
      expect(parsed.message).toBe("The given data was invalid.");
      expect(Object.keys(parsed.errors), JSON.stringify(body)).toEqual([field]);
    }
    expect((await prepare(token, storeId, { filename: "a.png", content_type: "image/png", size: 5000 })).status).toBe(
      201,
    );
  });

  it("uses the default store limit of 100,000,000 bytes when the store sets none", async () => {
    const { storeId, token } = await seedStore();
    expect(
      (await prepare(token, storeId, { filename: "v.mp4", content_type: "video/mp4", size: 100_000_000 })).status,
    ).toBe(201);
    const over = await prepare(token, storeId, { filename: "v.mp4", content_type: "video/mp4", size: 100_000_001 });
    expect(over.status).toBe(422);
  });

  it("keeps filenames with ../, slashes, control characters and emoji exactly as sent", async () => {
    const { storeId, token } = await seedStore();
    for (const filename of ["../../etc/passwd", "a/b\\c.png", "tab\there\u0007.png", "zdjęcie 🎉.png"]) {
      expect((await prepare(token, storeId, { filename, content_type: "image/png", size: 10 })).status, filename).toBe(
        201,
      );
    }
  });

  it("needs the X-Service-Store header (400), a store the token may act on (403) and media:write (403)", async () => {
    const { storeId, token } = await seedStore();
    const body = { body: { filename: "a.png", content_type: "image/png", size: 1 }, method: "POST" } as const;
    const missing = await api("/media-uploads", { ...body, token });
    expect(missing.status).toBe(400);
    expect(await json(missing)).toEqual({ message: "The X-Service-Store header is required." });
    const other = await seedStore();
    expect((await api("/media-uploads", { ...body, token, store: other.storeId })).status).toBe(403);
    const reader = await seedToken([storeId], ["products:read"]);
    const refused = await api("/media-uploads", { ...body, token: reader, store: storeId });
    expect(refused.status).toBe(403);
    expect(await json(refused)).toEqual({ message: "This action is unauthorized." });
  });

  it("answers malformed JSON 400 and a non-JSON body 415", async () => {
    const { storeId, token } = await seedStore();
    const malformed = await api("/media-uploads", {
      method: "POST",
      token,
      store: storeId,
      rawBody: "{",
      headers: { "Content-Type": "application/json" },
    });
    expect(malformed.status).toBe(400);
    expect(await json(malformed)).toEqual({ message: "Malformed JSON body." });
    const array = await api("/media-uploads", { method: "POST", token, store: storeId, body: [1] });
    expect(array.status).toBe(400);
    const text = await api("/media-uploads", {
      method: "POST",
      token,
      store: storeId,
      rawBody: "filename=a",
      headers: { "Content-Type": "text/plain" },
    });
    expect(text.status).toBe(415);
  });

  it("refuses a huge JSON body 413 before parsing it", async () => {
    const { storeId, token } = await seedStore();
    const response = await api("/media-uploads", {
      method: "POST",
      token,
      store: storeId,
      rawBody: JSON.stringify({ filename: "x".repeat(2_000_000) }),
      headers: { "Content-Type": "application/json" },
    });
    expect(response.status).toBe(413);
  });
});

describe("PUT /media-uploads/{id} (the bytes)", () => {
  it("stores matching bytes: 204, empty body, and the upload is stored", async () => {
    const { storeId, token } = await seedStore();
    const bytes = isoMedia("isom");
    const reservation = await reserve(token, storeId, bytes, { content_type: "video/mp4" });
    const response = await putBytes(reservation, bytes);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    const status = await json(await api(`/media-uploads/${reservation.id}`, { token, store: storeId }));
    expect(status).toMatchObject({ id: reservation.id, state: "stored", result: null });
    const staged = await env.BUCKET.get(stagedKey(storeId, reservation.id));
    expect(new Uint8Array((await staged?.arrayBuffer()) ?? new ArrayBuffer(0))).toEqual(bytes);
  });

  it("needs no Authorization and ignores X-Service-Store", async () => {
    const { storeId, token } = await seedStore();
    const reservation = await reserve(token, storeId, new Uint8Array(5));
    const response = await putBytes(reservation, new Uint8Array(5), { "X-Service-Store": "not-a-store" });
    expect(response.status).toBe(204);
  });

  it("answers a PUT without X-Upload-Token 401 saying the upload token is required", async () => {
    const response = await api(`/media-uploads/${uuid()}`, {
      method: "PUT",
      rawBody: new Uint8Array(3),
      headers: { "CF-Connecting-IP": freshIp() },
    });
    expect(response.status).toBe(401);
    expect(await json(response)).toEqual({ message: uploadMessages.tokenRequired });
  });

  it("answers a malformed id 400 Invalid upload ID. (after the token check)", async () => {
    const response = await api("/media-uploads/not-a-uuid", {
      method: "PUT",
      rawBody: new Uint8Array(3),
      headers: { "X-Upload-Token": "x", "CF-Connecting-IP": freshIp() },
    });
    expect(response.status).toBe(400);
    expect(await json(response)).toEqual({ message: "Invalid upload ID." });
  });

  it("answers an unknown id, a wrong token and a garbage token 404 Upload with ID <id> not found", async () => {
    const { storeId, token } = await seedStore();
    const reservation = await reserve(token, storeId, new Uint8Array(5));
    const wrong = reservation.upload_request.headers["X-Upload-Token"]?.replace(/.$/, (c) => (c === "A" ? "B" : "A"));
    for (const [id, headers] of [
      [uuid(), {}],
      [reservation.id, { "X-Upload-Token": wrong as string }],
      [reservation.id, { "X-Upload-Token": "garbage" }],
    ] as const) {
      const response = await putBytes({ ...reservation, id }, new Uint8Array(5), headers);
      expect(response.status).toBe(404);
      expect(await json(response)).toEqual({ message: `Upload with ID ${id} not found` });
    }
  });

  it("answers a differing Content-Type or Content-Length 422 and keeps the token valid", async () => {
    const { storeId, token } = await seedStore();
    const reservation = await reserve(token, storeId, new Uint8Array(5), { content_type: "image/png" });
    const wrongType = await putBytes(reservation, new Uint8Array(5), { "Content-Type": "image/jpeg" });
    expect(wrongType.status).toBe(422);
    expect((await json<{ message: string }>(wrongType)).message).toMatch(/Content-Type/);
    const wrongLength = await putBytes(reservation, new Uint8Array(6), { "Content-Length": "6" });
    expect(wrongLength.status).toBe(422);
    expect((await json<{ message: string }>(wrongLength)).message).toMatch(/Content-Length/);
    expect((await putBytes(reservation, new Uint8Array(5), { "Content-Type": "IMAGE/PNG; x=y" })).status).toBe(204);
  });

  it("answers a second PUT of stored bytes 409 (also after completion)", async () => {
    const { storeId, token } = await seedStore();
    const bytes = isoMedia("isom");
    const reservation = await reserve(token, storeId, bytes, { content_type: "video/mp4" });
    expect((await putBytes(reservation, bytes)).status).toBe(204);
    const again = await putBytes(reservation, bytes);
    expect(again.status).toBe(409);
    expect(await json(again)).toEqual({ message: "The bytes of this upload are already stored." });
    expect((await complete(token, storeId, reservation.id)).status).toBe(201);
    expect((await putBytes(reservation, bytes)).status).toBe(409);
  });

  it("order: already stored (409) comes before a differing Content-Type or Content-Length (422)", async () => {
    const { storeId, token } = await seedStore();
    const reservation = await reserve(token, storeId, new Uint8Array(5), { content_type: "image/png" });
    expect((await putBytes(reservation, new Uint8Array(5))).status).toBe(204);
    const wrongType = await putBytes(reservation, new Uint8Array(5), { "Content-Type": "image/jpeg" });
    expect(wrongType.status).toBe(409);
    const wrongLength = await putBytes(reservation, new Uint8Array(6), { "Content-Length": "6" });
    expect(wrongLength.status).toBe(409);
    expect(await json(wrongLength)).toEqual({ message: "The bytes of this upload are already stored." });
  });

  describe("a byte PUT whose process died", () => {
    // The coordinator reads the lease's end from Date.now() in this isolate: the test moves that clock.
    const clock = isolateClock();

    /** Begins a PUT of `bytes` through the coordinator, as a PUT does before its isolate is killed. */
    async function beginDeadPut(storeId: string, reservation: Reservation, bytes: Uint8Array) {
      const token = reservation.upload_request.headers["X-Upload-Token"] ?? "";
      const begun = await coordinatorOf(storeId).beginPut(reservation.id, {
        tokenHash: await sha256Hex(token),
        contentType: reservation.upload_request.headers["Content-Type"],
        contentLength: bytes.length,
      });
      if (!begun.ok) throw new Error(`begin refused: ${JSON.stringify(begun.refusal)}`);
      return begun.upload;
    }

    it("holds the upload (409 being stored) for the lease, seconds not minutes; then a retry PUT stores the bytes", async () => {
      expect(leaseMs).toBeLessThanOrEqual(15_000);
      const { storeId, token } = await seedStore();
      const bytes = isoMedia("isom");
      const reservation = await reserve(token, storeId, bytes, { content_type: "video/mp4" });
      await beginDeadPut(storeId, reservation, bytes);
      const blocked = await putBytes(reservation, bytes);
      expect(blocked.status).toBe(409);
      expect(await json(blocked)).toEqual({ message: "The bytes of this upload are being stored by another request." });
      clock.advance(leaseMs - 1000);
      expect((await putBytes(reservation, bytes)).status).toBe(409);

      clock.advance(1000);
      expect((await putBytes(reservation, bytes)).status).toBe(204);
      expect((await complete(token, storeId, reservation.id)).status).toBe(201);
    });

    it("a PUT that was taken over, waking up late, is refused and deletes nothing: the bytes of the PUT that replaced it stay", async () => {
      const { storeId, token } = await seedStore();
      const bytes = isoMedia("isom");
      const reservation = await reserve(token, storeId, bytes, { content_type: "video/mp4" });
      const cut = await beginDeadPut(storeId, reservation, bytes);
      clock.advance(leaseMs);
      expect((await putBytes(reservation, bytes)).status).toBe(204);

      const late = await storeBytes(env.BUCKET, coordinatorOf(storeId), storeId, cut, new Blob([bytes]).stream(), "r");
      expect(late).toEqual({
        stored: true,
        value: { ok: false, refusal: { status: 409, reason: "already_stored" } },
      });
      expect(await env.BUCKET.head(stagedKey(storeId, reservation.id))).not.toBeNull();
      expect(await storedState(storeId, reservation.id)).toBe("stored");
      expect((await complete(token, storeId, reservation.id)).status).toBe(201);
    });
  });

  it("race: two concurrent PUTs of one upload give one 204 and one 409", async () => {
    const { storeId, token } = await seedStore();
    const bytes = new Uint8Array(200_000).fill(3);
    const reservation = await reserve(token, storeId, bytes);
    const results = await Promise.all([putBytes(reservation, bytes), putBytes(reservation, bytes)]);
    expect(results.map((r) => r.status).sort()).toEqual([204, 409]);
  });

  it("a body shorter or longer than Content-Length stores nothing and leaves the upload reserved", async () => {
    const { storeId, token } = await seedStore();
    const reservation = await reserve(token, storeId, new Uint8Array(1000));
    for (const sent of [400, 1200]) {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new Uint8Array(sent));
          controller.close();
        },
      });
      const response = await createApp().request(
        `/api/v1/media-uploads/${reservation.id}`,
        // A stream body keeps the declared Content-Length whatever number of bytes follows.
        {
          method: "PUT",
          body,
          headers: { ...reservation.upload_request.headers, "CF-Connecting-IP": freshIp() },
          duplex: "half",
        } as RequestInit,
        env,
      );
      expect(response.status, `${sent} bytes`).toBe(400);
      expect(await json(response)).toEqual({ message: uploadMessages.bodyLength });
      expect(await env.BUCKET.head(stagedKey(storeId, reservation.id))).toBeNull();
      const status = await json(await api(`/media-uploads/${reservation.id}`, { token, store: storeId }));
      expect(status.state).toBe("reserved");
    }
    expect((await putBytes(reservation, new Uint8Array(1000))).status).toBe(204);
  });

  it("an R2 write failing mid-stream leaves the upload reserved and nothing stored", async () => {
    const { storeId, token } = await seedStore();
    const reservation = await reserve(token, storeId, new Uint8Array(10));
    const errorLog = vi.spyOn(console, "error").mockImplementation(() => {});
    const failingBucket = new Proxy(env.BUCKET, {
      get(target, property) {
        if (property === "put") {
          return async (_key: string, body: ReadableStream) => {
            const reader = body.getReader();
            await reader.read();
            throw new Error("R2 unavailable");
          };
        }
        const value = Reflect.get(target, property);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const response = await createApp().request(
      `/api/v1/media-uploads/${reservation.id}`,
      {
        method: "PUT",
        body: new Uint8Array(10),
        headers: { ...reservation.upload_request.headers, "CF-Connecting-IP": freshIp() },
      },
      { ...env, BUCKET: failingBucket },
    );
    expect(response.status).toBe(503);
    expect(await json(response)).toEqual({ message: uploadMessages.storageFailed });
    // The failure is logged once, naming the request and the upload (captured here, not printed).
    expect(errorLog).toHaveBeenCalledOnce();
    expect(JSON.parse(String(errorLog.mock.calls[0]?.[0]))).toMatchObject({
      level: "error",
      message: "upload: storing bytes failed",
      request_id: response.headers.get("X-Request-Id"),
      upload_id: reservation.id,
      error: "Error: R2 unavailable",
    });
    errorLog.mockRestore();
    expect(await env.BUCKET.head(stagedKey(storeId, reservation.id))).toBeNull();
    expect((await json(await api(`/media-uploads/${reservation.id}`, { token, store: storeId }))).state).toBe(
      "reserved",
    );
  });

  it("a client that disconnects mid-body is a short body: nothing stored, the upload reserved again, no error logged", async () => {
    const { storeId, token } = await seedStore();
    const size = 100_000;
    const reservation = await reserve(token, storeId, new Uint8Array(size));
    const errorLog = vi.spyOn(console, "error");
    const client = new AbortController();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new Uint8Array(400));
        await new Promise((resolve) => setTimeout(resolve, 100));
        client.abort();
      },
    });
    // Through the Worker's own fetch the abort reaches the handler as workerd's real disconnect: the
    // request is cancelled and the R2 put fails with workerd's own error, not a test double's.
    const request = new Request(reservation.upload_request.url, {
      method: "PUT",
      body,
      headers: { ...reservation.upload_request.headers, "CF-Connecting-IP": freshIp() },
      duplex: "half",
      signal: client.signal,
    } as RequestInit);
    await expect(exports.default.fetch(request)).rejects.toThrow();
    await vi.waitFor(async () => expect(await storedState(storeId, reservation.id)).toBe("reserved"), {
      timeout: 5000,
    });
    expect(errorLog).not.toHaveBeenCalled();
    expect(await env.BUCKET.head(stagedKey(storeId, reservation.id))).toBeNull();
    expect((await putBytes(reservation, new Uint8Array(size))).status).toBe(204);
  });

  it("limit: the 21st PUT from one IP in a window gets 429 with Retry-After; another IP is unaffected", async () => {
    const ip = freshIp();
    for (let attempt = 1; attempt <= 20; attempt++) {
      const response = await api(`/media-uploads/${uuid()}`, {
        method: "PUT",
        rawBody: "x",
        headers: { "CF-Connecting-IP": ip },
      });
      expect(response.status, `attempt ${attempt}`).toBe(401);
    }
    const refused = await api(`/media-uploads/${uuid()}`, {
      method: "PUT",
      rawBody: "x",
      headers: { "CF-Connecting-IP": ip },
    });
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await json(refused)).toEqual({ message: `Too many requests, retry after ${retryAfter} seconds.` });
    expect(refused.headers.get("RateLimit-Policy")).toBe("20;w=60");
    const other = await api(`/media-uploads/${uuid()}`, {
      method: "PUT",
      rawBody: "x",
      headers: { "CF-Connecting-IP": freshIp() },
    });
    expect(other.status).toBe(401);
  });

  it("CORS: any origin may preflight and PUT with X-Upload-Token", async () => {
    const preflight = await api(`/media-uploads/${uuid()}`, {
      method: "OPTIONS",
      headers: {
        Origin: "https://any-shop.example",
        "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "x-upload-token, content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(preflight.headers.get("Access-Control-Allow-Methods")).toContain("PUT");
    expect(preflight.headers.get("Access-Control-Allow-Headers")?.toLowerCase()).toContain("x-upload-token");
    const put = await api(`/media-uploads/${uuid()}`, {
      method: "PUT",
      rawBody: "x",
      headers: { Origin: "https://any-shop.example", "CF-Connecting-IP": freshIp() },
    });
    expect(put.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(put.headers.get("Access-Control-Expose-Headers")).toContain("Retry-After");
  });
});

describe("POST /media-uploads/{id}/complete", () => {
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
        width: null,
        height: null,
        srcset: null,
        sources: null,
        placeholder: null,
        placeholder_url: null,
        dominant_color: null,
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
      width: null,
      height: null,
      srcset: null,
      sources: null,
      placeholder: null,
      placeholder_url: null,
      dominant_color: null,
    });
  });

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

  describe("a complete whose process died", () => {
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
        width: null,
        height: null,
        srcset: null,
        sources: null,
        placeholder: null,
        placeholder_url: null,
        dominant_color: null,
      });
    });
  });
});

describe("GET /media-uploads/{id}", () => {
  it("answers the state and, once completed, the result", async () => {
    const { storeId, token, reservation } = await host(isoMedia("isom"), { content_type: "video/mp4" });
    const body = await json(await api(`/media-uploads/${reservation.id}`, { token, store: storeId }));
    expect(body).toEqual({
      id: reservation.id,
      state: "completed",
      expires_at: reservation.expires_at,
      result: {
        name: "plik.bin",
        file_url: `${origin}/media/${storeId}/${reservation.id}.mp4`,
        type: "video",
        width: null,
        height: null,
        srcset: null,
        sources: null,
        placeholder: null,
        placeholder_url: null,
        dominant_color: null,
      },
    });
  });

  it("matches upload ids case-insensitively: an upper-case id works on the byte PUT, complete and GET", async () => {
    const { storeId, token } = await seedStore();
    const bytes = isoMedia("isom");
    const reservation = await reserve(token, storeId, bytes, { content_type: "video/mp4" });
    const upperId = reservation.id.toUpperCase();
    expect(upperId).not.toBe(reservation.id);
    expect((await putBytes({ ...reservation, id: upperId }, bytes)).status).toBe(204);
    const completed = await complete(token, storeId, upperId);
    expect(completed.status).toBe(201);
    expect((await json<{ file_url: string }>(completed)).file_url).toBe(
      `${origin}/media/${storeId}/${reservation.id}.mp4`,
    );
    const read = await api(`/media-uploads/${upperId}`, { token, store: storeId });
    expect(read.status).toBe(200);
    expect(await json(read)).toMatchObject({ id: reservation.id, state: "completed" });
  });

  it("order: a missing or bad X-Service-Store (400) before media:write (403) before a malformed id (400)", async () => {
    const { storeId, token } = await seedStore();
    const missing = await api("/media-uploads/not-a-uuid", { token });
    expect(missing.status).toBe(400);
    expect(await json(missing)).toEqual({ message: "The X-Service-Store header is required." });
    const badStore = await api("/media-uploads/not-a-uuid", { token, store: "not-a-store" });
    expect(badStore.status).toBe(400);
    expect(await json(badStore)).toEqual({ message: "Invalid store ID." });
    const reader = await seedToken([storeId], ["products:read"]);
    const refused = await api("/media-uploads/not-a-uuid", { token: reader, store: storeId });
    expect(refused.status).toBe(403);
    expect(await json(refused)).toEqual({ message: "This action is unauthorized." });
    const malformed = await api("/media-uploads/not-a-uuid", { token, store: storeId });
    expect(malformed.status).toBe(400);
    expect(await json(malformed)).toEqual({ message: "Invalid upload ID." });
  });

  it("answers another store's upload 404", async () => {
    const mine = await seedStore();
    const theirs = await seedStore();
    const reservation = await reserve(theirs.token, theirs.storeId, new Uint8Array(3));
    expect((await api(`/media-uploads/${reservation.id}`, { token: mine.token, store: mine.storeId })).status).toBe(
      404,
    );
  });
});

describe("expiry", () => {
  describe("with the isolate's clock in the test's hand", () => {
    // The Worker and its coordinator read the reservation's end from Date.now() (in this isolate): the clock is
    // moved past it instead of waiting.
    const clock = isolateClock();

    it("the alarm deletes lapsed reservations and their bytes; PUT and complete then answer 404", async () => {
      const { storeId, token } = await seedStore();
      const bytes = isoMedia("isom");
      const app = createApp();
      const shortLived = { ...env, UPLOAD_TTL_SECONDS: "1" };
      const call = (path: string, init: RequestInit) => app.request(`/api/v1${path}`, init, shortLived);
      const prepared = await call("/media-uploads", {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "X-Service-Store": storeId, "Content-Type": "application/json" },
        body: JSON.stringify({ filename: "v.mp4", content_type: "video/mp4", size: bytes.length }),
      });
      const reservation = await json<Reservation>(prepared);
      expect((await putBytes(reservation, bytes)).status).toBe(204);
      expect(await env.BUCKET.head(stagedKey(storeId, reservation.id))).not.toBeNull();

      const coordinator = env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));
      const alarmAt = await runInDurableObject(coordinator, (_instance, state) => state.storage.getAlarm());
      expect(alarmAt).toBe(Date.parse(reservation.expires_at));

      clock.advance(1100);
      expect((await putBytes(reservation, bytes)).status).toBe(404);
      expect((await complete(token, storeId, reservation.id)).status).toBe(404);
      // The alarm may already have fired on its own; running it again is harmless.
      await runDurableObjectAlarm(coordinator);
      expect(await env.BUCKET.head(stagedKey(storeId, reservation.id))).toBeNull();
      expect((await api(`/media-uploads/${reservation.id}`, { token, store: storeId })).status).toBe(404);
    });
  });

  it("PUT racing expiry: bytes that finish arriving after the reservation lapsed are not kept", async () => {
    const { storeId, token } = await seedStore();
    const app = createApp();
    const shortLived = { ...env, UPLOAD_TTL_SECONDS: "1" };
    const prepared = await app.request(
      "/api/v1/media-uploads",
      {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "X-Service-Store": storeId, "Content-Type": "application/json" },
        body: JSON.stringify({ filename: "v.bin", content_type: "application/octet-stream", size: 8 }),
      },
      shortLived,
    );
    const reservation = await json<Reservation>(prepared);
    const slow = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new Uint8Array(4));
        await new Promise((resolve) => setTimeout(resolve, 1200));
        controller.enqueue(new Uint8Array(4));
        controller.close();
      },
    });
    const response = await app.request(
      `/api/v1/media-uploads/${reservation.id}`,
      {
        method: "PUT",
        body: slow,
        headers: { ...reservation.upload_request.headers, "CF-Connecting-IP": freshIp() },
        duplex: "half",
      } as RequestInit,
      env,
    );
    expect(response.status).toBe(404);
    expect(await env.BUCKET.head(stagedKey(storeId, reservation.id))).toBeNull();
  });
});
