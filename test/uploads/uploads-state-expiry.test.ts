import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { stagedKey } from "../../src/storage/keys";
import { isolateClock } from "../support/clock";
import { seedStore, seedToken } from "../support/factories";
import { api, json, origin } from "../support/http";
import { isoMedia } from "../support/media-bytes";
import { poll } from "../support/poll";
import {
  complete,
  freshIp,
  host,
  notConvertedFields,
  putBytes,
  type Reservation,
  reserve,
  storedState,
} from "../support/uploads";

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
        ...notConvertedFields,
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

describe("expiry (the isolate's clock in the test's hand)", () => {
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
        // The reservation (one second) lapses while the PUT is storing the bytes.
        await poll(
          () => storedState(storeId, reservation.id),
          (state) => state === "storing",
          { what: "the PUT storing" },
        );
        clock.advance(1100);
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
