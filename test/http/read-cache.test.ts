import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { products } from "../../src/db/schema";
import { bookmarkHeader } from "../../src/db/session";
import { ReadCache } from "../../src/http/read-cache";
import { isolateClock, manualClock } from "../support/clock";
import { customFields, seed, seedProduct, seedStore, seedToken, storeDb, uuid } from "../support/factories";
import { api, type BindingOverrides, expectJson, expectStatus } from "../support/http";
import { freshIp } from "../support/uploads";

/** A product's name changed in its database behind the Worker, as the rest of the platform writes it. */
async function renameBehindTheApi(storeId: string, productId: string, name: string) {
  await (await storeDb(storeId)).update(products).set({ name }).where(eq(products.id, productId));
}

async function productName(
  productId: string,
  token: string,
  headers: Record<string, string> = {},
  env?: BindingOverrides,
) {
  const body = await expectJson(await api(`/products/${productId}`, { token, headers, env }), 200);
  return body.name;
}

/**
 * Issue 24, reads at the edge's ceiling: a repeated live product read or cross-sell list is answered from the
 * isolate's memory for READ_CACHE_MS, as fresh as a read without a bookmark is promised to be (docs/latency.md);
 * that it then makes no round trip is in test/db/round-trips.test.ts.
 */
describe("read answers kept by the isolate: what an answer carries, and when a change is seen", () => {
  const clock = isolateClock();

  it("a kept answer carries the request's own id and rate-limit headers, and the first answer's bookmark", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    const first = await api(`/products/${product.id}`, { token });
    expect(first.headers.get(bookmarkHeader)).toBeTruthy();
    const again = await api(`/products/${product.id}`, { token });
    await expectStatus(again, 200);
    expect(await again.text()).toBe(await first.text());
    expect(again.headers.get("Content-Type")).toBe(first.headers.get("Content-Type"));
    expect(again.headers.get("X-Request-Id")).not.toBe(first.headers.get("X-Request-Id"));
    expect(again.headers.get("RateLimit")).toMatch(/^limit=\d+, remaining=\d+, reset=\d+$/);
    expect(again.headers.get(bookmarkHeader)).toBe(first.headers.get(bookmarkHeader));
  });

  it("a write through the API is seen by the next read at once (draft deleted, then a custom field)", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, {
      custom_fields: customFields("nip", "phone"),
      draft: { draft_version: 1 },
    });
    const before = await expectJson(await api(`/products/${product.id}`, { token }), 200);
    expect(before.has_draft).toBe(true);
    await expectStatus(await api(`/products/${product.id}/draft`, { token, method: "DELETE" }), 204);
    expect((await expectJson(await api(`/products/${product.id}`, { token }), 200)).has_draft).toBe(false);
    await expectStatus(await api(`/products/${product.id}/custom-fields/nip`, { token, method: "DELETE" }), 204);
    const after = await expectJson(await api(`/products/${product.id}`, { token }), 200);
    expect((after.custom_fields as { name: string }[]).map((field) => field.name)).toEqual(["phone"]);
    expect(after.has_draft).toBe(false);
  });

  it("a write through the API with another token of the store is seen at once by the first token's read", async () => {
    const { storeId, token } = await seedStore();
    const writer = await seedToken([storeId], ["products:write"]);
    const product = await seedProduct(storeId, { draft: { draft_version: 1 } });
    expect((await expectJson(await api(`/products/${product.id}`, { token }), 200)).has_draft).toBe(true);
    await expectStatus(await api(`/products/${product.id}/draft`, { token: writer, method: "DELETE" }), 204);
    expect((await expectJson(await api(`/products/${product.id}`, { token }), 200)).has_draft).toBe(false);
  });

  it("forgets only the writer's stores: a write of another store, or one its guard refused (401), keeps the answer", async () => {
    const { storeId, token } = await seedStore();
    const other = await seedStore();
    const product = await seedProduct(storeId, { name: "Before" });
    const otherProduct = await seedProduct(other.storeId, { draft: { draft_version: 1 } });
    expect(await productName(product.id, token)).toBe("Before");
    await renameBehindTheApi(storeId, product.id, "After");
    const otherWrite = await api(`/products/${otherProduct.id}/draft`, { token: other.token, method: "DELETE" });
    await expectStatus(otherWrite, 204);
    await expectStatus(await api(`/products/${product.id}/draft`, { token: "not-a-token", method: "DELETE" }), 401);
    expect(await productName(product.id, token)).toBe("Before");
  });

  it("a change made behind the API is seen once READ_CACHE_MS (1,000) has passed, not before", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { name: "Before" });
    expect(await productName(product.id, token)).toBe("Before");
    await renameBehindTheApi(storeId, product.id, "After");
    clock.advance(999);
    expect(await productName(product.id, token)).toBe("Before");
    clock.advance(1);
    expect(await productName(product.id, token)).toBe("After");
  });
});

