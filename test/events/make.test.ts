import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { deliverEvent } from "../../src/events/delivery";
import { sweepEvents, sweepGraceMs } from "../../src/events/sweep";
import { projectPlatform } from "../../src/platform/select";
import { publishProduct } from "../../src/products/publish";
import { callApi, deliveryDeps, eventsOf, fakeReceiver, hookUrl, readEvent, recordingQueue } from "../support/events";
import { customFields, seedProduct, seedStore, storeDb, uuid } from "../support/factories";
import { expectJson, expectStatus } from "../support/http";
import { captureServiceLogs } from "../support/logs";

// The service logs what these tests provoke on purpose; captured, and checked where a test expects a line.
const logs = captureServiceLogs();

/** A store and a published product with a draft overlay, both pointing their webhook_url at `url`. */
async function hookedProductWithDraft(url: string | null) {
  const { storeId, token } = await seedStore();
  const product = await seedProduct(storeId, {
    webhook_url: url,
    custom_fields: customFields("nip"),
    draft: { draft_version: 1, product: { name: "Draft name", slug: `s-${uuid().slice(0, 8)}`, webhook_url: url } },
  });
  return { storeId, token, product };
}

describe("events made by publish: the event and its target", () => {
  it("a publish that answers 200 writes one product.published event whose payload is the answer, and enqueues its id", async () => {
    const url = hookUrl();
    const { storeId, token, product } = await hookedProductWithDraft(url);
    const { sent, queue } = recordingQueue();
    const response = await callApi(`/products/${product.id}/publish`, { method: "POST", token }, queue);
    const answer = await expectJson(response, 200);
    const events = await eventsOf(token, product.id);
    expect(events).toHaveLength(1);
    const [event] = events;
    expect(event?.id).toMatch(/^evt_[0-9a-f-]{36}$/);
    // Listed to the store's token: the event is the store's.
    expect(event).toMatchObject({ type: "product.published", url, status: "pending", attempts: 0 });
    expect(event?.payload).toEqual({
      type: "product.published",
      timestamp: event?.created_at,
      data: { store_id: storeId, product: answer },
    });
    expect(sent).toEqual([{ id: event?.id }]);
  });

  it("the target is the live webhook_url after the change: the overlay's new URL, not the old one", async () => {
    const [oldUrl, newUrl] = [hookUrl(), hookUrl()];
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, {
      webhook_url: oldUrl,
      draft: { draft_version: 1, product: { name: "N", slug: `s-${uuid().slice(0, 8)}`, webhook_url: newUrl } },
    });
    const { queue } = recordingQueue();
    const response = await callApi(`/products/${product.id}/publish`, { method: "POST", token }, queue);
    await expectStatus(response, 200);
    expect((await eventsOf(token, product.id)).map((event) => event.url)).toEqual([newUrl]);
  });

  it("no event when the webhook_url is null, empty, not a URL, or plain http: without WEBHOOK_ALLOW_HTTP=on", async () => {
    for (const url of [null, "", "not a url", "ftp://hooks.example.test/x", "http://hooks.example.test/x"]) {
      const { token, product } = await hookedProductWithDraft(url);
      const { sent, queue } = recordingQueue();
      const response = await callApi(`/products/${product.id}/publish`, { method: "POST", token }, queue);
      await expectStatus(response, 200, String(url));
      expect(await eventsOf(token, product.id), String(url)).toEqual([]);
      expect(sent).toEqual([]);
    }
  });

  it("plain http: targets make events when WEBHOOK_ALLOW_HTTP=on", async () => {
    const url = "http://127.0.0.1:9/hook";
    const { token, product } = await hookedProductWithDraft(url);
    const { queue } = recordingQueue();
    const response = await callApi(`/products/${product.id}/publish`, { method: "POST", token }, queue, {
      WEBHOOK_ALLOW_HTTP: "on",
    });
    await expectStatus(response, 200);
    expect((await eventsOf(token, product.id)).map((event) => event.url)).toEqual([url]);
  });
});

