import { describe, expect, it } from "vitest";
import type { FixtureDocumentInput } from "../../src/dev/fixture-schema";
import { readEvent } from "../support/events";
import { productInput, seed, seedStore, uuid } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";

type EventInput = NonNullable<FixtureDocumentInput["webhook_events"]>[number];
type Page = { items: { id: string; status: string; attempts: number; last_response_status: number | null }[] };

const hook = "https://hooks.example.test/fixture";
const eventId = () => `evt_${uuid()}`;

/** A store with a product that has a webhook_url, and its token. */
async function storeWithProduct() {
  const { storeId, token } = await seedStore();
  const product = productInput(storeId, { status: "published", webhook_url: hook });
  await seed({ products: [product] });
  return { storeId, token, product };
}

/** A delivered custom-field event of `product`, made `age_seconds` before the load, overridable. */
function fieldEvent(product: { id: string; store_id: string }, overrides: Partial<EventInput> = {}): EventInput {
  return {
    id: eventId(),
    store_id: product.store_id,
    product_id: product.id,
    type: "product.custom_field.deleted",
    url: hook,
    status: "delivered",
    age_seconds: 3600,
    data: { store_id: product.store_id, product_id: product.id, variant_id: null, list: "custom_fields", name: "nip" },
    attempt_log: [
      { after_seconds: 0, response_status: 503, duration_ms: 120 },
      { after_seconds: 5, response_status: 204, duration_ms: 40 },
    ],
    ...overrides,
  };
}

const load = (document: FixtureDocumentInput) => api("/_dev/fixtures", { method: "POST", body: document });

describe("POST /api/v1/_dev/fixtures: webhook_events, stored as the delivery left them", () => {
  it("stores an event as the delivery left it: status, attempts, the last answer, nothing due", async () => {
    const { token, product } = await storeWithProduct();
    const event = fieldEvent(product);
    await expectStatus(await load({ webhook_events: [event] }), 201);
    const list = await expectJson<Page>(await api("/webhook-events", { token }), 200);
    expect(list.items).toEqual([
      expect.objectContaining({
        id: event.id,
        status: "delivered",
        attempts: 2,
        last_response_status: 204,
        next_attempt_at: null,
      }),
    ]);
  });

  it("places an event age_seconds before the load and each attempt after_seconds after the event", async () => {
    const { token, product } = await storeWithProduct();
    const event = fieldEvent(product, { age_seconds: 7200 });
    const before = Date.now();
    await expectStatus(await load({ webhook_events: [event] }), 201);
    const after = Date.now();
    const detail = await readEvent(token, event.id);
    const created = Date.parse(detail.created_at);
    expect(created).toBeGreaterThanOrEqual(before - 7_200_000);
    expect(created).toBeLessThanOrEqual(after - 7_200_000);
    expect(detail.attempt_log).toEqual([
      { at: new Date(created).toISOString(), response_status: 503, error: null, duration_ms: 120 },
      { at: new Date(created + 5000).toISOString(), response_status: 204, error: null, duration_ms: 40 },
    ]);
    expect(detail.last_attempt_at).toBe(new Date(created + 5000).toISOString());
  });

  it("keeps a pending event due next_attempt_after_seconds after its creation, for the sweep to send", async () => {
    const { token, product } = await storeWithProduct();
    const event = fieldEvent(product, {
      status: "pending",
      age_seconds: 600,
      attempt_log: [{ after_seconds: 0, response_status: 500, duration_ms: 80 }],
      next_attempt_after_seconds: 7200,
    });
    await expectStatus(await load({ webhook_events: [event] }), 201);
    const detail = await readEvent(token, event.id);
    expect(detail).toMatchObject({ status: "pending", attempts: 1, last_response_status: 500 });
    expect(Date.parse(detail.next_attempt_at ?? "")).toBe(Date.parse(detail.created_at) + 7_200_000);
  });
});

