import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { signFileUrl } from "../../src/media/signing";
import { mediaKey, privateFileKey, stagedKey } from "../../src/storage/keys";
import { completeLeaseMs } from "../../src/uploads/upload-state";
import { isolateClock } from "../support/clock";
import { seedStore } from "../support/factories";
import { json, origin } from "../support/http";
import { gif, isoMedia, pdf, png } from "../support/media-bytes";
import { countAllTrips } from "../support/round-trips";
import {
  callWith,
  MiB,
  mp4OfSize,
  multipartEnv,
  notConvertedFields,
  partOf,
  putBytes,
  putPart,
  reserve,
  reserveParts,
  servedBytes,
  stage,
} from "../support/uploads";

type Owner = { storeId: string; token: string };
type Hosted = {
  name: string;
  file_url: string;
  type: string;
  width: number | null;
  height: number | null;
  srcset: string | null;
};

const bearer = (owner: Owner) => ({ Authorization: `Bearer ${owner.token}`, "X-Service-Store": owner.storeId });
const coordinatorOf = (storeId: string) => env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));
const completeWith = (bindings: Env, owner: Owner, id: string) =>
  callWith(bindings, `/media-uploads/${id}/complete`, { method: "POST", headers: bearer(owner) });

/**
 * Bindings under which a complete gets as far as a complete killed right before recording its outcome: it
 * hosts the upload (writes the hosted object, for a converted image deletes the original), then its call
 * to finish fails. The state it leaves is the coordinator's `processing` with the hosted key recorded.
 */
function dyingBeforeFinish(bindings: Env = env): Env {
  const namespace = new Proxy(bindings.STORE_COORDINATOR, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (property !== "get") return typeof value === "function" ? value.bind(target) : value;
      return (id: DurableObjectId) => {
        const stub = target.get(id);
        return new Proxy(stub, {
          get(stubTarget, method) {
            if (method === "finishComplete") return () => Promise.reject(new Error("the isolate was killed"));
            const member = Reflect.get(stubTarget, method);
            // Reflect.apply: `member.apply` on an RPC stub would be taken for a remote method named "apply".
            return typeof member === "function"
              ? (...args: unknown[]) => Reflect.apply(member, stubTarget, args)
              : member;
          },
        });
      };
    },
  });
  return { ...bindings, STORE_COORDINATOR: namespace };
}

