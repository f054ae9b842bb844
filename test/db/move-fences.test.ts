import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { homeBinding, homeDb } from "../../src/db/shards";
import { insertEvent, newEvent } from "../../src/events/records";
import worker from "../../src/index";
import { isolateClock } from "../support/clock";
import { runCron } from "../support/cron";
import { recordingQueue } from "../support/events";
import { customFields, seedProduct, seedStore, storeHome } from "../support/factories";
import { expectJson } from "../support/http";
import { captureServiceLogs } from "../support/logs";
import { call, rows, storeWithRows, vars } from "../support/moves";
import { countRoundTrips } from "../support/round-trips";

const fence = (home: string, storeId: string) =>
  homeBinding(env, home)
    .prepare("INSERT INTO store_fences (store_id, state, since) VALUES (?, 'outgoing', 0)")
    .bind(storeId)
    .run();

describe("fences (migrations/0004) on a store's rows", () => {
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
});

describe("fences (migrations/0004) and the queue consumer", () => {
  // The consumer logs the dead-lettered event it ends; the line is captured and checked.
  const logs = captureServiceLogs();

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
    logs.expectLogged("warn", { message: "webhook queue: dead-lettered event marked failed", event_id: event.id });
  });
});

describe("round trips while a store moves", () => {
  // The token cache reads the isolate's clock: the test moves it past the second a moving store's entry lasts.
  const clock = isolateClock();

  it("a warm read of a moving store is still one trip to its home; only the token is read again, every second", async () => {
    const store = await storeWithRows();
    await env.DB.prepare("UPDATE store_directory SET moving = 1 WHERE store_id = ?").bind(store.storeId).run();
    const path = `/products/${store.product.id}`;
    // Cold: the token with its directory entries (one statement, DB; again from DB's primary, since a replica
    // could be behind the move's switch) → the budget lease (DO) → the read (home).
    const trips = async () => (await countRoundTrips(path, { token: store.token, env: vars })).trips;
    expect(await trips()).toEqual({ d1: 3, durableObjects: 1 });
    expect(await trips()).toEqual({ d1: 1, durableObjects: 0 });
    clock.advance(1100);
    // The entry of a moving store lasts a second: then the token's two reads again.
    expect(await trips()).toEqual({ d1: 3, durableObjects: 0 });
    expect(await trips()).toEqual({ d1: 1, durableObjects: 0 });
    await env.DB.prepare("UPDATE store_directory SET moving = 0 WHERE store_id = ?").bind(store.storeId).run();
  });
});