describe("read answers kept by the isolate: which requests get a kept answer", () => {
  // Kept answers last READ_CACHE_MS on the isolate's clock, which moves only when the test moves it.
  isolateClock();

  it("a read with a bookmark is never answered from memory: it sees the change at once", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { name: "Before" });
    const first = await api(`/products/${product.id}`, { token });
    const bookmark = first.headers.get(bookmarkHeader);
    expect(bookmark).toBeTruthy();
    await renameBehindTheApi(storeId, product.id, "After");
    expect(await productName(product.id, token, { [bookmarkHeader]: bookmark ?? "" })).toBe("After");
  });

  it("keeps no answer with READ_CACHE_MS=0", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { name: "Before" });
    const read = async () =>
      (await expectJson(await api(`/products/${product.id}`, { token, env: { READ_CACHE_MS: "0" } }), 200)).name;
    expect(await read()).toBe("Before");
    await renameBehindTheApi(storeId, product.id, "After");
    expect(await read()).toBe("After");
  });

  it("a token without access to the product's store gets 404, not another token's kept answer", async () => {
    const { storeId, token } = await seedStore();
    const other = await seedStore();
    const product = await seedProduct(storeId);
    await expectStatus(await api(`/products/${product.id}`, { token }), 200);
    const refused = await api(`/products/${product.id}`, { token: other.token });
    expect(await expectJson(refused, 404)).toEqual({ message: `Product with ID ${product.id} not found` });
  });

  it("a token of two stores: the product's kept answer is not given to a request scoped to the other store (404)", async () => {
    const a = await seedStore();
    const b = await seedStore();
    const token = await seedToken([a.storeId, b.storeId]);
    const product = await seedProduct(a.storeId);
    await expectStatus(await api(`/products/${product.id}`, { token }), 200);
    const scoped = await api(`/products/${product.id}`, { token, store: b.storeId });
    expect(await expectJson(scoped, 404)).toEqual({ message: `Product with ID ${product.id} not found` });
    await expectStatus(await api(`/products/${product.id}`, { token, store: a.storeId }), 200);
  });
});

describe("read answers kept by the isolate: limits, statuses, queries and the fixture route", () => {
  // Kept answers last READ_CACHE_MS on the isolate's clock, which moves only when the test moves it.
  isolateClock();

  it("a kept answer still counts toward the general limit: the call after the limit answers 429 with Retry-After", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    const env = { API_LIMIT_PER_MINUTE: "3" };
    for (let call = 0; call < 3; call++) {
      await expectStatus(await api(`/products/${product.id}`, { token, env }), 200);
    }
    const refused = await api(`/products/${product.id}`, { token, env });
    expect(await expectJson(refused, 429)).toEqual({
      message: expect.stringMatching(/^Too many requests, retry after \d+ seconds\.$/),
    });
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
  });

  it("keeps only 200 answers: a product that was not found is found as soon as it exists", async () => {
    const { storeId, token } = await seedStore();
    const id = uuid();
    await expectStatus(await api(`/products/${id}`, { token }), 404);
    await seed({ products: [{ id, store_id: storeId, status: "published", name: "New", slug: `n-${id}` }] });
    expect(await productName(id, token)).toBe("New");
  });

  it("each query of the cross-sell list is its own answer, and a malformed one is still refused", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    await expectStatus(await api(`/products/${product.id}/cross-sells?per_page=5`, { token }), 200);
    await expectStatus(await api(`/products/${product.id}/cross-sells?per_page=500`, { token }), 422);
  });

  it("the development fixture route forgets every kept answer", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { name: "Before" });
    expect(await productName(product.id, token)).toBe("Before");
    const loaded = await api("/_dev/fixtures", {
      method: "POST",
      body: { products: [{ ...product, name: "Reloaded" }] },
    });
    await expectStatus(loaded, 201);
    expect(await productName(product.id, token)).toBe("Reloaded");
  });
});

