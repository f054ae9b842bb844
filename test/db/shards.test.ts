import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { countingD1, type Trips } from "../../scripts/counting-bindings";
import { createApp } from "../../src/app";
import { bookmarkHeader } from "../../src/db/session";
import { homeBinding, homeNames, homeTag, shardNames } from "../../src/db/shards";
import { insertEvent, newEvent } from "../../src/events/records";
import worker from "../../src/index";
import { runCron } from "../support/cron";
import { recordingQueue } from "../support/events";
import {
  customFields,
  seed,
  seedProduct,
  seedStore,
  seedToken,
  storeDb,
  storeHome,
  uuid,
  variantInput,
} from "../support/factories";
import { expectJson, expectStatus, origin, withBindings } from "../support/http";
import { captureServiceLogs } from "../support/logs";
import { seedSubscriptions } from "../support/subscriptions";

/**
 * Issue 24: every store's rows live in one D1 database, its home (a shard), found through the directory in the
 * global database DB. These tests put stores on both local shards and watch, database by database, which one
 * every query reaches.
 */

/**
 * The test bindings with every database (DB and each shard) recording its own round trips. No read answer is
 * kept (`READ_CACHE_MS=0`): an answer given again from memory reaches no database (test/http/read-cache.test.ts).
 */
function recorded() {
  const trips: Record<string, Trips> = Object.fromEntries(homeNames(env).map((name) => [name, []]));
  const bindings = {
    ...env,
    READ_CACHE_MS: "0",
    ...Object.fromEntries(
      homeNames(env).map((name) => [name, countingD1(homeBinding(env, name), trips[name] as Trips)]),
    ),
  } as Env;
  /** The databases a request reached, by name, with the number of round trips to each. */
  const reached = () =>
    Object.fromEntries(
      Object.entries(trips)
        .filter(([, list]) => list.length > 0)
        .map(([name, list]) => [name, list.length]),
    );
  const reset = () => {
    for (const list of Object.values(trips)) list.length = 0;
  };
  return { bindings, reached, reset };
}

const app = createApp();