describe("events made by publish: refusals and failures", () => {
  it("a malformed WEBHOOK_ALLOW_HTTP answers 503 naming it on a publish to an http: URL, and nothing changes", async () => {
    const { token, product } = await hookedProductWithDraft("http://127.0.0.1:9/hook");
    const { queue } = recordingQueue();
    const response = await callApi(`/products/${product.id}/publish`, { method: "POST", token }, queue, {
      WEBHOOK_ALLOW_HTTP: "maybe",
    });
    expect((await expectJson<{ message: string }>(response, 503)).message).toContain("WEBHOOK_ALLOW_HTTP");
    expect(await eventsOf(token, product.id)).toEqual([]);
    logs.expectLogged("error", {
      message: "configuration problem",
      problem: expect.stringContaining("WEBHOOK_ALLOW_HTTP"),
    });
  });

  it("a publish refused with 422 (no active plan) makes no event", async () => {
    const { storeId, token } = await seedStore({ store: { plan_active: false } });
    const product = await seedProduct(storeId, { webhook_url: hookUrl() });
    const { sent, queue } = recordingQueue();
    const response = await callApi(`/products/${product.id}/publish`, { method: "POST", token }, queue);
    await expectStatus(response, 422);
    expect(await eventsOf(token, product.id)).toEqual([]);
    expect(sent).toEqual([]);
  });

  it("a publish without a draft still answers 200 and makes its event", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { status: "draft", webhook_url: hookUrl() });
    const { sent, queue } = recordingQueue();
    const response = await callApi(`/products/${product.id}/publish`, { method: "POST", token }, queue);
    await expectStatus(response, 200);
    expect(await eventsOf(token, product.id)).toHaveLength(1);
    expect(sent).toHaveLength(1);
  });

  it("when the publish's D1 batch fails, neither the change nor the event is written", async () => {
    const { token, product } = await hookedProductWithDraft(hookUrl());
    // The product's rows are in its store's home; the fake platform's in the global database.
    const real = await storeDb(product.store_id);
    let failedBatchSize = 0;
    // The batch that persists the overlay fails on a statement after the event's insert.
    const failing = new Proxy(real, {
      get(target, key, receiver) {
        if (key !== "batch") return Reflect.get(target, key, receiver);
        return (statements: Parameters<typeof real.batch>[0]) => {
          if (statements.length <= 2) return target.batch(statements);
          failedBatchSize = statements.length;
          return target.batch([...statements, target.select({ one: sql`1` }).from(sql`no_such_table`)]);
        };
      },
    });
    const found = await real.query.products.findFirst({ where: (p, { eq }) => eq(p.id, product.id) });
    await expect(
      publishProduct(
        {
          db: failing,
          platform: projectPlatform(env, createDb(env.DB)),
          webhookTarget: (value) => (value ? String(value) : null),
        },
        found as NonNullable<typeof found>,
      ),
    ).rejects.toThrow(/no such table/);
    expect(failedBatchSize).toBeGreaterThan(2);
    expect(await eventsOf(token, product.id)).toEqual([]);
    const after = await real.query.drafts.findFirst({ where: (d, { eq }) => eq(d.productId, product.id) });
    expect(after?.draftVersion).toBe(1);
  });
});

