import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { stagedKey } from "../../src/storage/keys";
import { leaseRenewalMs } from "../../src/uploads/complete/lease";
import type { CoordinatorStub } from "../../src/uploads/coordinator/client";
import { storePart } from "../../src/uploads/parts/store-part";
import { storeBytes } from "../../src/uploads/put/store-bytes";
import { seedStore } from "../support/factories";
import { reserve, reserveParts } from "../support/uploads";

const coordinatorOf = (storeId: string) => env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));

/**
 * The coordinator's stub, with every renewal's call kept so the test can await the ones a timer started:
 * a renewal is an RPC, which fake timers do not wait for.
 */
function watchingRenewals(stub: CoordinatorStub) {
  const renewals: Promise<unknown>[] = [];
  const watched = new Proxy(stub, {
    get(target, method) {
      const member = Reflect.get(target, method);
      if (typeof member !== "function") return member;
      // Reflect.apply: `member.apply` on an RPC stub would be taken for a remote method named "apply".
      return (...args: unknown[]) => {
        const called: unknown = Reflect.apply(member, target, args);
        if (method === "renewPut" || method === "renewPart") renewals.push(Promise.resolve(called));
        return called;
      };
    },
  });
  return { stub: watched, renewals };
}

/** A body that sends its first byte at once and the rest when the test says so, like a slow client. */
function slowBody(bytes: Uint8Array) {
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(bytes.slice(0, 1));
      await held;
      controller.enqueue(bytes.slice(1));
      controller.close();
    },
  });
  return { body, release };
}

/** Moves the fake clock six minutes on, one renewal period at a time, letting each renewal's call land. */
async function sixMinutesPass(renewals: Promise<unknown>[]) {
  for (let elapsed = 0; elapsed < 6 * 60_000; elapsed += leaseRenewalMs) {
    await vi.advanceTimersByTimeAsync(leaseRenewalMs);
    await Promise.all(renewals);
  }
}

afterEach(() => {
  vi.useRealTimers();
});

describe("a PUT holds its lease while its body streams", () => {
  it("a byte PUT whose body takes six minutes keeps the upload (another PUT is refused 409), then stores the bytes", async () => {
    const { storeId, token } = await seedStore();
    const bytes = new Uint8Array(1000).fill(7);
    const reservation = await reserve(token, storeId, bytes);
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: Date.now() });
    const { stub, renewals } = watchingRenewals(coordinatorOf(storeId));
    const attempt = {
      tokenHash: await sha256Hex(reservation.upload_request.headers["X-Upload-Token"] ?? ""),
      contentType: "application/octet-stream",
      contentLength: bytes.length,
    };
    const begun = await stub.beginPut(reservation.id, attempt);
    if (!begun.ok) throw new Error("begin refused");
    const { body, release } = slowBody(bytes);
    const storing = storeBytes(env.BUCKET, stub, storeId, begun.upload, body, "r");

    await sixMinutesPass(renewals);
    expect(await stub.beginPut(reservation.id, attempt)).toEqual({
      ok: false,
      refusal: { status: 409, reason: "being_stored" },
    });
    expect(renewals.length).toBeGreaterThanOrEqual((6 * 60_000) / leaseRenewalMs);

    release();
    expect(await storing).toMatchObject({ stored: true, value: { ok: true, upload: { state: "stored" } } });
    expect((await env.BUCKET.head(stagedKey(storeId, reservation.id)))?.size).toBe(bytes.length);
  });

  it("a part PUT whose body takes six minutes keeps its part (another PUT of it is refused 409), then stores it", async () => {
    const owner = await seedStore();
    const bytes = new Uint8Array(10).fill(9);
    const reservation = await reserveParts(owner, bytes.length);
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: Date.now() });
    const { stub, renewals } = watchingRenewals(coordinatorOf(owner.storeId));
    const attempt = {
      tokenHash: await sha256Hex(reservation.upload_request.headers["X-Upload-Token"] ?? ""),
      contentType: "video/mp4",
      contentLength: bytes.length,
      partNumber: 1,
    };
    const begun = await stub.beginPart(reservation.id, attempt);
    if (!begun.ok) throw new Error("begin refused");
    const { body, release } = slowBody(bytes);
    const at = { storeId: owner.storeId, uploadId: reservation.id, ttlMs: 900_000, requestId: "r" };
    const storing = storePart(env.BUCKET, stub, at, begun.ticket, body);

    await sixMinutesPass(renewals);
    expect(await stub.beginPart(reservation.id, attempt)).toEqual({
      ok: false,
      refusal: { status: 409, reason: "part_being_stored", part: 1 },
    });
    expect(renewals.length).toBeGreaterThanOrEqual((6 * 60_000) / leaseRenewalMs);

    release();
    expect(await storing).toMatchObject({ stored: true, value: { finished: { ok: true } } });
    expect((await stub.status(reservation.id))?.parts).toEqual([{ partNumber: 1, size: 10, etag: expect.any(String) }]);
  });
});
