import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConverterService } from "../../src/converter/contract";
import { createDb } from "../../src/db/client";
import { stagedKey } from "../../src/storage/keys";
import { completeUpload } from "../../src/uploads/complete/complete";
import { leaseRenewalMs, whileHoldingLease } from "../../src/uploads/complete/lease";
import type { CoordinatorStub } from "../../src/uploads/coordinator/client";
import { completeLeaseMs } from "../../src/uploads/upload-state";
import { seedStore } from "../support/factories";
import { png } from "../support/media-bytes";
import { stage } from "../support/uploads";

const coordinatorOf = (storeId: string) => env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));

/** A promise the test settles by hand. */
function deferred<T>() {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

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
        if (method === "renewComplete") renewals.push(Promise.resolve(called));
        return called;
      };
    },
  });
  return { stub: watched, renewals };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("the renewal of a complete's lease (whileHoldingLease)", () => {
  it("renews every leaseRenewalMs while the work runs, and not after it ends", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const renew = vi.fn(async () => true);
    const work = deferred<string>();
    const holding = whileHoldingLease(renew, () => work.promise);
    await vi.advanceTimersByTimeAsync(leaseRenewalMs - 1);
    expect(renew).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(renew).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(4 * leaseRenewalMs);
    expect(renew).toHaveBeenCalledTimes(5);
    work.resolve("done");
    expect(await holding).toBe("done");
    await vi.advanceTimersByTimeAsync(10 * leaseRenewalMs);
    expect(renew).toHaveBeenCalledTimes(5);
  });

  it("stops renewing once the coordinator refuses (another attempt took the upload over); a failed call is tried again", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const answers = [Promise.reject(new Error("the object is unreachable")), Promise.resolve(true)];
    answers[0]?.catch(() => {});
    const renew = vi.fn(() => answers.shift() ?? Promise.resolve(false));
    const work = deferred<void>();
    const holding = whileHoldingLease(renew, () => work.promise);
    await vi.advanceTimersByTimeAsync(10 * leaseRenewalMs);
    // A failed call, a renewal, then the refusal: nothing after it.
    expect(renew).toHaveBeenCalledTimes(3);
    work.resolve();
    await holding;
  });

  it("the renewal period leaves room for two late or lost renewals inside one lease", () => {
    expect(completeLeaseMs).toBeLessThanOrEqual(15_000);
    expect(leaseRenewalMs * 3).toBeLessThanOrEqual(completeLeaseMs);
  });
});

describe("completeUpload holds its lease while it works", () => {
  it("a complete whose conversion takes six minutes keeps the upload (a concurrent complete is refused 409) and then finishes it", async () => {
    const { storeId, reservation } = await stage(await png(32, 24), { content_type: "image/png" }, await seedStore());
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: Date.now() });
    const { stub, renewals } = watchingRenewals(coordinatorOf(storeId));
    const converting = deferred<void>();
    // The real converter, answering only once the test lets it.
    const slowConverter: ConverterService = {
      convert: async (job) => {
        await converting.promise;
        return env.CONVERTER.convert(job);
      },
      makeWidth: (job) => env.CONVERTER.makeWidth(job),
      makeAvif: (job) => env.CONVERTER.makeAvif(job),
      describe: (key) => env.CONVERTER.describe(key),
    };
    const completing = completeUpload(
      {
        coordinator: stub,
        bucket: env.BUCKET,
        db: createDb(env.DB),
        converter: slowConverter,
        requestId: "lease-test",
        urls: { mediaBaseUrl: "https://media.example", origin: "https://checkout.example" },
        settings: { defaultUploadLimit: () => 100_000_000, maxImageEdge: () => 2560 },
      },
      storeId,
      reservation.id,
    );

    for (let elapsed = 0; elapsed < 6 * 60_000; elapsed += leaseRenewalMs) {
      await vi.advanceTimersByTimeAsync(leaseRenewalMs);
      await Promise.all(renewals);
    }
    expect(await stub.beginComplete(reservation.id)).toEqual({
      ok: false,
      refusal: { status: 409, reason: "being_processed" },
    });
    expect(renewals.length).toBeGreaterThanOrEqual((6 * 60_000) / leaseRenewalMs);

    converting.resolve();
    expect(await completing).toMatchObject({
      file_url: `https://media.example/${storeId}/${reservation.id}.webp`,
      width: 32,
      height: 24,
    });
    const status = await stub.status(reservation.id);
    expect(status?.upload).toMatchObject({ state: "completed", leaseUntil: null });
    // The WebP is hosted; the staged bytes are gone.
    expect(await env.BUCKET.head(stagedKey(storeId, reservation.id))).toBeNull();
  });
});
