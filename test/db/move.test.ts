import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { countingD1, type Trips } from "../../scripts/counting-bindings";
import { createApp } from "../../src/app";
import { type MoveStep, moveStore, recoverMove } from "../../src/db/move";
import { bindingHomes, homeBinding, homeDb, homeNames, shardNames } from "../../src/db/shards";
import { FixtureDocument } from "../../src/dev/fixture-schema";
import { loadFixtures } from "../../src/dev/fixtures";
import { insertEvent, newEvent } from "../../src/events/records";
import worker from "../../src/index";
import { runCron } from "../support/cron";
import { recordingQueue } from "../support/events";
import { customFields, productInput, seedProduct, seedStore, storeHome, uuid } from "../support/factories";
import { expectJson, expectStatus, origin } from "../support/http";
import { countRoundTrips } from "../support/round-trips";
import { seedSubscriptions } from "../support/subscriptions";

/**
 * Issue 24, item 3: a store moves to another shard while its API is in use (src/db/move.ts). Each request
 * below gets bindings of its own that record which databases it reached, so every answer can be traced to
 * the shard it came from.
 */

/**
 * A short token cache, so the move's waits (TOKEN_CACHE_SECONDS, then a second) take seconds; no read answer
 * kept in memory, so every read shows the database it reached (test/http/read-cache.test.ts keeps them).
 */
const vars = { TOKEN_CACHE_SECONDS: "1", READ_CACHE_MS: "0" };
const app = createApp();

type Traced = { response: Response; reached: string[]; startedAt: number };