describe("POST /api/v1/_dev/fixtures: webhook_events, their bodies and reloads", () => {
  it("makes the body from type, creation time and data, as the change that makes an event does", async () => {
    const { token, product } = await storeWithProduct();
    const event = fieldEvent(product, {
      age_seconds: undefined,
      created_at: new Date(Date.now() - 60_000).toISOString(),
    });
    await expectStatus(await load({ webhook_events: [event] }), 201);
    const detail = await readEvent(token, event.id);
    expect(detail.created_at).toBe(event.created_at);
    expect(detail.payload).toEqual({ type: event.type, timestamp: event.created_at, data: event.data });
  });

  it("gives a product.published event without data the live product as loaded, like a delivery rebuilding it", async () => {
    const { storeId, token, product } = await storeWithProduct();
    const event = fieldEvent(product, {
      type: "product.published",
      data: undefined,
      status: "failed",
      attempt_log: [{ after_seconds: 0, response_status: null, error: "timed out after 15000 ms", duration_ms: 15003 }],
    });
    await expectStatus(await load({ webhook_events: [event] }), 201);
    const detail = await readEvent(token, event.id);
    const live = await expectJson(await api(`/products/${product.id}`, { token }), 200);
    expect(detail).toMatchObject({ status: "failed", attempts: 1, last_response_status: null });
    expect(detail.payload).toEqual({
      type: "product.published",
      timestamp: detail.created_at,
      data: { store_id: storeId, product: live },
    });
  });

  it("upserts events by id: loading the document again rewrites the event, body included", async () => {
    const { token, product } = await storeWithProduct();
    const event = fieldEvent(product);
    await expectStatus(await load({ webhook_events: [event] }), 201);
    const failed = {
      ...event,
      status: "failed" as const,
      attempt_log: [{ after_seconds: 0, response_status: 410, duration_ms: 9 }],
    };
    await expectStatus(await load({ webhook_events: [failed] }), 201);
    expect(await readEvent(token, event.id)).toMatchObject({
      status: "failed",
      attempts: 1,
      last_response_status: 410,
    });
  });
});

describe("POST /api/v1/_dev/fixtures: webhook_events refused", () => {
  it("answers an event that contradicts itself or names an unknown store 422, writing nothing", async () => {
    const { token, product } = await storeWithProduct();
    const fine = fieldEvent(product);
    const cases: [EventInput, string][] = [
      [{ ...fieldEvent(product), status: "failed" }, "webhook_events.1.status"],
      [{ ...fieldEvent(product), status: "pending" }, "webhook_events.1.status"],
      [{ ...fieldEvent(product), next_attempt_after_seconds: 60 }, "webhook_events.1.next_attempt_after_seconds"],
      [{ ...fieldEvent(product), attempt_log: [] }, "webhook_events.1.attempt_log"],
      [
        { ...fieldEvent(product), age_seconds: 60, created_at: new Date().toISOString() },
        "webhook_events.1.age_seconds",
      ],
      [{ ...fieldEvent(product), data: undefined }, "webhook_events.1.data"],
      [{ ...fieldEvent(product), id: uuid() }, "webhook_events.1.id"],
      [{ ...fieldEvent(product), store_id: uuid() }, "webhook_events.1.store_id"],
      [
        fieldEvent(product, {
          attempt_log: [
            { after_seconds: 5, response_status: 500, duration_ms: 1 },
            { after_seconds: 0, response_status: 204, duration_ms: 1 },
          ],
        }),
        "webhook_events.1.attempt_log.1.after_seconds",
      ],
      [
        fieldEvent(product, {
          attempt_log: [{ after_seconds: 0, response_status: 204, error: "both", duration_ms: 1 }],
        }),
        "webhook_events.1.attempt_log.0",
      ],
      [{ ...fieldEvent(product), id: fine.id }, "webhook_events.1.id"],
    ];
    for (const [broken, field] of cases) {
      const response = await load({ webhook_events: [fine, broken] });
      expect((await expectJson<{ errors: object }>(response, 422, field)).errors).toHaveProperty([field]);
    }
    await expectStatus(await api(`/webhook-events/${fine.id}`, { token }), 404);
  });
});