/** Moves the upload's complete lease (and, with `lapsed`, its reservation) into the past. */
function expireLease(storeId: string, id: string, lapsed = false) {
  return runInDurableObject(coordinatorOf(storeId), (_instance, state) => {
    state.storage.sql.exec("UPDATE uploads SET lease_until = ? WHERE id = ?", Date.now() - 1, id);
    if (lapsed) state.storage.sql.exec("UPDATE uploads SET expires_at = ? WHERE id = ?", Date.now() - 1, id);
  });
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("complete hosts unchanged bytes in place", () => {
  it("a multipart video's complete moves no bytes: one R2 read to sniff, one empty object written, nothing copied or deleted", async () => {
    const owner = await seedStore();
    const file = mp4OfSize(11 * MiB + 5, 9);
    const reservation = await reserveParts(owner, file.length);
    for (let n = 1; n <= reservation.multipart.part_count; n++) {
      expect((await putPart(reservation, n, partOf(reservation, file, n))).status).toBe(204);
    }
    const { response, body, trips } = await countAllTrips(
      `/api/v1/media-uploads/${reservation.id}/complete`,
      { method: "POST", headers: bearer(owner) },
      multipartEnv(),
    );
    expect(response.status).toBe(201);
    // resumeMultipartUpload + its complete() assemble the parts; get sniffs; put writes the empty hosted object.
    expect(trips.r2).toEqual({ resumeMultipartUpload: 1, get: 1, put: 1 });
    const hosted = JSON.parse(new TextDecoder().decode(body)) as Hosted;
    const head = await env.BUCKET.head(mediaKey(owner.storeId, reservation.id, "mp4"));
    expect(head?.size).toBe(0);
    const served = await servedBytes(hosted.file_url);
    expect(served.length).toBe(file.length);
    expect(served.every((byte, index) => byte === file[index])).toBe(true);
  });

  it("a private file is hosted in place and served, signed, with its filename and sniffed type", async () => {
    const { storeId, token, reservation } = await stage(pdf(), {
      filename: "umowa.pdf",
      content_type: "application/octet-stream",
      type: "file",
    });
    const { response, trips } = await countAllTrips(`/api/v1/media-uploads/${reservation.id}/complete`, {
      method: "POST",
      headers: bearer({ storeId, token }),
    });
    expect(response.status).toBe(201);
    expect(trips.r2).toEqual({ get: 1, put: 1 });
    expect((await env.BUCKET.head(privateFileKey(storeId, reservation.id)))?.size).toBe(0);
    const link = await signFileUrl(
      env.FILE_SIGNING_SECRET,
      `${origin}/files/${storeId}/${reservation.id}/umowa.pdf`,
      new Date(Date.now() + 60_000),
    );
    const served = await exports.default.fetch(link);
    expect(served.status).toBe(200);
    expect(served.headers.get("Content-Type")).toBe("application/pdf");
    expect(served.headers.get("Content-Disposition")).toBe("attachment; filename*=UTF-8''umowa.pdf");
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(pdf());
  });
});

describe("complete's R2 calls: the first bytes for sniffing, then one GET per read the converter asks for", () => {
  for (const [name, bytes, contentType, r2] of [
    // The converter walks the GIF's frames (one read through the binding) and answers "animated": the API
    // hosts it in place.
    ["an animated GIF (its frames counted by the converter)", () => gif(3), "image/gif", { get: 2, put: 1 }],
    ["a video", () => isoMedia("isom", 200_000), "video/mp4", { get: 1, put: 1 }],
    // The converter reads the file once and answers the WebP, which the API writes; then the staged bytes go.
    ["a still PNG (sniffed here, converted there)", () => png(600, 400), "image/png", { get: 2, put: 1, delete: 1 }],
    // A GIF is read twice by the converter: its blocks walked (frames counted), then its frame decoded.
    ["a still GIF", () => gif(1), "image/gif", { get: 3, put: 1, delete: 1 }],
  ] as const) {
    it(`${name}: R2 calls ${JSON.stringify(r2)}`, async () => {
      const { storeId, token, reservation } = await stage(await bytes(), { content_type: contentType });
      const { response, trips } = await countAllTrips(`/api/v1/media-uploads/${reservation.id}/complete`, {
        method: "POST",
        headers: bearer({ storeId, token }),
      });
      expect(response.status).toBe(201);
      expect(trips.r2).toEqual(r2);
    });
  }
});

describe("a complete that died half-way", () => {
  // The coordinator reads the lease's end from Date.now() in this isolate: the test moves that clock.
  const clock = isolateClock();

  it("after writing the in-place object: the next complete finishes it with the same result, and the bytes serve", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const owner = await seedStore();
    const bytes = isoMedia("isom", 100_000);
    const reservation = await reserve(owner.token, owner.storeId, bytes, { content_type: "video/mp4" });
    expect((await putBytes(reservation, bytes)).status).toBe(204);
    expect((await completeWith(dyingBeforeFinish(), owner, reservation.id)).status).toBe(500);
    expect((await env.BUCKET.head(mediaKey(owner.storeId, reservation.id, "mp4")))?.size).toBe(0);

    // A retry within seconds: the dead complete's lease is not renewed, and runs out.
    clock.advance(completeLeaseMs);
    const retried = await completeWith(env, owner, reservation.id);
    expect(retried.status).toBe(201);
    const hosted = await json<Hosted>(retried);
    expect(hosted).toEqual({
      name: "plik.bin",
      file_url: `${origin}/media/${owner.storeId}/${reservation.id}.mp4`,
      type: "video",
      ...notConvertedFields,
    });
    expect(await servedBytes(hosted.file_url)).toEqual(bytes);
  });

  it("after converting and deleting the original: the WebP serves while the upload reads stored, and a retry within seconds answers 201 with that URL", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const owner = await seedStore();
    const bytes = await png(300, 200);
    const reservation = await reserve(owner.token, owner.storeId, bytes, { content_type: "image/png" });
    expect((await putBytes(reservation, bytes)).status).toBe(204);
    expect((await completeWith(dyingBeforeFinish(), owner, reservation.id)).status).toBe(500);
    expect(await env.BUCKET.head(stagedKey(owner.storeId, reservation.id))).toBeNull();
    // docs/uploads.md: the URL already serves the bytes complete will answer, while the upload reads stored.
    const fileUrl = `${origin}/media/${owner.storeId}/${reservation.id}.webp`;
    expect(new TextDecoder().decode((await servedBytes(fileUrl)).subarray(8, 12))).toBe("WEBP");
    const status = await callWith(env, `/media-uploads/${reservation.id}`, { headers: bearer(owner) });
    expect(await json<{ state: string }>(status)).toMatchObject({ state: "stored" });

    clock.advance(completeLeaseMs);
    const retried = await completeWith(env, owner, reservation.id);
    expect(retried.status).toBe(201);
    const hosted = await json<Hosted>(retried);
    expect(hosted.file_url).toBe(fileUrl);
    // The same size, srcset and placeholder as a complete that had not died.
    expect(hosted).toMatchObject({
      width: 300,
      height: 200,
      srcset: expect.stringContaining(`${hosted.file_url} 300w`),
      placeholder: expect.stringMatching(/^[A-Za-z0-9+/]+=*$/),
      dominant_color: expect.stringMatching(/^#[0-9a-f]{6}$/),
    });
    const served = await servedBytes(hosted.file_url);
    expect(new TextDecoder().decode(served.subarray(8, 12))).toBe("WEBP");
  });
});