async function call(path: string, init: RequestInit & { token: string }): Promise<Traced> {
  const trips: Record<string, Trips> = Object.fromEntries(homeNames(env).map((name) => [name, []]));
  const bindings = {
    ...env,
    ...vars,
    ...Object.fromEntries(homeNames(env).map((name) => [name, countingD1(homeBinding(env, name), trips[name] ?? [])])),
    WEBHOOK_QUEUE: recordingQueue().queue,
  } as Env;
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${init.token}`);
  const startedAt = Date.now();
  const ctx = createExecutionContext();
  const response = await app.fetch(new Request(`${origin}/api/v1${path}`, { ...init, headers }), bindings, ctx);
  await waitOnExecutionContext(ctx);
  const reached = Object.entries(trips)
    .filter(([, list]) => list.length > 0)
    .map(([name]) => name);
  return { response, reached, startedAt };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A client that honours 503 + Retry-After: it retries (sooner than told, to stress the move) until the answer
 * is not a 503. Any other 5xx, or a 503 without Retry-After, fails the test.
 */
async function client(path: string, init: RequestInit & { token: string }, log: { held: number }) {
  for (let attempt = 0; attempt < 100; attempt++) {
    const traced = await call(path, init);
    const status = traced.response.status;
    if (status === 503) {
      expect(traced.response.headers.get("Retry-After")).toMatch(/^[1-9]\d*$/);
      log.held++;
      await sleep(100);
      continue;
    }
    expect(status, `${init.method ?? "GET"} ${path}: ${await traced.response.clone().text()}`).toBeLessThan(500);
    return traced;
  }
  throw new Error(`${path} was held for 10 seconds`);
}

const fieldNames = Array.from({ length: 80 }, (_, i) => `field${i}`);

async function storeWithRows() {
  const { storeId, token } = await seedStore();
  const product = await seedProduct(storeId, {
    custom_fields: customFields(...fieldNames),
    cross_sells: Array.from({ length: 5 }, (_, i) => ({ id: uuid(), title: `Offer ${i}` })),
  });
  const drafted = [];
  for (let i = 0; i < 4; i++) drafted.push(await seedProduct(storeId, { draft: { draft_version: 1 } }));
  await seedSubscriptions(
    storeId,
    Array.from({ length: 250 }, () => ({ product_id: product.id, variant_id: product.variants?.[0]?.id ?? uuid() })),
  );
  const from = await storeHome(storeId);
  const to = shardNames(env).find((name) => name !== from) ?? "SHARD_1";
  return { storeId, token, product, drafted, from, to };
}

async function rows(home: string, sql: string, ...values: unknown[]) {
  const row = await homeBinding(env, home)
    .prepare(sql)
    .bind(...values)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

async function storeRowCount(home: string, storeId: string) {
  return (
    (await rows(home, "SELECT count(*) AS n FROM products WHERE store_id = ?", storeId)) +
    (await rows(home, "SELECT count(*) AS n FROM subscriptions WHERE store_id = ?", storeId)) +
    (await rows(home, "SELECT count(*) AS n FROM stores WHERE id = ?", storeId))
  );
}

async function directory(storeId: string) {
  return env.DB.prepare("SELECT shard, version, moving FROM store_directory WHERE store_id = ?")
    .bind(storeId)
    .first<{ shard: string; version: number; moving: number }>();
}

describe("moving a store between shards under traffic", () => {
  it("loses no write, reads no stale shard, answers no 5xx but a 503 with Retry-After the retry gets past", async () => {
    const store = await storeWithRows();
    const before = await directory(store.storeId);
    const steps: Partial<Record<MoveStep, number>> = {};
    const held = { held: 0 };
    // Warm: this isolate's token cache names the old home when the move starts.
    await expectStatus((await call(`/products/${store.product.id}`, { token: store.token })).response, 200);

    const product = `/products/${store.product.id}`;
    const fieldsOf = async (traced: Traced) =>
      (await expectJson<{ custom_fields: { name: string }[] }>(traced.response.clone(), 200)).custom_fields.map(
        (field) => field.name,
      );
    /** Requests sent while the move waits at a step (after the copy and its check; just after the switch). */
    const probe = async (beforeSwitch: boolean) => {
      const write = () =>
        call(`${product}/custom-fields/${fieldNames.at(-1)}`, { method: "DELETE", token: store.token });
      if (beforeSwitch) {
        // The write first: refused, it makes the isolate read the token again, so the read after it leaves an
        // entry naming the old home in the cache for the switch.
        const staleWrite = await write();
        return { staleWrite, staleRead: await call(product, { token: store.token }) };
      }
      const staleRead = await call(product, { token: store.token });
      const staleWrite = await write();
      const freshRead = await call(product, { token: store.token });
      return { staleRead, staleWrite, freshRead, freshWrite: await write() };
    };
    const probes: Partial<Record<"copied" | "switched", Awaited<ReturnType<typeof probe>>>> = {};

    let moving = true;
    const move = moveStore({ ...env, ...vars } as Env, {
      storeId: store.storeId,
      to: store.to,
      tokenCacheSeconds: 1,
      onStep: async (step) => {
        steps[step] = Date.now();
        if (step === "copied") probes.copied = await probe(true);
        if (step === "switched") probes.switched = await probe(false);
      },
    }).finally(() => {
      moving = false;
    });

    const deleted: { name: string; at: number }[] = [];
    const published: string[] = [];
    const reads: (Traced & { fields?: string[]; path: string })[] = [];
    const readPaths = [
      `/products/${store.product.id}`,
      `/products/${store.product.id}/cross-sells`,
      "/subscriptions?per_page=5",
    ];
    let next = 0;
    let tick = 0;
    // The stream goes on for a few requests after the move has ended.
    for (let after = 0; moving || after < 5; after += moving ? 0 : 1) {
      tick++;
      const path = readPaths[tick % readPaths.length] as string;
      const read = await client(path, { token: store.token }, held);
      const body = await expectJson<{ custom_fields?: { name: string }[] }>(read.response, 200);
      reads.push({ ...read, path, ...(body.custom_fields ? { fields: body.custom_fields.map((f) => f.name) } : {}) });
      if (next < fieldNames.length) {
        const name = fieldNames[next++] as string;
        const write = await client(
          `/products/${store.product.id}/custom-fields/${name}`,
          {
            method: "DELETE",
            token: store.token,
          },
          held,
        );
        await expectStatus(write.response, 204);
        deleted.push({ name, at: Date.now() });
      }
      const draftedProduct = store.drafted[published.length];
      if (draftedProduct && tick % 5 === 0) {
        const publish = await client(
          `/products/${draftedProduct.id}/publish`,
          { method: "POST", token: store.token },
          held,
        );
        await expectStatus(publish.response, 200);
        published.push(draftedProduct.id);
      }
      await sleep(100);
    }
    const report = await move;

    // The move ran through every step; writes were held from the fence until the target opened.
    expect(Object.keys(steps)).toEqual(["announced", "fenced", "copied", "switched", "opened", "settled", "cleaned"]);
    expect(report).toMatchObject({ store_id: store.storeId, from: store.from, to: store.to });
    expect(await directory(store.storeId)).toEqual({ shard: store.to, version: (before?.version ?? 0) + 3, moving: 0 });
    // Writes came before, during (held, then retried) and after the move.
    expect(
      deleted.some((write) => write.at < (steps.fenced ?? 0)),
      "a write before the fence",
    ).toBe(true);
    expect(
      deleted.some((write) => write.at > (steps.opened ?? 0)),
      "a write after the opening",
    ).toBe(true);
    expect(held.held, "writes held").toBeGreaterThan(0);

    // At the steps: before the switch a write is refused (503, Retry-After) and a read comes from the old home;
    // just after it, an isolate whose entry predates the switch still reads the old home, whose rows are the
    // new home's (no write lands anywhere yet), and its write is refused; refused, it reads the directory
    // again and reaches the new home, which refuses writes until every isolate has the new entry.
    const { copied, switched } = probes;
    for (const write of [copied?.staleWrite, switched?.staleWrite, switched?.freshWrite]) {
      expect(write?.response.status).toBe(503);
      expect(write?.response.headers.get("Retry-After")).toBe("2");
    }
    expect(copied?.staleRead.reached.filter((name) => name !== "DB")).toEqual([store.from]);
    expect(switched?.staleRead.reached.filter((name) => name !== "DB")).toEqual([store.from]);
    expect(switched?.freshRead?.reached.filter((name) => name !== "DB")).toEqual([store.to]);
    for (const read of [copied?.staleRead, switched?.staleRead, switched?.freshRead]) {
      if (!read) throw new Error("a probe did not run");
      const gone = deleted.filter((write) => write.at <= read.startedAt).map((write) => write.name);
      expect((await fieldsOf(read)).filter((name) => gone.includes(name))).toEqual([]);
      expect(await fieldsOf(read)).toContain(fieldNames.at(-1));
    }

    // No write lost: every acknowledged write is in the new home, and the old home holds nothing of the store.
    const newHome = homeBinding(env, store.to);
    const left = await newHome
      .prepare("SELECT name FROM custom_fields WHERE product_id = ? AND owner_kind = 'product' ORDER BY position")
      .bind(store.product.id)
      .all<{ name: string }>();
    expect(left.results.map((row) => row.name)).toEqual(fieldNames.slice(deleted.length));
    for (const id of published) {
      expect(await rows(store.to, "SELECT count(*) AS n FROM drafts WHERE product_id = ?", id)).toBe(0);
    }
    expect(published.length).toBeGreaterThan(0);
    expect(await rows(store.to, "SELECT count(*) AS n FROM subscriptions WHERE store_id = ?", store.storeId)).toBe(250);
    expect(await storeRowCount(store.from, store.storeId)).toBe(0);

    // No read of the wrong shard: a read that began once writes could land in the new home reached only it
    // (and DB, for a token read again); no read missed a write acknowledged before it began.
    for (const read of reads) {
      if (read.startedAt >= (steps.opened ?? Number.POSITIVE_INFINITY)) {
        expect(
          read.reached.filter((name) => name !== "DB"),
          `${read.path} at ${read.startedAt - (steps.opened ?? 0)} ms after opening`,
        ).toEqual([store.to]);
      }
      if (read.fields) {
        const gone = deleted.filter((write) => write.at <= read.startedAt).map((write) => write.name);
        expect(
          read.fields.filter((name) => gone.includes(name)),
          read.path,
        ).toEqual([]);
      }
    }
    expect(
      reads.some((read) => read.reached.includes(store.from)),
      "reads of the old home",
    ).toBe(true);
    expect(
      reads.some((read) => read.reached.includes(store.to)),
      "reads of the new home",
    ).toBe(true);
  }, 30_000);
});

describe("store:move refusals and failures", () => {
  it("a copy that does not match is deleted from the target, and the store stays where it was, writable", async () => {
    const store = await storeWithRows();
    const before = await directory(store.storeId);
    const failed = moveStore({ ...env, ...vars } as Env, {
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

describe("a move that stops part-way (store:move --recover)", () => {
  const instantly = { tokenCacheSeconds: 0, marginMs: 0, sleep: async () => {} };

  /**
   * Starts a move that stops for good after `at`, as when the Worker running it is gone: the step's hook never
   * returns, so nothing after it runs. Resolves once the move has reached the step.
   */
  async function moveStoppedAfter(store: Awaited<ReturnType<typeof storeWithRows>>, at: MoveStep) {
    await new Promise<void>((reached, failed) => {
      moveStore({ ...env, ...vars } as Env, {
        ...instantly,
        storeId: store.storeId,
        to: store.to,
        onStep: (step) => {
          if (step !== at) return;
          reached();
          return new Promise<void>(() => {});
        },
      }).catch(failed);
    });
  }

  async function fences(storeId: string) {
    let found = 0;
    for (const home of homeNames(env))
      found += await rows(home, "SELECT count(*) AS n FROM store_fences WHERE store_id = ?", storeId);
    return found;
  }

  /** The store lives in `home` alone, with every row, no fence anywhere, and takes writes there. */
  async function expectSettledIn(store: Awaited<ReturnType<typeof storeWithRows>>, home: string) {
    expect(await directory(store.storeId)).toMatchObject({ shard: home, moving: 0 });
    expect(await fences(store.storeId)).toBe(0);
    expect(await storeRowCount(home, store.storeId)).toBe(256);
    for (const other of shardNames(env).filter((name) => name !== home))
      expect(await storeRowCount(other, store.storeId), other).toBe(0);
    const write = await call(`/products/${store.product.id}/custom-fields/field0`, {
      method: "DELETE",
      token: store.token,
    });
    await expectStatus(write.response, 204);
    expect(write.reached.filter((name) => name !== "DB")).toEqual([home]);
    const read = await call(`/products/${store.product.id}`, { token: store.token });
    await expectStatus(read.response, 200);
  }

  const stops: {
    at: MoveStep;
    home: "from" | "to";
    found: "moving" | "settled";
    opened: boolean;
    cleaned: "none" | "from" | "to";
  }[] = [
    { at: "announced", home: "from", found: "moving", opened: false, cleaned: "none" },
    { at: "fenced", home: "from", found: "moving", opened: true, cleaned: "none" },
    { at: "copied", home: "from", found: "moving", opened: true, cleaned: "to" },
    { at: "switched", home: "to", found: "moving", opened: true, cleaned: "from" },
    { at: "opened", home: "to", found: "moving", opened: false, cleaned: "from" },
    { at: "settled", home: "to", found: "settled", opened: false, cleaned: "from" },
  ];
  it.each(stops)(
    "stopped after $at: the store stays in its directory home ($home), writable there, every row once, nothing elsewhere",
    async ({ at, home, found, opened, cleaned }) => {
      const store = await storeWithRows();
      await moveStoppedAfter(store, at);
      const report = await recoverMove({ ...env, ...vars } as Env, { storeId: store.storeId, ...instantly });
      expect(report).toMatchObject({
        store_id: store.storeId,
        home: store[home],
        found,
        opened,
        cleaned: cleaned === "none" ? [] : [store[cleaned]],
      });
      await expectSettledIn(store, store[home]);
      // A second recovery finds nothing to do.
      expect(await recoverMove({ ...env, ...vars } as Env, { storeId: store.storeId, ...instantly })).toMatchObject({
        found: "settled",
        opened: false,
        cleaned: [],
      });
    },
    20_000,
  );

  it("a move still running when it is recovered fails at its next directory write; the store stays consistent", async () => {
    const store = await storeWithRows();
    let resume = () => {};
    let reached = () => {};
    const atCopied = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const running = moveStore({ ...env, ...vars } as Env, {
      ...instantly,
      storeId: store.storeId,
      to: store.to,
      onStep: (step) => {
        if (step !== "copied") return;
        reached();
        return new Promise<void>((resolve) => {
          resume = resolve;
        });
      },
    });
    await atCopied;
    await recoverMove({ ...env, ...vars } as Env, { storeId: store.storeId, ...instantly });
    resume();
    await expect(running).rejects.toThrow(/changed during its move/);
    await expectSettledIn(store, store.from);
  }, 20_000);

  it("the _dev route recovers a store, and refuses an unknown one", async () => {
    const store = await storeWithRows();
    await moveStoppedAfter(store, "fenced");
    const recover = (storeId: string) =>
      app.fetch(
        new Request(`${origin}/api/v1/_dev/stores/${storeId}/move/recover`, { method: "POST" }),
        { ...env, TOKEN_CACHE_SECONDS: "0" } as Env,
        createExecutionContext(),
      );
    expect(await expectJson(await recover(store.storeId), 200)).toMatchObject({ home: store.from, opened: true });
    await expectSettledIn(store, store.from);
    await expectStatus(await recover(uuid()), 404);
  }, 20_000);
});

describe("fences (migrations/0004)", () => {
  const fence = (home: string, storeId: string) =>
    homeBinding(env, home)
      .prepare("INSERT INTO store_fences (store_id, state, since) VALUES (?, 'outgoing', 0)")
      .bind(storeId)
      .run();

  it("refuse every insert, update and delete of a fenced store's rows, in every store table, and no other store's", async () => {
    const store = await storeWithRows();
    const other = await seedStore();
    const otherProduct = await seedProduct(other.storeId, { custom_fields: customFields("a") });
    const otherHome = await storeHome(other.storeId);
    const secret = await expectJson<{ secret: string }>(
      (await call("/webhooks/secret", { token: store.token })).response,
      200,
    );
    await fence(store.from, store.storeId);
    // Reads go on: the secret, made on first read, is read without a write once it exists.
    expect(await expectJson((await call("/webhooks/secret", { token: store.token })).response, 200)).toEqual(secret);
    const db = homeBinding(env, store.from);
    const product = store.product.id;
    const writes = [
      ["UPDATE stores SET name = 'x' WHERE id = ?", store.storeId],
      ["UPDATE products SET name = 'x' WHERE id = ?", product],
      ["UPDATE variants SET name = 'x' WHERE product_id = ?", product],
      ["DELETE FROM custom_fields WHERE product_id = ?", product],
      ["UPDATE cross_sells SET title = 'x' WHERE owner_product_id = ?", product],
      ["INSERT INTO product_courses (product_id, course_id) VALUES (?, 'c1')", product],
      [
        "UPDATE drafts SET draft_version = 9 WHERE product_id IN (SELECT id FROM products WHERE store_id = ?)",
        store.storeId,
      ],
      ["UPDATE subscriptions SET quantity = 2 WHERE store_id = ?", store.storeId],
      ["INSERT INTO webhook_secrets (store_id, secret, created_at) VALUES (?, 'whsec_x', 0)", store.storeId],
      ["DELETE FROM products WHERE id = ?", product],
    ] as const;
    for (const [sql, value] of writes) {
      await expect(db.prepare(sql).bind(value).run(), sql).rejects.toThrow(/store_fenced/);
    }
    expect(await rows(store.from, "SELECT count(*) AS n FROM custom_fields WHERE product_id = ?", product)).toBe(80);
    // Another store, in whichever home: its writes go through.
    await homeBinding(env, otherHome)
      .prepare("DELETE FROM custom_fields WHERE product_id = ?")
      .bind(otherProduct.id)
      .run();
    // Through the API: 503 with Retry-After and the body of every error, nothing written.
    const refused = await call(`/products/${product}/custom-fields/field0`, { method: "DELETE", token: store.token });
    expect(refused.response.headers.get("Retry-After")).toBe("2");
    expect(await expectJson(refused.response, 503)).toEqual({
      message: "The store is being moved between databases and takes no changes for a moment, retry after 2 seconds.",
    });
  });

  it("the queue consumer holds an event its store's fence covers, and takes it from the home that is open", async () => {
    const store = await storeWithRows();
    const event = newEvent(
      { id: store.product.id, storeId: store.storeId },
      "product.published",
      "https://hooks.example.test/x",
      {},
      new Date(Date.now() - 3_600_000),
    );
    await insertEvent(homeDb(env, store.from), event);
    await fence(store.from, store.storeId);
    // The sweep leaves the fenced store's overdue event alone (and does not fail on it).
    const { sent, queue } = recordingQueue();
    await runCron({ WEBHOOK_QUEUE: queue });
    expect(sent).not.toContainEqual({ id: event.id });

    const deadLetter = () =>
      createMessageBatch("storefront-checkout-webhooks-dlq", [
        { id: "m0", timestamp: new Date(), attempts: 1, body: { id: event.id } },
      ]);
    const held = deadLetter();
    const heldCtx = createExecutionContext();
    await worker.queue(held as MessageBatch<unknown>, env);
    const heldResult = await getQueueResult(held, heldCtx);
    expect(heldResult.explicitAcks).toEqual([]);
    expect(heldResult.retryMessages.map((entry) => entry.msgId)).toEqual(["m0"]);

    // Copied into the other home, open there: the consumer ends it there, the fenced copy is untouched.
    await insertEvent(homeDb(env, store.to), event);
    const taken = deadLetter();
    const takenCtx = createExecutionContext();
    await worker.queue(taken as MessageBatch<unknown>, env);
    expect((await getQueueResult(taken, takenCtx)).explicitAcks).toEqual(["m0"]);
    const status = (home: string) =>
      homeBinding(env, home).prepare("SELECT status FROM webhook_events WHERE id = ?").bind(event.id).first("status");
    expect(await status(store.to)).toBe("failed");
    expect(await status(store.from)).toBe("pending");
  });
});

describe("round trips while a store moves", () => {
  it("a warm read of a moving store is still one trip to its home; only the token is read again, every second", async () => {
    const store = await storeWithRows();
    await env.DB.prepare("UPDATE store_directory SET moving = 1 WHERE store_id = ?").bind(store.storeId).run();
    const path = `/products/${store.product.id}`;
    // Cold: the token with its directory entries (one statement, DB; again from DB's primary, since a replica
    // could be behind the move's switch) → the budget lease (DO) → the read (home).
    const trips = async () => (await countRoundTrips(path, { token: store.token, env: vars })).trips;
    expect(await trips()).toEqual({ d1: 3, durableObjects: 1 });
    expect(await trips()).toEqual({ d1: 1, durableObjects: 0 });
    await sleep(1100);
    // The entry of a moving store lasts a second: then the token's two reads again.
    expect(await trips()).toEqual({ d1: 3, durableObjects: 0 });
    expect(await trips()).toEqual({ d1: 1, durableObjects: 0 });
    await env.DB.prepare("UPDATE store_directory SET moving = 0 WHERE store_id = ?").bind(store.storeId).run();
  });
});
