import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableLeaseClient, generalBudgets } from "../../src/http/rate-limit";
import {
  type LeaseClient,
  LeasedBudgets,
  refillThreshold,
  SLICES_PER_WINDOW,
  sliceSize,
} from "../../src/limits/budget-lease";
import { FixedWindowCounter, type LeaseGrant } from "../../src/limits/fixed-window";
import type { RateLimiter } from "../../src/limits/rate-limiter";
import { isolateClock } from "../support/clock";
import { seedProduct, seedStore, uuid } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";

/** The real limiter objects, with every lease call counted. */
function countingClient() {
  const inner = durableLeaseClient(env.RATE_LIMITER);
  const counted = { calls: 0 };
  const client: LeaseClient = (subject, request) => {
    counted.calls++;
    return inner(subject, request);
  };
  return { client, counted };
}

/** A stand-in for `waitUntil` that lets the test wait for the refills it started. */
function backgroundTasks() {
  const tasks: Promise<unknown>[] = [];
  return { background: (task: Promise<unknown>) => void tasks.push(task), settle: () => Promise.all(tasks.splice(0)) };
}

/**
 * Calls the limiter object of `subject` has counted in its current 60 s window of `limit`, read through its
 * own interface: a lease of nothing changes nothing and says what is still unleased.
 */
async function countedBy(subject: string, limit: number): Promise<number> {
  const grant = await env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(subject)).lease(limit, 60, 0);
  expect(grant.granted).toBe(0);
  return limit - grant.unleased;
}

describe("limiter object: leases", () => {
  it("grants slices that never add up to more than the limit in a window, shrinking as the window runs out", async () => {
    const stub = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`unit-${uuid()}`));
    const grants = await runInDurableObject(stub, (_instance: RateLimiter, state) => {
      const counter = new FixedWindowCounter(state.storage.sql);
      const out: LeaseGrant[] = [];
      for (let i = 0; i < 9; i++) out.push(counter.lease("k", 12, 60_000, 10, 1_000 + i));
      out.push(counter.lease("k", 12, 60_000, 10, 61_000));
      return out;
    });
    // A quarter of what is unleased at most (at least 1): 12 → 3, 9 → 3, 6 → 2, 4 → 1, ...
    expect(grants.slice(0, 9).map((g) => g.granted)).toEqual([3, 3, 2, 1, 1, 1, 1, 0, 0]);
    expect(grants.slice(0, 9).map((g) => g.unleased)).toEqual([9, 6, 4, 3, 2, 1, 0, 0, 0]);
    expect(grants[0]?.resetMs).toBe(60_000);
    // t=61 s is past the window that opened at t=1 s: a new one opens with the whole budget.
    expect(grants[9]).toMatchObject({ granted: 3, unleased: 9, windowStartedAt: 61_000, resetMs: 60_000 });
  });
});

