import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ABILITIES, newTokenSecret, tokenHash, tokenStatements } from "../../../scripts/lib/api-token.mjs";
import { abilities } from "../../../src/http/auth";
import { sha256Hex } from "../../../src/lib/crypto";
import { seedStore, uuid } from "../../support/factories";
import { api, expectJson, expectStatus } from "../../support/http";

/** Runs what `npm run token:create` sends to `wrangler d1 execute`, here on the test database. */
async function runStatements(statements: string[]) {
  await env.DB.batch(statements.map((statement) => env.DB.prepare(statement)));
}

describe("npm run token:create writes tokens the service accepts", () => {
  it("knows exactly the abilities the guard checks", () => {
    expect([...ABILITIES]).toEqual([...abilities]);
  });

  it("hashes a secret as the service does (SHA-256, lower-case hex)", async () => {
    for (const secret of [newTokenSecret(), "demo-checkout-token-akademia-2026", "ünïcödé-token"]) {
      expect(await tokenHash(secret)).toBe(await sha256Hex(secret));
    }
  });

  it("a new store and its token: the token reads the store's subscriptions and prepares an upload for it", async () => {
    const secret = newTokenSecret();
    const storeId = uuid();
    await runStatements(
      await tokenStatements({
        secret,
        storeIds: [storeId],
        abilities: ["subscriptions:read", "media:write"],
        newStores: [{ id: storeId, name: "Sklep O'Brien" }],
      }),
    );
    const list = await api("/subscriptions", { token: secret, store: storeId });
    expect(await expectJson(list, 200)).toMatchObject({ items: [], pagination: { total: 0 } });
    const prepared = await api("/media-uploads", {
      method: "POST",
      token: secret,
      store: storeId,
      body: { filename: "cover.jpg", content_type: "image/jpeg", size: 1000 },
    });
    await expectStatus(prepared, 201);
  });

  it("a token for an existing store holds only the abilities it was given", async () => {
    const { storeId } = await seedStore();
    const secret = newTokenSecret();
    await runStatements(await tokenStatements({ secret, storeIds: [storeId], abilities: ["products:read"] }));
    await expectStatus(await api("/subscriptions", { token: secret, store: storeId }), 403);
    await expectStatus(await api(`/products/${uuid()}`, { token: secret }), 404);
  });

  it("creating a store that appeared meanwhile keeps the stored one", async () => {
    const { storeId } = await seedStore();
    const before = await env.DB.prepare("SELECT name FROM stores WHERE id = ?").bind(storeId).first();
    await runStatements(
      await tokenStatements({
        secret: newTokenSecret(),
        storeIds: [storeId],
        abilities: ["products:read"],
        newStores: [{ id: storeId, name: "Other" }],
      }),
    );
    expect(await env.DB.prepare("SELECT name FROM stores WHERE id = ?").bind(storeId).first()).toEqual(before);
  });
});
