import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { moveStore } from "../../src/db/move";
import { bindingHomes, homeBinding } from "../../src/db/shards";
import { FixtureDocument } from "../../src/dev/fixture-schema";
import { loadFixtures } from "../../src/dev/fixtures";
import { productInput, uuid } from "../support/factories";
import { expectJson, expectStatus, origin } from "../support/http";
import { app, call, directory, movingEnv, rows, storeRowCount, storeWithRows } from "../support/moves";

describe("store:move refusals and failures", () => {
  it("a copy that does not match is deleted from the target, and the store stays where it was, writable", async () => {
    const store = await storeWithRows();
    const before = await directory(store.storeId);
    const failed = moveStore(movingEnv(), {
      storeId: store.storeId,
      to: store.to,
      tokenCacheSeconds: 0,
      marginMs: 0,
      afterCopy: async () => {
        await homeBinding(env, store.to)
          .prepare(
            "UPDATE subscriptions SET customer_name = 'changed' WHERE id = (SELECT id FROM subscriptions WHERE store_id = ? LIMIT 1)",
          )
          .bind(store.storeId)
          .run();
      },
    });
    await expect(failed).rejects.toThrow(
      /did not match \(subscriptions: 250 rows in the source, 250 in the target, different contents\)/,
    );
    expect(await storeRowCount(store.to, store.storeId)).toBe(0);
    expect(await storeRowCount(store.from, store.storeId)).toBe(256);
    const after = await directory(store.storeId);
    expect(after).toMatchObject({ shard: store.from, moving: 0 });
    expect(await rows(store.from, "SELECT count(*) AS n FROM store_fences WHERE store_id = ?", store.storeId)).toBe(0);
    const write = await call(`/products/${store.product.id}/custom-fields/field0`, {
      method: "DELETE",
      token: store.token,
    });
    await expectStatus(write.response, 204);
    expect(write.reached.filter((name) => name !== "DB")).toEqual([store.from]);
    expect(after?.version).toBe((before?.version ?? 0) + 2);
  });

  it("refuses a move to the shard the store is on, to a database that is not a shard, and of an unknown store", async () => {
    const store = await storeWithRows();
    const options = { tokenCacheSeconds: 0, marginMs: 0 };
    await expect(moveStore(env, { ...options, storeId: store.storeId, to: store.from })).rejects.toMatchObject({
      status: 409,
      message: `Store ${store.storeId} already lives in ${store.from}; nothing to move.`,
    });
    await expect(moveStore(env, { ...options, storeId: store.storeId, to: "DB" })).rejects.toMatchObject({
      status: 422,
    });
    await expect(moveStore(env, { ...options, storeId: store.storeId, to: "SHARD_9" })).rejects.toMatchObject({
      status: 422,
    });
    const unknown = uuid();
    await expect(moveStore(env, { ...options, storeId: unknown, to: store.to })).rejects.toMatchObject({
      status: 404,
      message: `Store ${unknown} not found.`,
    });
    expect(await directory(store.storeId)).toMatchObject({ shard: store.from, moving: 0 });
  });
});