describe("leased general limit (one isolate): refills and exhaustion", () => {
  it("lease refill: a sequential client goes past its first slice with only its first lease call awaited", async () => {
    const limit = 100;
    const budgets = new LeasedBudgets();
    const { client, counted } = countingClient();
    const { background, settle } = backgroundTasks();
    const subject = `api:${uuid()}`;
    for (let call = 1; call <= limit; call++) {
      const verdict = await budgets.take(subject, limit, 60, client, background);
      expect(verdict, `call ${call}`).toMatchObject({
        allowed: true,
        remaining: limit - call,
        limit,
        windowSeconds: 60,
      });
      await settle();
    }
    expect(budgets.calls.sync).toBe(1);
    // Slices of 5 refilled at 2 left: one background call per 3 calls or so, never one per call.
    expect([sliceSize(limit), refillThreshold(limit)]).toEqual([5, 2]);
    expect(counted.calls).toBe(budgets.calls.sync + budgets.calls.background);
    expect(counted.calls).toBeLessThan(limit / 2);
    expect(await countedBy(subject, limit)).toBe(limit);
  });

  it("exhaustion: call limit + 1 is refused locally (no lease call) with remaining 0 and the seconds left", async () => {
    const limit = 40;
    const budgets = new LeasedBudgets();
    const { client, counted } = countingClient();
    const { background, settle } = backgroundTasks();
    const subject = `api:${uuid()}`;
    for (let call = 1; call <= limit; call++) {
      expect((await budgets.take(subject, limit, 60, client, background)).allowed).toBe(true);
      await settle();
    }
    const callsBefore = counted.calls;
    const refused = await budgets.take(subject, limit, 60, client, background);
    expect(refused).toMatchObject({ allowed: false, remaining: 0, limit, windowSeconds: 60 });
    expect(refused.resetSeconds).toBeGreaterThanOrEqual(59);
    expect(refused.resetSeconds).toBeLessThanOrEqual(60);
    expect(counted.calls).toBe(callsBefore);
  });

  it("never waits for another request's refill: when the slice runs out first, a request asks for itself", async () => {
    const limit = 100; // slice 5, refill at 2 left
    const budgets = new LeasedBudgets();
    const inner = durableLeaseClient(env.RATE_LIMITER);
    const { background, settle } = backgroundTasks();
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const requests: number[] = [];
    // The second lease call is the first refill: hold it back until the test says so.
    const client: LeaseClient = async (subject, request) => {
      requests.push(request.want);
      if (requests.length === 2) await gate;
      return inner(subject, request);
    };
    const subject = `api:${uuid()}`;
    for (let call = 1; call <= 6; call++) {
      expect((await budgets.take(subject, limit, 60, client, background)).allowed, `call ${call}`).toBe(true);
    }
    // Call 1 leased 5; call 3 left 2 and started the refill (3 wanted, held back); call 6 found none and
    // asked for itself, only what keeps the isolate within one slice (5 − 3 in flight).
    expect(requests).toEqual([sliceSize(limit), 3, 2]);
    expect(budgets.calls).toEqual({ sync: 2, background: 1 });
    release();
    await settle();
    for (let call = 7; call <= 10; call++) {
      expect((await budgets.take(subject, limit, 60, client, background)).remaining).toBe(limit - call);
    }
    expect(budgets.calls.sync).toBe(2);
    await settle();
  });
});

describe("leased general limit (one isolate): concurrency, remembered tokens and the window", () => {
  it("admits exactly the limit of many concurrent requests in one isolate", async () => {
    const limit = 25;
    const budgets = new LeasedBudgets();
    const { client } = countingClient();
    const { background, settle } = backgroundTasks();
    const subject = `api:${uuid()}`;
    const verdicts = await Promise.all(
      Array.from({ length: 60 }, () => budgets.take(subject, limit, 60, client, background)),
    );
    await settle();
    const more = await Promise.all(
      Array.from({ length: 10 }, () => budgets.take(subject, limit, 60, client, background)),
    );
    await settle();
    expect([...verdicts, ...more].filter((v) => v.allowed)).toHaveLength(limit);
    expect(await countedBy(subject, limit)).toBe(limit);
  });

  it("remembers at most maxSubjects tokens, forgetting the least recently used one (which then leases anew)", async () => {
    const budgets = new LeasedBudgets({ maxSubjects: 2 });
    const { client } = countingClient();
    const { background, settle } = backgroundTasks();
    const [a, b, c] = [`api:${uuid()}`, `api:${uuid()}`, `api:${uuid()}`];
    const take = (subject: string) => budgets.take(subject, 100, 60, client, background);
    await take(a);
    await take(b);
    await take(a); // a is now the most recently used
    await take(c); // forgets b
    expect(budgets.calls.sync).toBe(3);
    await take(a);
    expect(budgets.calls.sync).toBe(3);
    expect(await take(b)).toMatchObject({ allowed: true });
    expect(budgets.calls.sync).toBe(4);
    await settle();
    // b's first slice is stranded like that of an isolate gone away: counted, never spent.
    expect(await countedBy(b, 100)).toBe(2 * sliceSize(100));
  });

  describe("with the isolate's clock in the test's hand", () => {
    const clock = isolateClock();

    it("opens a new window once the old one has passed", async () => {
      const budgets = new LeasedBudgets();
      const { client } = countingClient();
      const { background, settle } = backgroundTasks();
      const subject = `api:${uuid()}`;
      const take = () => budgets.take(subject, 3, 1, client, background);
      const first = [await take(), await take(), await take(), await take()];
      expect(first.map((v) => v.allowed)).toEqual([true, true, true, false]);
      expect(first[3]?.resetSeconds).toBe(1);
      await settle();
      clock.advance(1_100);
      expect(await take()).toMatchObject({ allowed: true, remaining: 2 });
    });
  });
});

