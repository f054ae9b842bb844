import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { FixedWindowCounter } from "../../src/limits/fixed-window";
import type { RateLimiter } from "../../src/limits/rate-limiter";
import { seedProduct, seedStore, uuid } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";

function counterIn(name: string) {
  const stub = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(name));
  return <R>(use: (counter: FixedWindowCounter) => R) =>
    runInDurableObject(stub, (_instance: RateLimiter, state) => use(new FixedWindowCounter(state.storage.sql)));
}

describe("fixed-window counter", () => {
  it("accepts exactly `limit` requests in a window and refuses the next with the seconds until it resets", async () => {
    const inCounter = counterIn(`unit-${uuid()}`);
    const verdicts = await inCounter((counter) => [
      counter.consume("k", 3, 60_000, 1_000),
      counter.consume("k", 3, 60_000, 2_000),
      counter.consume("k", 3, 60_000, 3_000),
      counter.consume("k", 3, 60_000, 30_500),
    ]);
    expect(verdicts.map((v) => v.allowed)).toEqual([true, true, true, false]);
    expect(verdicts.map((v) => v.remaining)).toEqual([2, 1, 0, 0]);
    // The window opened at t=1s and closes at t=61s: 30.5 s left rounds up to 31.
    expect(verdicts[3]?.resetSeconds).toBe(31);
  });

  it("opens a new window once the old one has passed", async () => {
    const inCounter = counterIn(`unit-${uuid()}`);
    const verdicts = await inCounter((counter) => [
      counter.consume("k", 1, 60_000, 0),
      counter.consume("k", 1, 60_000, 59_999),
      counter.consume("k", 1, 60_000, 60_000),
    ]);
    expect(verdicts.map((v) => v.allowed)).toEqual([true, false, true]);
    expect(verdicts[1]?.resetSeconds).toBe(1);
  });

  it("a refund takes back one request of the open window, and never more than it counted", async () => {
    const inCounter = counterIn(`unit-${uuid()}`);
    const verdicts = await inCounter((counter) => {
      counter.consume("k", 1, 60_000, 0);
      counter.refund("k", 60_000, 1_000);
      const afterRefund = counter.consume("k", 1, 60_000, 2_000);
      counter.refund("k", 60_000, 3_000);
      counter.refund("k", 60_000, 3_000);
      return [afterRefund, counter.consume("k", 1, 60_000, 4_000), counter.consume("k", 1, 60_000, 5_000)];
    });
    expect(verdicts.map((v) => v.allowed)).toEqual([true, true, false]);
  });

  it("keeps separate keys apart", async () => {
    const inCounter = counterIn(`unit-${uuid()}`);
    const verdicts = await inCounter((counter) => [counter.consume("a", 1, 60_000), counter.consume("b", 1, 60_000)]);
    expect(verdicts.every((v) => v.allowed)).toBe(true);
  });
});

describe("general API limit: 600 per 60 seconds per token", () => {
  it("accepts 600 calls of a token, answers the 601st 429 with Retry-After, and leaves other tokens alone", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    for (let call = 1; call <= 600; call++) {
      const response = await api(`/products/${product.id}`, { token });
      if (response.status !== 200) throw new Error(`call ${call} answered ${response.status}`);
      await response.arrayBuffer();
    }
    const refused = await api(`/products/${product.id}`, { token });
    const refusal = await expectJson(refused, 429);
    const retryAfter = Number(refused.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refusal).toEqual({ message: `Too many requests, retry after ${retryAfter} seconds.` });
    expect(refused.headers.get("RateLimit-Policy")).toBe("600;w=60");
    expect(refused.headers.get("RateLimit")).toBe(`limit=600, remaining=0, reset=${retryAfter}`);

    const other = await seedStore();
    await expectStatus(await api(`/products/${uuid()}`, { token: other.token }), 404);
  }, 60_000);

  it("carries RateLimit-Policy and RateLimit on accepted responses", async () => {
    const { token } = await seedStore();
    const first = await api(`/products/${uuid()}`, { token });
    expect(first.headers.get("RateLimit-Policy")).toBe("600;w=60");
    expect(first.headers.get("RateLimit")).toMatch(/^limit=600, remaining=599, reset=(60|59)$/);
    const second = await api(`/products/${uuid()}`, { token });
    expect(second.headers.get("RateLimit")).toMatch(/^limit=600, remaining=598, /);
  });

  it("counts calls refused after authentication (403) toward the token", async () => {
    const { token } = await seedStore();
    const other = await seedStore();
    const refused = await api(`/products/${uuid()}`, { token, store: other.storeId });
    await expectStatus(refused, 403);
    const next = await api(`/products/${uuid()}`, { token });
    expect(next.headers.get("RateLimit")).toMatch(/remaining=598/);
  });
});
