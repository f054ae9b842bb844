import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { countingD1, type Trips } from "../../scripts/counting-bindings";
import { createApp } from "../../src/app";
import { homeBinding, homeNames, shardNames } from "../../src/db/shards";
import { recordingQueue } from "./events";
import { customFields, seedProduct, seedStore, storeHome, uuid } from "./factories";
import { origin } from "./http";
import { poll } from "./poll";
import { seedSubscriptions } from "./subscriptions";

/*
 * A store moving to another shard while its API is in use (src/db/move.ts), for test/db/move*.test.ts. Each
 * request gets bindings of its own that record which databases it reached, so every answer can be traced to
 * the shard it came from.
 */

/**
 * A short token cache, so the move's waits (TOKEN_CACHE_SECONDS, then a second) take seconds; no read answer
 * kept in memory, so every read shows the database it reached (test/http/read-cache.test.ts keeps them).
 */
export const vars = { TOKEN_CACHE_SECONDS: "1", READ_CACHE_MS: "0" };
export const app = createApp();

/** The test bindings with {@link vars} over them, as the move itself runs. */
export const movingEnv = (): Env => ({ ...env, ...vars }) as Env;

export type Traced = { response: Response; reached: string[]; startedAt: number };

/** Calls the API as `init.token`; answers the response, the databases it reached and when it started. */
export async function call(path: string, init: RequestInit & { token: string }): Promise<Traced> {
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

/**
 * A client that honours 503 + Retry-After: it retries (sooner than told, to stress the move) until the answer
 * is not a 503, counting the 503s in `log.held`. Any other 5xx, or a 503 without Retry-After, fails the test.
 */
export async function client(path: string, init: RequestInit & { token: string }, log: { held: number }) {
  const traced = await poll(
    async () => {
      const answer = await call(path, init);
      if (answer.response.status === 503) {
        expect(answer.response.headers.get("Retry-After")).toMatch(/^[1-9]\d*$/);
        log.held++;
      }
      return answer;
    },
    (answer) => answer.response.status !== 503,
    { intervalMs: 100, timeoutMs: 10_000, what: `${init.method ?? "GET"} ${path} past the move's 503` },
  );
  const status = traced.response.status;
  expect(status, `${init.method ?? "GET"} ${path}: ${await traced.response.clone().text()}`).toBeLessThan(500);
  return traced;
}

export const fieldNames = Array.from({ length: 80 }, (_, i) => `field${i}`);

/**
 * A store with 256 rows: a product with 80 custom fields and 5 cross-sells, 4 products with drafts and 250
 * subscriptions; `to` is a shard other than its home (`from`).
 */
export async function storeWithRows() {
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

export type StoreWithRows = Awaited<ReturnType<typeof storeWithRows>>;

/** The count (`n`) a `SELECT count(*) AS n` answers in `home`. */
export async function rows(home: string, sql: string, ...values: unknown[]) {
  const row = await homeBinding(env, home)
    .prepare(sql)
    .bind(...values)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/** The store's products, subscriptions and store row in `home`. */
export async function storeRowCount(home: string, storeId: string) {
  return (
    (await rows(home, "SELECT count(*) AS n FROM products WHERE store_id = ?", storeId)) +
    (await rows(home, "SELECT count(*) AS n FROM subscriptions WHERE store_id = ?", storeId)) +
    (await rows(home, "SELECT count(*) AS n FROM stores WHERE id = ?", storeId))
  );
}

/** The store's directory entry. */
export async function directory(storeId: string) {
  return env.DB.prepare("SELECT shard, version, moving FROM store_directory WHERE store_id = ?")
    .bind(storeId)
    .first<{ shard: string; version: number; moving: number }>();
}
