import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { sha256Hex } from "../../src/lib/crypto";
import { stagedKey } from "../../src/storage/keys";
import { uploadMessages } from "../../src/uploads/messages";
import { storeBytes } from "../../src/uploads/put/store-bytes";
import { leaseMs } from "../../src/uploads/upload-state";
import { isolateClock } from "../support/clock";
import { seedStore, uuid } from "../support/factories";
import { api, json } from "../support/http";
import { isoMedia } from "../support/media-bytes";
import { poll } from "../support/poll";
import { complete, coordinatorOf, freshIp, putBytes, type Reservation, reserve, storedState } from "../support/uploads";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("PUT /media-uploads/{id} (the bytes): who may PUT which upload", () => {
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
});

describe("PUT /media-uploads/{id} (the bytes): a differing or repeated PUT", () => {
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

  it("race: two concurrent PUTs of one upload give one 204 and one 409", async () => {
    const { storeId, token } = await seedStore();
    const bytes = new Uint8Array(200_000).fill(3);
    const reservation = await reserve(token, storeId, bytes);
    const results = await Promise.all([putBytes(reservation, bytes), putBytes(reservation, bytes)]);
    expect(results.map((r) => r.status).sort()).toEqual([204, 409]);
  });
});

describe("PUT /media-uploads/{id} (the bytes): a byte PUT whose process died", () => {
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

describe("PUT /media-uploads/{id} (the bytes): a body that does not arrive whole", () => {
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

  it("a client that disconnects mid-body is a short body: nothing stored, the upload reserved again, no error logged", async () => {
    const { storeId, token } = await seedStore();
    const size = 100_000;
    const reservation = await reserve(token, storeId, new Uint8Array(size));
    const errorLog = vi.spyOn(console, "error");
    const client = new AbortController();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new Uint8Array(400));
        // The client goes once the Worker has begun storing what it sent.
        await poll(
          () => storedState(storeId, reservation.id),
          (state) => state === "storing",
          { what: "the PUT storing" },
        );
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
    await poll(
      () => storedState(storeId, reservation.id),
      (state) => state === "reserved",
      {
        timeoutMs: 5000,
        what: "the upload reserved again",
      },
    );
    expect(errorLog).not.toHaveBeenCalled();
    expect(await env.BUCKET.head(stagedKey(storeId, reservation.id))).toBeNull();
    expect((await putBytes(reservation, new Uint8Array(size))).status).toBe(204);
  });
});

describe("PUT /media-uploads/{id} (the bytes): storage that fails", () => {
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
});

describe("PUT /media-uploads/{id} (the bytes): the per-IP limit and CORS", () => {
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
