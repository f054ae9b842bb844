import { describe, expect, it } from "vitest";
import { seedProduct, seedStore, uuid } from "../support/factories";
import { countRoundTrips } from "../support/round-trips";

/**
 * Issue 11: a far client pays every sequential trip to D1's primary or a Durable Object, so each read
 * makes one D1 round trip (one statement or one batch) once its token is verified and cached.
 */
describe("round trips per read", () => {
  /** The trips of `path` with its token warm, asked for the first time (not an answer the isolate kept). */
  async function warm(path: string, token: string) {
    // Verifies and caches the token and leases a budget slice; a 404 is never kept (src/http/read-cache.ts).
    await countRoundTrips(`/products/${uuid()}`, { token });
    return (await countRoundTrips(path, { token })).trips;
  }

  it("the product read makes one D1 round trip and no Durable Object call when warm", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    expect(await warm(`/products/${product.id}`, token)).toEqual({ d1: 1, durableObjects: 0 });
  });

  it("a cold product read verifies the token (one more D1 trip) and leases a budget slice (one DO call)", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    expect((await countRoundTrips(`/products/${product.id}`, { token })).trips).toEqual({ d1: 2, durableObjects: 1 });
  });

  it("the draft read makes one D1 round trip when warm", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { draft: { draft_version: 1 } });
    expect((await warm(`/products/${product.id}/draft`, token)).d1).toBe(1);
  });

  it("both cross-sell lists make one D1 round trip when warm", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { draft: { draft_version: 1 } });
    expect((await warm(`/products/${product.id}/cross-sells`, token)).d1).toBe(1);
    expect((await warm(`/products/${product.id}/draft/cross-sells`, token)).d1).toBe(1);
  });

  it("the subscription list makes one D1 round trip when warm, with or without a search", async () => {
    const { token } = await seedStore();
    expect((await warm("/subscriptions", token)).d1).toBe(1);
    expect((await warm("/subscriptions?query=anna", token)).d1).toBe(1);
  });

  it("a product read or live cross-sell list asked again within READ_CACHE_MS makes no round trip", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    for (const path of [`/products/${product.id}`, `/products/${product.id}/cross-sells`]) {
      await countRoundTrips(path, { token });
      expect((await countRoundTrips(path, { token })).trips).toEqual({ d1: 0, durableObjects: 0 });
    }
  });

  it("a 404 costs the same one round trip", async () => {
    const { token } = await seedStore();
    expect((await warm(`/products/${uuid()}`, token)).d1).toBe(1);
  });
});