async function call(bindings: Env, path: string, init: RequestInit & { token: string; store?: string }) {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${init.token}`);
  if (init.store) headers.set("X-Service-Store", init.store);
  if (init.body && !headers.has("Content-Type")) headers.set("Content-Type", "application/json");
  const ctx = createExecutionContext();
  const response = await app.fetch(
    new Request(`${origin}/api/v1${path}`, { ...init, headers }),
    { ...bindings, WEBHOOK_QUEUE: recordingQueue().queue } as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response;
}

/** Two fresh stores on different shards, each with a product, a draft and a subscription. */
async function storesOnBothShards() {
  const stores = [];
  // New stores go to the shard with the fewest; other files' stores may have left one ahead by a few.
  for (let i = 0; i < 40 && new Set(stores.map((store) => store.home)).size < 2; i++) {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, {
      custom_fields: customFields("nip", "phone"),
      draft: { draft_version: 1 },
    });
    await seedSubscriptions(storeId, [{ product_id: product.id, variant_id: product.variants?.[0]?.id ?? uuid() }]);
    stores.push({ storeId, token, product, home: await storeHome(storeId) });
  }
  const a = stores.at(-2);
  const b = stores.at(-1);
  if (!a || !b || a.home === b.home) throw new Error("the stores did not land on two shards");
  return { a, b };
}

async function count(home: string, sql: string, ...values: unknown[]) {
  const row = await homeBinding(env, home)
    .prepare(sql)
    .bind(...values)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

describe("stores on two shards: where a store and its rows live", () => {
  it("the Worker has two shards locally, and a new store goes to the one with the fewest stores (ties: the first)", async () => {
    expect(shardNames(env)).toEqual(["SHARD_0", "SHARD_1"]);
    // Other files' stores are in the directory too (the files share their databases): counted, not assumed.
    const load = async () =>
      Object.fromEntries(
        (
          await env.DB.prepare("SELECT shard, count(*) AS n FROM store_directory GROUP BY shard").all<{
            shard: string;
            n: number;
          }>()
        ).results.map((row) => [row.shard, row.n]),
      );
    for (let i = 0; i < 4; i++) {
      const { SHARD_0 = 0, SHARD_1 = 0 } = await load();
      const home = await storeHome((await seedStore()).storeId);
      expect(home, `with ${SHARD_0} and ${SHARD_1} stores`).toBe(SHARD_1 < SHARD_0 ? "SHARD_1" : "SHARD_0");
    }
  });

  it("a store's rows exist only in its home; DB keeps the store, its token and its directory entry", async () => {
    const { a } = await storesOnBothShards();
    for (const home of homeNames(env)) {
      const mine = home === a.home;
      expect(await count(home, "SELECT count(*) AS n FROM products WHERE store_id = ?", a.storeId), home).toBe(
        mine ? 1 : 0,
      );
      expect(await count(home, "SELECT count(*) AS n FROM variants WHERE product_id = ?", a.product.id), home).toBe(
        mine ? 1 : 0,
      );
      expect(await count(home, "SELECT count(*) AS n FROM drafts WHERE product_id = ?", a.product.id), home).toBe(
        mine ? 1 : 0,
      );
      expect(await count(home, "SELECT count(*) AS n FROM subscriptions WHERE store_id = ?", a.storeId), home).toBe(
        mine ? 1 : 0,
      );
      // The store row: the global one in DB, its copy in the home (what the home's foreign keys point at).
      expect(await count(home, "SELECT count(*) AS n FROM stores WHERE id = ?", a.storeId), home).toBe(
        mine || home === "DB" ? 1 : 0,
      );
    }
    expect(await count("DB", "SELECT count(*) AS n FROM store_directory WHERE store_id = ?", a.storeId)).toBe(1);
    expect(await count("DB", "SELECT count(*) AS n FROM api_tokens WHERE store_ids LIKE ?", `%${a.storeId}%`)).toBe(1);
  });
});

describe("stores on two shards: the databases a request reaches", () => {
  it("every request of a store reaches its home only, and DB only for a cold token", async () => {
    const { a, b } = await storesOnBothShards();
    for (const store of [a, b]) {
      const { bindings, reached, reset } = recorded();
      const reads = [
        `/products/${store.product.id}`,
        `/products/${store.product.id}/draft`,
        `/products/${store.product.id}/cross-sells`,
        `/products/${store.product.id}/draft/cross-sells`,
        "/subscriptions",
        "/webhook-events",
      ];
      // Cold: the token's own read (with its stores' directory entries) is the one trip to DB.
      await expectStatus(await call(bindings, reads[0] as string, { token: store.token }), 200);
      expect(reached()).toEqual({ DB: 1, [store.home]: 1 });
      for (const path of reads) {
        reset();
        await expectStatus(await call(bindings, path, { token: store.token }), 200);
        expect(reached(), path).toEqual({ [store.home]: 1 });
      }
      // Writes: a publish (which drops the draft), then a live custom-field delete with its event.
      reset();
      const published = await call(bindings, `/products/${store.product.id}/publish`, {
        method: "POST",
        token: store.token,
      });
      await expectStatus(published, 200);
      // The fake project platform (development only) keeps its state in DB; nothing of the store's is there.
      expect(Object.keys(reached()).filter((name) => name !== "DB")).toEqual([store.home]);
      reset();
      const deleted = await call(bindings, `/products/${store.product.id}/custom-fields/nip`, {
        method: "DELETE",
        token: store.token,
      });
      await expectStatus(deleted, 204);
      expect(Object.keys(reached())).toEqual([store.home]);
    }
  });

  it("a token of stores on both shards finds each product in its home, asking both only the first time", async () => {
    const { a, b } = await storesOnBothShards();
    const token = await seedToken([a.storeId, b.storeId]);
    const { bindings, reached, reset } = recorded();
    await expectStatus(await call(bindings, "/subscriptions", { token, store: a.storeId }), 200);
    reset();
    // Without X-Service-Store: both homes are asked at once which holds the product, then its home answers.
    const first = await call(bindings, `/products/${b.product.id}`, { token });
    expect((await expectJson<{ id: string }>(first, 200)).id).toBe(b.product.id);
    expect(reached()).toEqual({ [a.home]: 1, [b.home]: 2 });
    reset();
    // Warm: the product's store is known, one trip to its home only.
    await expectStatus(await call(bindings, `/products/${b.product.id}`, { token }), 200);
    expect(reached()).toEqual({ [b.home]: 1 });
    reset();
    await expectStatus(await call(bindings, `/products/${a.product.id}`, { token, store: a.storeId }), 200);
    expect(reached()).toEqual({ [a.home]: 1 });
    reset();
    await expectStatus(await call(bindings, `/products/${uuid()}`, { token }), 404);
    expect(Object.keys(reached()).sort()).toEqual([a.home, b.home].sort());
  });
});

describe("stores on two shards: one token over both", () => {
  it("a token of stores on both shards, without X-Service-Store, acts on each store's own product, variant and draft through every route whose path id names them", async () => {
    const { a, b } = await storesOnBothShards();
    const token = await seedToken([a.storeId, b.storeId]);
    /** A fresh product of `storeId` (no isolate has located it yet): live fields and a variant, or a draft overlay. */
    const freshProduct = async (storeId: string, drafted: boolean) => {
      const variant = variantInput({ custom_fields: customFields("size") });
      const draftVariant = variantInput({ status: "draft", custom_fields: customFields("size") });
      const product = await seedProduct(storeId, {
        custom_fields: customFields("nip"),
        waitlist_custom_fields: customFields("email"),
        variants: [variant],
        ...(drafted
          ? {
              draft: {
                draft_version: 1,
                custom_fields: customFields("nip"),
                waitlist_custom_fields: customFields("email"),
                variants: [draftVariant],
              },
            }
          : {}),
      });
      return { id: product.id, variantId: variant.id, draftVariantId: draftVariant.id };
    };
    type Fresh = Awaited<ReturnType<typeof freshProduct>>;
    const version = { draft_version: 1 };
    // Every route kind of the optional store rule, by the kind of id its path names.
    const routes: { drafted: boolean; status: number; call: (p: Fresh) => [string, RequestInit] }[] = [
      { drafted: false, status: 200, call: (p) => [`/products/${p.id}`, {}] },
      { drafted: false, status: 200, call: (p) => [`/products/${p.id}/cross-sells`, {}] },
      { drafted: false, status: 204, call: (p) => [`/products/${p.id}/custom-fields/nip`, { method: "DELETE" }] },
      {
        drafted: false,
        status: 204,
        call: (p) => [`/products/${p.id}/waitlist-custom-fields/email`, { method: "DELETE" }],
      },
      {
        drafted: false,
        status: 204,
        call: (p) => [`/product-variants/${p.variantId}/custom-fields/size`, { method: "DELETE" }],
      },
      { drafted: false, status: 200, call: (p) => [`/products/${p.id}/publish`, { method: "POST" }] },
      { drafted: true, status: 200, call: (p) => [`/products/${p.id}/draft`, {}] },
      { drafted: true, status: 200, call: (p) => [`/products/${p.id}/draft/cross-sells`, {}] },
      { drafted: true, status: 204, call: (p) => [`/products/${p.id}/draft`, { method: "DELETE" }] },
      {
        drafted: true,
        status: 204,
        call: (p) => [`/products/${p.id}/draft/custom-fields/nip`, { method: "DELETE", body: JSON.stringify(version) }],
      },
      {
        drafted: true,
        status: 204,
        call: (p) => [
          `/products/${p.id}/draft/waitlist-custom-fields/email`,
          { method: "DELETE", body: JSON.stringify(version) },
        ],
      },
      {
        drafted: true,
        status: 204,
        call: (p) => [
          `/products/${p.id}/draft/variants/${p.draftVariantId}/custom-fields/size`,
          { method: "DELETE", body: JSON.stringify(version) },
        ],
      },
    ];
    // The token's first store's home is where an id no home holds goes: the second store is the one a wrong
    // kind of lookup misses.
    for (const store of [a, b]) {
      for (const route of routes) {
        const [path, init] = route.call(await freshProduct(store.storeId, route.drafted));
        const response = await call(env, path, { ...init, token });
        await expectStatus(response, route.status, `${init.method ?? "GET"} ${path} (store on ${store.home})`);
      }
    }
  });
});

describe("stores on two shards: bookmarks and the fixture loader", () => {
  it("a bookmark names its database; sent to a store of the other shard it reads from the primary, never fails", async () => {
    const { a, b } = await storesOnBothShards();
    const token = await seedToken([a.storeId, b.storeId]);
    await expectStatus(await call(env, `/products/${a.product.id}/draft`, { method: "DELETE", token }), 204);
    const write = await call(env, `/products/${a.product.id}/custom-fields/nip`, {
      method: "DELETE",
      token,
      store: a.storeId,
    });
    await expectStatus(write, 204);
    const bookmark = write.headers.get(bookmarkHeader) ?? "";
    expect(bookmark.endsWith(`-${homeTag(a.home)}`)).toBe(true);
    const own = await call(env, `/products/${a.product.id}`, {
      token,
      store: a.storeId,
      headers: { [bookmarkHeader]: bookmark },
    });
    const body = await expectJson<{ custom_fields: { name: string }[] }>(own, 200);
    expect(body.custom_fields.map((field) => field.name)).toEqual(["phone"]);
    const other = await call(env, `/products/${b.product.id}`, {
      token,
      store: b.storeId,
      headers: { [bookmarkHeader]: bookmark },
    });
    await expectStatus(other, 200);
    expect(other.headers.get(bookmarkHeader)?.endsWith(`-${homeTag(b.home)}`)).toBe(true);
  });

  it("the fixture loader writes a document of stores on both shards to each store's home", async () => {
    const first = uuid();
    const second = uuid();
    await seed({
      stores: [
        { id: first, name: "First", plan_active: true },
        { id: second, name: "Second", plan_active: true },
      ],
      products: [
        { id: uuid(), store_id: first, status: "published", name: "A", slug: "a" },
        { id: uuid(), store_id: second, status: "published", name: "B", slug: "b" },
      ],
    });
    const homes = [await storeHome(first), await storeHome(second)];
    expect(homes[0]).not.toBe(homes[1]);
    for (const [index, storeId] of [first, second].entries()) {
      expect(
        await count(homes[index] as string, "SELECT count(*) AS n FROM products WHERE store_id = ?", storeId),
      ).toBe(1);
      expect(
        await count(homes[1 - index] as string, "SELECT count(*) AS n FROM products WHERE store_id = ?", storeId),
      ).toBe(0);
    }
  });

  it("a document of more stores than D1 binds parameters places them all, about half on each shard", async () => {
    const ids = Array.from({ length: 120 }, () => uuid());
    await seed({ stores: ids.map((id) => ({ id, name: "Many", plan_active: true })) });
    await seed({ tokens: [{ token: `test-token-${uuid()}`, store_ids: ids, abilities: ["*"] }] });
    const homes = await Promise.all(ids.map((id) => storeHome(id)));
    const perShard = (shard: string) => homes.filter((home) => home === shard).length;
    // The fewest-stores rule evens out the shards' totals: the new stores split about evenly, whatever the
    // earlier tests of this file placed.
    expect(perShard("SHARD_0")).toBeGreaterThanOrEqual(55);
    expect(perShard("SHARD_1")).toBeGreaterThanOrEqual(55);
    expect(perShard("SHARD_0") + perShard("SHARD_1")).toBe(120);
  });
});

describe("stores on two shards: the queue consumer and the sweep", () => {
  // The consumer logs each dead-lettered event it ends; the lines are captured and checked.
  const logs = captureServiceLogs();

  it("the queue consumer delivers an event from its store's shard, and the sweep visits every shard", async () => {
    const { a, b } = await storesOnBothShards();
    const events = [];
    for (const store of [a, b]) {
      const event = newEvent(
        { id: store.product.id, storeId: store.storeId },
        "product.published",
        "https://hooks.example.test/x",
        {},
        new Date(Date.now() - 3_600_000),
      );
      await insertEvent(await storeDb(store.storeId), event);
      events.push(event);
    }
    const { sent, queue } = recordingQueue();
    await runCron({ WEBHOOK_QUEUE: queue });
    for (const event of events) expect(sent).toContainEqual({ id: event.id });

    // A dead-lettered message of each: the consumer finds each event in its own shard and ends it failed.
    const batch = createMessageBatch(
      "storefront-checkout-webhooks-dlq",
      events.map((event, index) => ({ id: `m${index}`, timestamp: new Date(), attempts: 1, body: { id: event.id } })),
    );
    const queueCtx = createExecutionContext();
    await worker.queue(batch as MessageBatch<unknown>, env);
    expect((await getQueueResult(batch, queueCtx)).explicitAcks.sort()).toEqual(["m0", "m1"]);
    for (const [index, store] of [a, b].entries()) {
      const id = events[index]?.id;
      expect(
        await count(store.home, "SELECT count(*) AS n FROM webhook_events WHERE id = ? AND status = 'failed'", id),
      ).toBe(1);
      logs.expectLogged("warn", { message: "webhook queue: dead-lettered event marked failed", event_id: id });
    }
  });
});

describe("the queue consumer with a shard down", () => {
  const logs = captureServiceLogs();

  it("a shard that cannot be asked where a batch's events are sends the whole batch back after a minute", async () => {
    const unavailable = () => {
      throw new Error("D1 unavailable");
    };
    const broken = withBindings({ SHARD_1: { prepare: unavailable, batch: unavailable } });
    const batch = createMessageBatch("storefront-checkout-webhooks", [
      { id: "m0", timestamp: new Date(), attempts: 1, body: { id: `evt_${uuid()}` } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch as MessageBatch<unknown>, broken);
    const result = await getQueueResult(batch, ctx);
    expect(result.retryBatch.retry).toBe(true);
    expect(result.explicitAcks).toEqual([]);
    logs.expectLogged("warn", { message: "webhook queue: the events' databases could not be asked" });
  });
});