describe("expiry never removes what a completed upload serves", () => {
  describe("with the isolate's clock in the test's hand", () => {
    // The coordinator reads the reservation's end from Date.now() (in this isolate): the clock is moved past it.
    const clock = isolateClock();

    it("the alarm leaves the staged bytes of an upload completed in place, after its reservation's time", async () => {
      const owner = await seedStore();
      const bytes = isoMedia("isom", 10_000);
      const shortLived = { ...env, UPLOAD_TTL_SECONDS: "1" } as Env;
      const prepared = await callWith(shortLived, "/media-uploads", {
        method: "POST",
        headers: { ...bearer(owner), "Content-Type": "application/json" },
        body: JSON.stringify({ filename: "v.mp4", content_type: "video/mp4", size: bytes.length }),
      });
      const reservation = await json<{
        id: string;
        expires_at: string;
        upload_request: { method: string; url: string; headers: Record<string, string> };
      }>(prepared);
      expect((await putBytes(reservation, bytes)).status).toBe(204);
      const completed = await completeWith(shortLived, owner, reservation.id);
      expect(completed.status).toBe(201);
      const hosted = await json<Hosted>(completed);

      clock.advance(1100);
      await runDurableObjectAlarm(coordinatorOf(owner.storeId));
      await runInDurableObject(coordinatorOf(owner.storeId), (instance) => instance.removeLapsed(500));
      expect(await env.BUCKET.head(stagedKey(owner.storeId, reservation.id))).not.toBeNull();
      expect(await servedBytes(hosted.file_url)).toEqual(bytes);
    });
  });

  it("an upload whose complete holds its lease past the reservation's end is not removed under it, and finishes", async () => {
    const owner = await seedStore();
    const bytes = isoMedia("isom");
    const reservation = await reserve(owner.token, owner.storeId, bytes, { content_type: "video/mp4" });
    expect((await putBytes(reservation, bytes)).status).toBe(204);
    const coordinator = coordinatorOf(owner.storeId);
    const begun = await coordinator.beginComplete(reservation.id);
    expect(begun.ok).toBe(true);
    const leaseUntil = begun.ok ? (begun.upload.leaseUntil as number) : 0;
    const attempt = begun.ok ? begun.upload.completeAttempt : 0;
    await runInDurableObject(coordinator, (_instance, state) => {
      state.storage.sql.exec("UPDATE uploads SET expires_at = ? WHERE id = ?", Date.now() - 1, reservation.id);
    });

    const removed = await runInDurableObject(coordinator, async (instance, state) => ({
      count: await instance.removeLapsed(500),
      alarm: await state.storage.getAlarm(),
    }));
    expect(removed.count).toBe(0);
    // The alarm comes back when the lease runs out, not at once in a loop.
    expect(removed.alarm).toBe(leaseUntil);
    expect(await env.BUCKET.head(stagedKey(owner.storeId, reservation.id))).not.toBeNull();
    const hostedKey = mediaKey(owner.storeId, reservation.id, "mp4");
    expect((await coordinator.recordHostedKey(reservation.id, attempt, hostedKey)).ok).toBe(true);
    const hosted = { name: "plik.bin", file_url: "x", type: "video" as const };
    expect((await coordinator.finishComplete(reservation.id, attempt, { hosted })).ok).toBe(true);
  });

  it("a complete that outlived its lease and its reservation cannot finish; the alarm removes its bytes with the hosted object it wrote", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const owner = await seedStore();
    const bytes = isoMedia("isom");
    const reservation = await reserve(owner.token, owner.storeId, bytes, { content_type: "video/mp4" });
    expect((await putBytes(reservation, bytes)).status).toBe(204);
    expect((await completeWith(dyingBeforeFinish(), owner, reservation.id)).status).toBe(500);
    const hostedKey = mediaKey(owner.storeId, reservation.id, "mp4");
    expect(await env.BUCKET.head(hostedKey)).not.toBeNull();

    await expireLease(owner.storeId, reservation.id, true);
    const coordinator = coordinatorOf(owner.storeId);
    const hosted = { name: "plik.bin", file_url: "x", type: "video" as const };
    // The dead complete was the upload's first (attempt 1).
    expect(await coordinator.finishComplete(reservation.id, 1, { hosted })).toEqual({
      ok: false,
      refusal: { status: 404, reason: "not_found" },
    });
    await runDurableObjectAlarm(coordinator);
    expect(await env.BUCKET.head(stagedKey(owner.storeId, reservation.id))).toBeNull();
    expect(await env.BUCKET.head(hostedKey)).toBeNull();
    expect((await exports.default.fetch(`${origin}/media/${owner.storeId}/${reservation.id}.mp4`)).status).toBe(404);
  });
});