describe("events made by custom-field deletes: the live and variant deletes", () => {
  it("a live delete that answers 204 writes product.custom_field.deleted with store, product, null variant, list and name", async () => {
    const { storeId, token } = await seedStore();
    const url = hookUrl();
    const product = await seedProduct(storeId, {
      webhook_url: url,
      waitlist_custom_fields: customFields("phone", "nip"),
    });
    const { sent, queue } = recordingQueue();
    const response = await callApi(
      `/products/${product.id}/waitlist-custom-fields/phone`,
      { method: "DELETE", token },
      queue,
    );
    await expectStatus(response, 204);
    const [event, ...more] = await eventsOf(token, product.id);
    expect(more).toEqual([]);
    expect(event).toMatchObject({ type: "product.custom_field.deleted", url, status: "pending" });
    expect(event?.payload).toEqual({
      type: "product.custom_field.deleted",
      timestamp: event?.created_at,
      data: {
        store_id: storeId,
        product_id: product.id,
        variant_id: null,
        list: "waitlist_custom_fields",
        name: "phone",
      },
    });
    expect(sent).toEqual([{ id: event?.id }]);
  });

  it("a variant field delete names the variant and the custom_fields list", async () => {
    const { storeId, token } = await seedStore();
    const variantId = uuid();
    const product = await seedProduct(storeId, {
      webhook_url: hookUrl(),
      variants: [{ id: variantId, name: "V", amount: 100, currency: "pln", custom_fields: customFields("nip") }],
    });
    const { queue } = recordingQueue();
    const response = await callApi(
      `/product-variants/${variantId}/custom-fields/nip`,
      { method: "DELETE", token },
      queue,
    );
    await expectStatus(response, 204);
    const [event] = await eventsOf(token, product.id);
    expect(event?.payload?.data).toMatchObject({
      variant_id: variantId,
      list: "custom_fields",
      name: "nip",
    });
  });

  it("a delete answered 404 (no such field) or 409 (product has a draft) makes no event", async () => {
    const { storeId, token } = await seedStore();
    const plain = await seedProduct(storeId, { webhook_url: hookUrl(), custom_fields: customFields("nip") });
    const drafted = await seedProduct(storeId, {
      webhook_url: hookUrl(),
      custom_fields: customFields("nip"),
      draft: { draft_version: 1, product: { name: "D", slug: `d-${uuid().slice(0, 8)}` } },
    });
    const { sent, queue } = recordingQueue();
    await expectStatus(
      await callApi(`/products/${plain.id}/custom-fields/missing`, { method: "DELETE", token }, queue),
      404,
    );
    await expectStatus(
      await callApi(`/products/${drafted.id}/custom-fields/nip`, { method: "DELETE", token }, queue),
      409,
    );
    expect(await eventsOf(token, plain.id)).toEqual([]);
    expect(await eventsOf(token, drafted.id)).toEqual([]);
    expect(sent).toEqual([]);
  });
});

describe("events made by custom-field deletes: draft deletes and a failed enqueue", () => {
  it("a draft delete sends no event", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, {
      webhook_url: hookUrl(),
      draft: {
        draft_version: 1,
        product: { name: "D", slug: `d-${uuid().slice(0, 8)}` },
        custom_fields: customFields("nip"),
      },
    });
    const { queue } = recordingQueue();
    const response = await callApi(
      `/products/${product.id}/draft/custom-fields/nip`,
      { method: "DELETE", token, body: { draft_version: 1 } },
      queue,
    );
    await expectStatus(response, 204);
    expect(await eventsOf(token, product.id)).toEqual([]);
  });

  it("a failed enqueue does not change the answer: the event stays pending and the sweep delivers it later", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { webhook_url: hookUrl(), custom_fields: customFields("nip") });
    const { queue } = recordingQueue({ failing: true });
    const response = await callApi(`/products/${product.id}/custom-fields/nip`, { method: "DELETE", token }, queue);
    await expectStatus(response, 204);
    const [event] = await eventsOf(token, product.id);
    const id = event?.id ?? "";
    expect((await readEvent(token, id)).status).toBe("pending");

    const later = new Date(Date.now() + sweepGraceMs + 60_000);
    const swept = recordingQueue();
    const home = await storeDb(storeId);
    await sweepEvents({ db: home, queue: swept.queue, retentionDays: 30, now: () => later });
    expect(swept.sent).toContainEqual({ id });
    const receiver = fakeReceiver(() => new Response(null, { status: 204 }));
    await deliverEvent(deliveryDeps({ db: home, fetch: receiver.fetch, now: () => later }), id);
    expect(receiver.received.map((request) => request.headers.get("webhook-id"))).toEqual([id]);
    expect((await readEvent(token, id)).status).toBe("delivered");
    logs.expectLogged("warn", { message: "webhook event: enqueue failed; the sweep will retry it", event_id: id });
  });
});