/**
 * Issue 33, item 1: a request refused by its route's gate (no or a wrong secret, a switched-off route, the
 * guard's 401/403/429) wrote nothing, so it forgets no kept answer: otherwise anyone could keep every isolate's
 * answers forgotten, sending every read to D1. Each test keeps an answer, changes the product behind the API,
 * sends the refused request, and reads the kept (old) answer again.
 */
describe("a request refused before it may write forgets no kept answer", () => {
  // Stands still, so a kept answer outlives the requests in between however long they take.
  isolateClock();
  const secret = "s3cret";
  /** A deployment: the operator's routes behind STORE_MOVE_SECRET, no development routes. */
  const deployment: BindingOverrides & { STORE_MOVE_SECRET?: string } = {
    DEV_FIXTURES: "off",
    STORE_MOVE_SECRET: secret,
  };

  /** A product whose answer is kept and then changed behind the API; `stillKept` reads the kept answer. */
  async function keptThenChanged(env: BindingOverrides) {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { name: "Before", draft: { draft_version: 1 } });
    const name = () => productName(product.id, token, {}, env);
    expect(await name()).toBe("Before");
    await renameBehindTheApi(storeId, product.id, "After");
    return { storeId, product, name };
  }

  /** A POST of the operator's or development routes, from a client IP of its own (the wrong-secret limit is per IP). */
  const post = (path: string, env: BindingOverrides, bearer?: string, body: unknown = { to: "SHARD_1" }) =>
    api(path, { method: "POST", token: bearer, body, env, headers: { "CF-Connecting-IP": freshIp() } });

  it("a store move without the operator's secret (no bearer, a wrong one: 401) forgets nothing", async () => {
    const { storeId, name } = await keptThenChanged(deployment);
    await expectStatus(await post(`/_ops/stores/${storeId}/move`, deployment), 401);
    await expectStatus(await post(`/_ops/stores/${storeId}/move`, deployment, "wrong"), 401);
    expect(await name()).toBe("Before");
  });

  it("a move recovery with a wrong secret (401) forgets nothing", async () => {
    const { storeId, name } = await keptThenChanged(deployment);
    await expectStatus(await post(`/_ops/stores/${storeId}/move/recover`, deployment, "wrong", {}), 401);
    expect(await name()).toBe("Before");
  });

  it("the operator's routes of a deployment without STORE_MOVE_SECRET (404) forget nothing", async () => {
    const noSecret = { DEV_FIXTURES: "off" };
    const { storeId, name } = await keptThenChanged(noSecret);
    await expectStatus(await post(`/_ops/stores/${storeId}/move`, noSecret, secret), 404);
    await expectStatus(await post(`/_ops/stores/${storeId}/move/recover`, noSecret, secret, {}), 404);
    expect(await name()).toBe("Before");
  });

  it("the development routes with DEV_FIXTURES off (404) forget nothing", async () => {
    const { storeId, product, name } = await keptThenChanged(deployment);
    await expectStatus(await post("/_dev/fixtures", deployment, undefined, { products: [product] }), 404);
    await expectStatus(await post(`/_dev/stores/${storeId}/move`, deployment), 404);
    await expectStatus(await post(`/_dev/stores/${storeId}/move/recover`, deployment, undefined, {}), 404);
    await expectStatus(await post("/_dev/platform/faults", deployment, undefined, { store_id: storeId }), 404);
    expect(await name()).toBe("Before");
  });

  it("a write the guard refused for a missing ability (403) or the token's limit (429) forgets nothing", async () => {
    const limited = { ...deployment, API_LIMIT_PER_MINUTE: "1" };
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { name: "Before", draft: { draft_version: 1 } });
    // Seeded before the answer is kept: seeding forgets every kept answer, as the fixture route does.
    const reader = await seedToken([storeId], ["products:read"]);
    const writer = await seedToken([storeId], ["products:read", "products:write"]);
    expect(await productName(product.id, token, {}, limited)).toBe("Before");
    await renameBehindTheApi(storeId, product.id, "After");
    const deleteDraft = (caller: string) =>
      api(`/products/${product.id}/draft`, { token: caller, method: "DELETE", env: limited });
    await expectStatus(await deleteDraft(reader), 403);
    await expectStatus(await api(`/products/${uuid()}`, { token: writer, env: limited }), 404);
    await expectStatus(await deleteDraft(writer), 429);
    expect(await productName(product.id, token, {}, deployment)).toBe("Before");
  });

  it("a call the operator's secret let through forgets every kept answer", async () => {
    const { storeId, name } = await keptThenChanged(deployment);
    const recovered = await post(`/_ops/stores/${storeId}/move/recover`, deployment, secret, {});
    expect(await expectJson(recovered, 200)).toMatchObject({ found: "settled" });
    expect(await name()).toBe("After");
  });
});