describe("store:move through the _dev route", () => {
  it("the _dev route moves a store and cleans the old shard up, a store placed in DB included", async () => {
    const store = await storeWithRows();
    // A store placed before sharding: its rows in DB, no directory entry (a loader that knows no shard).
    const legacy = { storeId: uuid(), token: `test-token-${uuid()}` };
    const legacyProduct = productInput(legacy.storeId);
    await loadFixtures(
      { ...bindingHomes(env), shards: [] },
      FixtureDocument.parse({
        stores: [{ id: legacy.storeId, name: "Old store", plan_active: true }],
        tokens: [{ token: legacy.token, store_ids: [legacy.storeId], abilities: ["*"] }],
        products: [legacyProduct],
      }),
    );
    expect(await directory(legacy.storeId)).toBeNull();
    const moved = await call(`/products/${store.product.id}`, { token: store.token });
    await expectStatus(moved.response, 200);
    const devMove = (storeId: string, to: string) =>
      app.fetch(
        new Request(`${origin}/api/v1/_dev/stores/${storeId}/move`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ to }),
        }),
        { ...env, TOKEN_CACHE_SECONDS: "0" } as Env,
        createExecutionContext(),
      );
    const report = await expectJson<{ tables: { table: string; rows: number }[]; from: string; to: string }>(
      await devMove(store.storeId, store.to),
      200,
    );
    expect(report).toMatchObject({ from: store.from, to: store.to });
    expect(report.tables.find((table) => table.table === "custom_fields")?.rows).toBe(80);
    expect(report.tables.find((table) => table.table === "subscriptions")?.rows).toBe(250);
    expect(await storeRowCount(store.from, store.storeId)).toBe(0);
    expect(await storeRowCount(store.to, store.storeId)).toBe(256);
    for (const table of ["variants", "custom_fields", "cross_sells", "drafts"]) {
      const column = table === "cross_sells" ? "owner_product_id" : "product_id";
      expect(
        await rows(
          store.from,
          `SELECT count(*) AS n FROM ${table} WHERE ${column} IN (SELECT id FROM products WHERE store_id = ?)`,
          store.storeId,
        ),
      ).toBe(0);
    }
    await expectStatus(await devMove(store.storeId, store.to), 409);
    await expectStatus(await devMove(uuid(), store.to), 404);

    // A store of DB (no directory entry) moves to a shard; DB keeps its global store row.
    expect(await rows("DB", "SELECT count(*) AS n FROM products WHERE store_id = ?", legacy.storeId)).toBe(1);
    await expectStatus(await devMove(legacy.storeId, "SHARD_0"), 200);
    expect(await rows("DB", "SELECT count(*) AS n FROM products WHERE store_id = ?", legacy.storeId)).toBe(0);
    expect(await rows("DB", "SELECT count(*) AS n FROM stores WHERE id = ?", legacy.storeId)).toBe(1);
    expect(await rows("SHARD_0", "SELECT count(*) AS n FROM products WHERE store_id = ?", legacy.storeId)).toBe(1);
    const read = await call(`/products/${legacyProduct.id}`, { token: legacy.token });
    await expectStatus(read.response, 200);
  }, 20_000);
});

describe("store:move through the _ops route", () => {
  it("a deployment moves through /_ops with STORE_MOVE_SECRET as bearer; without the secret there is no such route", async () => {
    const store = await storeWithRows();
    const opsMove = (secret: string | undefined, bearer?: string) =>
      app.fetch(
        new Request(`${origin}/api/v1/_ops/stores/${store.storeId}/move`, {
          method: "POST",
          headers: { "Content-Type": "application/json", ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}) },
          body: JSON.stringify({ to: store.to }),
        }),
        { ...env, DEV_FIXTURES: "off", TOKEN_CACHE_SECONDS: "0", STORE_MOVE_SECRET: secret } as Env,
        createExecutionContext(),
      );
    expect(await expectJson(await opsMove(undefined, "anything"), 404)).toEqual({ message: "Not found." });
    expect(await expectJson(await opsMove("s3cret", "wrong"), 401)).toEqual({ message: "Unauthenticated." });
    await expectStatus(await opsMove("s3cret"), 401);
    expect(await directory(store.storeId)).toMatchObject({ shard: store.from, moving: 0 });
    expect(await expectJson(await opsMove("s3cret", "s3cret"), 200)).toMatchObject({
      store_id: store.storeId,
      from: store.from,
      to: store.to,
    });
    expect(await directory(store.storeId)).toMatchObject({ shard: store.to, moving: 0 });
    // The recovery route sits behind the same secret: a settled store comes back unchanged.
    const opsRecover = (bearer?: string) =>
      app.fetch(
        new Request(`${origin}/api/v1/_ops/stores/${store.storeId}/move/recover`, {
          method: "POST",
          headers: bearer ? { Authorization: `Bearer ${bearer}` } : {},
        }),
        { ...env, DEV_FIXTURES: "off", TOKEN_CACHE_SECONDS: "0", STORE_MOVE_SECRET: "s3cret" } as Env,
        createExecutionContext(),
      );
    expect(await expectJson(await opsRecover("wrong"), 401)).toEqual({ message: "Unauthenticated." });
    expect(await expectJson(await opsRecover("s3cret"), 200)).toMatchObject({
      home: store.to,
      found: "settled",
      opened: false,
      cleaned: [],
    });
  }, 20_000);
});
