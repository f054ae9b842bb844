import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { apiTokens } from "../../src/db/schema";
import { tokenCache } from "../../src/http/auth";
import { TokenCache, UNKNOWN_TOKEN_CACHE_SECONDS, type VerifiedToken } from "../../src/http/token-cache";
import { sha256Hex } from "../../src/lib/crypto";
import { isolateClock, manualClock } from "../support/clock";
import { seed, seedProduct, seedStore, uuid } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";

/** A clock the test moves by hand, and a loader that counts its D1 reads. */
function fixture(rows: Record<string, VerifiedToken> = {}) {
  const clock = manualClock();
  const cache = new TokenCache({ now: clock.now, maxEntries: 3 });
  const reads: string[] = [];
  const load = async (hash: string) => {
    reads.push(hash);
    return rows[hash] ?? null;
  };
  return { cache, reads, load, advance: clock.advance };
}

const row = (hash: string): VerifiedToken => ({ tokenHash: hash, storeIds: [uuid()], abilities: ["*"] });

describe("token cache (unit, injected clock)", () => {
  it("serves a known token from memory until TOKEN_CACHE_SECONDS pass, then reads D1 again", async () => {
    const { cache, reads, load, advance } = fixture({ a: row("a") });
    expect(await cache.resolve("a", 30, load)).toMatchObject({ tokenHash: "a" });
    advance(29_999);
    expect(await cache.resolve("a", 30, load)).toMatchObject({ tokenHash: "a" });
    expect(reads).toEqual(["a"]);
    advance(1);
    await cache.resolve("a", 30, load);
    expect(reads).toEqual(["a", "a"]);
  });

  it("remembers an unknown token for UNKNOWN_TOKEN_CACHE_SECONDS, so repeating it reads D1 once", async () => {
    const { cache, reads, load, advance } = fixture();
    for (let i = 0; i < 50; i++) expect(await cache.resolve("bad", 30, load)).toBeNull();
    expect(reads).toHaveLength(1);
    advance(UNKNOWN_TOKEN_CACHE_SECONDS * 1000 - 1);
    await cache.resolve("bad", 30, load);
    expect(reads).toHaveLength(1);
    advance(1);
    await cache.resolve("bad", 30, load);
    expect(reads).toHaveLength(2);
  });

  it("never remembers an unknown token longer than TOKEN_CACHE_SECONDS, and caches nothing at 0", async () => {
    const { cache, reads, load, advance } = fixture({ a: row("a") });
    await cache.resolve("bad", 2, load);
    advance(2_000);
    await cache.resolve("bad", 2, load);
    expect(reads).toEqual(["bad", "bad"]);
    await cache.resolve("a", 0, load);
    await cache.resolve("a", 0, load);
    await cache.resolve("other", 0, load);
    await cache.resolve("other", 0, load);
    expect(reads).toEqual(["bad", "bad", "a", "a", "other", "other"]);
  });

  it("keeps at most maxEntries known tokens, evicting the least recently used, and unknown ones never push known ones out", async () => {
    const { cache, reads, load } = fixture({ a: row("a"), b: row("b"), c: row("c"), d: row("d") });
    for (const hash of ["a", "b", "c", "d"]) await cache.resolve(hash, 30, load);
    for (const hash of ["x1", "x2", "x3", "x4", "x5"]) await cache.resolve(hash, 30, load);
    reads.length = 0;
    for (const hash of ["b", "c", "d"]) await cache.resolve(hash, 30, load);
    expect(reads).toEqual([]);
    await cache.resolve("a", 30, load);
    expect(reads).toEqual(["a"]);
  });

  it("hands out frozen copies, so one request cannot change what the next one sees", async () => {
    const { cache, load } = fixture({ a: row("a") });
    const token = await cache.resolve("a", 30, load);
    expect(Object.isFrozen(token?.abilities)).toBe(true);
    expect(Object.isFrozen(token?.storeIds)).toBe(true);
  });
});

describe("token cache through the guard: revocation takes effect within TOKEN_CACHE_SECONDS", () => {
  const vars = { TOKEN_CACHE_SECONDS: "1" };
  // The guard's cache reads the isolate's clock: these tests move it past the cache time instead of waiting.
  const clock = isolateClock();
  /** A bearer call through the app with some configuration variables overridden, as `wrangler dev --var` would. */
  const call = (path: string, token: string, overrides: Record<string, string>) => api(path, { token, env: overrides });

  it("still accepts a token deleted from D1 until the cache time passes, then answers 401", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    await expectStatus(await call(`/products/${product.id}`, token, vars), 200);
    await createDb(env.DB)
      .delete(apiTokens)
      .where(eq(apiTokens.tokenHash, await sha256Hex(token)));
    await expectStatus(await call(`/products/${product.id}`, token, vars), 200);
    clock.advance(1_100);
    const refused = await call(`/products/${product.id}`, token, vars);
    expect(await expectJson(refused, 401)).toEqual({ message: "Unauthenticated." });
  });

  it("keeps a token's old abilities until the cache time passes, then applies the new ones (403)", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    await expectStatus(await call(`/products/${product.id}`, token, vars), 200);
    await createDb(env.DB)
      .update(apiTokens)
      .set({ abilities: ["subscriptions:read"] })
      .where(eq(apiTokens.tokenHash, await sha256Hex(token)));
    await expectStatus(await call(`/products/${product.id}`, token, vars), 200);
    clock.advance(1_100);
    const refused = await call(`/products/${product.id}`, token, vars);
    expect(await expectJson(refused, 403)).toEqual({ message: "This action is unauthorized." });
  });

  it("answers a token unknown at first 401 (without a second D1 read) until the unknown entry lapses", async () => {
    const { storeId } = await seedStore();
    const product = await seedProduct(storeId);
    const token = `test-token-${uuid()}`;
    const loadsBefore = tokenCache.loads;
    await expectStatus(await call(`/products/${product.id}`, token, vars), 401);
    await seed({ tokens: [{ token, store_ids: [storeId], abilities: ["*"] }] });
    await expectStatus(await call(`/products/${product.id}`, token, vars), 401);
    expect(tokenCache.loads - loadsBefore).toBe(1);
    clock.advance(1_100);
    await expectStatus(await call(`/products/${product.id}`, token, vars), 200);
  });

  it("reads D1 once for many warm calls of a token", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    const loadsBefore = tokenCache.loads;
    for (let i = 0; i < 5; i++) await expectStatus(await call(`/products/${product.id}`, token, {}), 200);
    expect(tokenCache.loads - loadsBefore).toBe(1);
  });
});

describe("API reference", () => {
  it("says in the bearer security scheme that a revocation takes effect within TOKEN_CACHE_SECONDS", async () => {
    const document = await expectJson<{
      components: { securitySchemes: Record<string, { type: string; scheme: string; description?: string }> };
    }>(await api("/openapi.json"), 200);
    const scheme = document.components.securitySchemes.bearerAuth;
    expect(scheme).toMatchObject({ type: "http", scheme: "bearer" });
    expect(scheme?.description).toMatch(/revoking a token .* takes effect within that time/);
    expect(scheme?.description).toContain("`TOKEN_CACHE_SECONDS` (30 by default)");
  });
});