describe("ReadCache", () => {
  const answer = (stores: string[], body = "{}") => ({
    body,
    contentType: "application/json",
    bookmark: undefined,
    stores,
  });

  it("does not keep an answer read while a write ran in the isolate", () => {
    const cache = new ReadCache({ now: manualClock().now });
    const ticket = cache.ticket();
    cache.forget(["store-b"]);
    cache.keep("k", ticket, cache.now(), 1000, answer(["store-a"]));
    expect(cache.get("k")).toBeUndefined();
    cache.keep("k", cache.ticket(), cache.now(), 1000, answer(["store-a"]));
    expect(cache.get("k")?.body).toBe("{}");
  });

  it("a write forgets the answers of its stores only; a write of unknown stores forgets all", () => {
    const cache = new ReadCache();
    cache.keep("a", cache.ticket(), cache.now(), 1000, answer(["store-a"]));
    cache.keep("b", cache.ticket(), cache.now(), 1000, answer(["store-b", "store-c"]));
    cache.forget(["store-c"]);
    expect(cache.get("a")).toBeDefined();
    expect(cache.get("b")).toBeUndefined();
    cache.forget(null);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("is bounded by bytes, least recently read out first, and keeps no answer over the entry bound", () => {
    const body = "x".repeat(100);
    const entry = (key: string) => (body.length + key.length) * 2;
    const cache = new ReadCache({ maxBytes: entry("a") * 2, maxEntryBytes: entry("a") });
    cache.keep("a", cache.ticket(), cache.now(), 1000, answer(["s"], body));
    cache.keep("b", cache.ticket(), cache.now(), 1000, answer(["s"], body));
    cache.get("a");
    cache.keep("c", cache.ticket(), cache.now(), 1000, answer(["s"], body));
    expect([cache.get("a"), cache.get("b"), cache.get("c")].map(Boolean)).toEqual([true, false, true]);
    expect(cache.size).toBe(entry("a") * 2);
    cache.keep("d", cache.ticket(), cache.now(), 1000, answer(["s"], `${body}y`));
    expect(cache.get("d")).toBeUndefined();
  });

  it("an answer lasts its time from the read's start", () => {
    const clock = manualClock();
    const cache = new ReadCache({ now: clock.now });
    const startedAt = cache.now();
    clock.advance(300);
    cache.keep("k", cache.ticket(), startedAt, 1000, answer(["s"]));
    clock.advance(699);
    expect(cache.get("k")).toBeDefined();
    clock.advance(1);
    expect(cache.get("k")).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
