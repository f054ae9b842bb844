import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { products } from "../../src/db/schema";
import { bookmarkHeader } from "../../src/db/session";
import { ReadCache } from "../../src/http/read-cache";
import { isolateClock, manualClock } from "../support/clock";
import { customFields, seed, seedProduct, seedStore, seedToken, storeDb, uuid } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";

/** A product's name changed in its database behind the Worker, as the rest of the platform writes it. */
async function renameBehindTheApi(storeId: string, productId: string, name: string) {
  await (await storeDb(storeId)).update(products).set({ name }).where(eq(products.id, productId));
}

async function productName(productId: string, token: string, headers: Record<string, string> = {}) {
  const body = await expectJson(await api(`/products/${productId}`, { token, headers }), 200);
  return body.name;
}

/**
 * Issue 24, reads at the edge's ceiling: a repeated live product read or cross-sell list is answered from the
 * isolate's memory for READ_CACHE_MS, as fresh as a read without a bookmark is promised to be (docs/latency.md);
 * that it then makes no round trip is in test/db/round-trips.test.ts.
 */
describe("read answers kept by the isolate", () => {
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