describe("leased general limit (several isolates)", () => {
  it("two isolates together never admit more than the limit of a token", async () => {
    const limit = 100;
    const isolates = [new LeasedBudgets(), new LeasedBudgets()];
    const { client } = countingClient();
    const { background, settle } = backgroundTasks();
    const subject = `api:${uuid()}`;
    let admitted = 0;
    for (let round = 0; round < limit; round++) {
      for (const isolate of isolates)
        if ((await isolate.take(subject, limit, 60, client, background)).allowed) admitted++;
      await settle();
    }
    expect(admitted).toBe(limit);
    expect(await countedBy(subject, limit)).toBe(limit);
  });

  it("an isolate that goes away strands at most one slice (limit / SLICES_PER_WINDOW) of the window", async () => {
    const limit = 200;
    const gone = new LeasedBudgets();
    const alive = new LeasedBudgets();
    const { client } = countingClient();
    const { background, settle } = backgroundTasks();
    const subject = `api:${uuid()}`;
    // The first isolate serves a few calls, refills, then is never called again.
    for (let i = 0; i < 7; i++) expect((await gone.take(subject, limit, 60, client, background)).allowed).toBe(true);
    await settle();
    let admitted = 0;
    for (let i = 0; i < limit; i++) {
      if ((await alive.take(subject, limit, 60, client, background)).allowed) admitted++;
      await settle();
    }
    expect(7 + admitted).toBeLessThanOrEqual(limit);
    expect(7 + admitted).toBeGreaterThanOrEqual(limit - Math.ceil(limit / SLICES_PER_WINDOW));
  });
});

describe("leased general limit through the guard", () => {
  /** A bearer call through the app (some variables overridden), waiting for the refills it left running. */
  const call = (path: string, token: string, vars: Record<string, string> = {}) => api(path, { token, env: vars });

  it("refuses call limit + 1 of a window with the exact 429 body, Retry-After and RateLimit headers", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    const vars = { API_LIMIT_PER_MINUTE: "45" };
    for (let n = 1; n <= 45; n++) {
      const response = await call(`/products/${product.id}`, token, vars);
      await expectStatus(response, 200, `call ${n}`);
      await response.arrayBuffer();
      const [, remaining, reset] =
        /^limit=45, remaining=(\d+), reset=(\d+)$/.exec(response.headers.get("RateLimit") ?? "") ?? [];
      expect(Number(remaining), `call ${n}`).toBe(45 - n);
      expect(Number(reset)).toBeGreaterThanOrEqual(50);
      expect(Number(reset)).toBeLessThanOrEqual(60);
    }
    const refused = await call(`/products/${product.id}`, token, vars);
    const refusal = await expectJson(refused, 429);
    const retryAfter = Number(refused.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(50);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refusal).toEqual({ message: `Too many requests, retry after ${retryAfter} seconds.` });
    expect(refused.headers.get("RateLimit-Policy")).toBe("45;w=60");
    expect(refused.headers.get("RateLimit")).toBe(`limit=45, remaining=0, reset=${retryAfter}`);
  });

  it("makes one awaited lease call per token and window; warm calls only refill in the background", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    const before = { ...generalBudgets.calls };
    const cold = await call(`/products/${product.id}`, token);
    await expectStatus(cold, 200);
    const afterCold = { ...generalBudgets.calls };
    const warmCalls = 599;
    for (let i = 0; i < warmCalls; i++) {
      const response = await call(`/products/${product.id}`, token);
      if (response.status !== 200) throw new Error(`warm call ${i} answered ${response.status}`);
      await response.arrayBuffer();
    }
    const after = { ...generalBudgets.calls };
    expect(afterCold.sync - before.sync).toBe(1);
    expect(after.sync - afterCold.sync).toBe(0);
    const background = after.background - afterCold.background;
    // 600 per minute: slices of 30, refilled at 15 left, so about one background call per 15 calls.
    expect(background).toBeGreaterThan(0);
    expect(background / warmCalls).toBeLessThan(0.1);
  }, 60_000);
});
