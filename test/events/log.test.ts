import { eq } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { webhookEvents } from "../../src/db/schema";
import { deliverEvent } from "../../src/events/delivery";
import { insertEvent, newEvent } from "../../src/events/records";
import { callApi, deliveryDeps, fakeReceiver, hookUrl, readEvent, recordingQueue } from "../support/events";
import { seedProduct, seedStore, seedToken, storeDb, uuid } from "../support/factories";
import { expectJson, expectStatus } from "../support/http";
import { captureServiceLogs } from "../support/logs";

// The service logs what these tests provoke on purpose; captured, and checked where a test expects a line.
const logs = captureServiceLogs();

type Page = { items: Array<Record<string, unknown>>; pagination: Record<string, number> };

/** `count` events of one product of a fresh store, one second apart (oldest first). */
async function storeWithEvents(count: number) {
  const { storeId, token } = await seedStore();
  const product = await seedProduct(storeId, { webhook_url: hookUrl() });
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const event = newEvent(
      { id: product.id, storeId },
      index % 2 ? "product.published" : "product.custom_field.deleted",
      hookUrl(),
      { store_id: storeId, index },
      new Date(Date.now() - (count - index) * 1000),
    );
    await insertEvent(await storeDb(storeId), event);
    ids.push(event.id);
  }
  return { storeId, token, productId: product.id, ids };
}

const { queue } = recordingQueue();
const get = (path: string, token: string, store?: string) => callApi(path, { token, store }, queue);

describe("GET and rotate /webhooks/secret", () => {
  it("the secret is made on first read, whsec_ with 32 random bytes, and the same on every read", async () => {
    const { token } = await seedStore();
    const first = await get("/webhooks/secret", token);
    const { secret } = await expectJson<{ secret: string }>(first, 200);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(atob(secret.slice(6))).toHaveLength(32);
    expect(await expectJson(await get("/webhooks/secret", token), 200)).toEqual({ secret });
  });

  it("rotate answers a new secret, which later reads answer", async () => {
    const { token } = await seedStore();
    const { secret: before } = await expectJson<{ secret: string }>(await get("/webhooks/secret", token), 200);
    const rotated = await callApi("/webhooks/secret/rotate", { method: "POST", token }, queue);
    const { secret: after } = await expectJson<{ secret: string }>(rotated, 200);
    expect(after).not.toBe(before);
    expect(await expectJson(await get("/webhooks/secret", token), 200)).toEqual({ secret: after });
  });

  it("a fixture's webhook_secret is the store's secret", async () => {
    const secret = `whsec_${btoa("x".repeat(32))}`;
    const { token } = await seedStore({ store: { webhook_secret: secret } });
    expect(await expectJson(await get("/webhooks/secret", token), 200)).toEqual({ secret });
  });

  it("the secret and event routes need ability webhooks:manage (or *)", async () => {
    const { storeId } = await seedStore();
    const reader = await seedToken([storeId], ["products:read", "products:write", "products:publish"]);
    const manager = await seedToken([storeId], ["webhooks:manage"]);
    for (const [method, path] of [
      ["GET", "/webhooks/secret"],
      ["POST", "/webhooks/secret/rotate"],
      ["GET", "/webhook-events"],
      ["GET", `/webhook-events/evt_${uuid()}`],
      ["POST", `/webhook-events/evt_${uuid()}/redeliver`],
    ] as const) {
      const refused = await callApi(path, { method, token: reader }, queue);
      expect(await expectJson(refused, 403, path)).toEqual({ message: "This action is unauthorized." });
      expect((await callApi(path, { method, token: manager }, queue)).status, path).not.toBe(403);
    }
  });

  it("a token of several stores must name the store", async () => {
    const { storeId } = await seedStore();
    const { storeId: other } = await seedStore();
    const token = await seedToken([storeId, other]);
    const response = await get("/webhooks/secret", token);
    expect(await expectJson(response, 400)).toEqual({ message: "The X-Service-Store header is required." });
    await expectStatus(await get("/webhooks/secret", token, other), 200);
  });
});

describe("GET /webhook-events", () => {
  it("lists the store's events newest first with the documented fields, never the payload", async () => {
    const { token, ids, productId } = await storeWithEvents(3);
    const response = await get("/webhook-events", token);
    const page = await expectJson<Page>(response, 200);
    expect(page.items.map((item) => item.id)).toEqual([...ids].reverse());
    expect(page.pagination).toEqual({ current_page: 1, total_pages: 1, per_page: 25, total: 3 });
    expect(Object.keys(page.items[0] ?? {}).sort()).toEqual(
      [
        "attempts",
        "created_at",
        "id",
        "last_attempt_at",
        "last_response_status",
        "next_attempt_at",
        "product_id",
        "status",
        "type",
        "url",
      ].sort(),
    );
    expect(page.items[0]).toMatchObject({ product_id: productId, status: "pending", attempts: 0 });
  });

  it("filters by status, type and product; an empty filter is no filter", async () => {
    const { token, ids, productId, storeId } = await storeWithEvents(4);
    await (await storeDb(storeId))
      .update(webhookEvents)
      .set({ status: "failed", nextAttemptAt: null })
      .where(eq(webhookEvents.id, ids[0] ?? ""));
    const items = async (query: string) =>
      (await expectJson<Page>(await get(`/webhook-events?${query}`, token), 200)).items.map((item) => item.id);
    expect(await items("status=failed")).toEqual([ids[0]]);
    expect(await items("type=product.published")).toEqual([ids[3], ids[1]]);
    expect(await items(`product=${productId.toUpperCase()}`)).toHaveLength(4);
    expect(await items(`product=${uuid()}`)).toEqual([]);
    expect(await items("status=&type=&product=")).toHaveLength(4);
  });

  it("pages with per_page up to 100; other values answer 422 naming the parameter", async () => {
    const { token, ids } = await storeWithEvents(3);
    const second = await expectJson<Page>(await get("/webhook-events?per_page=2&page=2", token), 200);
    expect(second.items.map((item) => item.id)).toEqual([ids[0]]);
    expect(second.pagination).toEqual({ current_page: 2, total_pages: 2, per_page: 2, total: 3 });
    for (const query of ["per_page=101", "page=0", "status=lost", "type=product.deleted", "product=nope"]) {
      const response = await get(`/webhook-events?${query}`, token);
      const body = await expectJson<{ errors: Record<string, string[]> }>(response, 422, query);
      expect(Object.keys(body.errors), query).toEqual([query.split("=")[0]]);
    }
  });

  it("another store's events are neither listed nor found", async () => {
    const { ids } = await storeWithEvents(1);
    const { token } = await seedStore();
    expect((await expectJson<Page>(await get("/webhook-events", token), 200)).items).toEqual([]);
    const response = await get(`/webhook-events/${ids[0]}`, token);
    expect(await expectJson(response, 404)).toEqual({ message: `Webhook event with ID ${ids[0]} not found` });
  });

  it("events past WEBHOOK_RETENTION_DAYS are not listed even before the sweep drops them", async () => {
    const { token } = await storeWithEvents(2);
    const response = await callApi("/webhook-events", { token }, queue, { WEBHOOK_RETENTION_DAYS: "1" });
    expect((await expectJson<Page>(response, 200)).items).toHaveLength(2);
    const { storeId, token: oldToken } = await seedStore();
    const product = await seedProduct(storeId);
    await insertEvent(
      await storeDb(storeId),
      newEvent({ id: product.id, storeId }, "product.published", hookUrl(), {}, new Date(Date.now() - 2 * 86_400_000)),
    );
    const old = await callApi("/webhook-events", { token: oldToken }, queue, { WEBHOOK_RETENTION_DAYS: "1" });
    expect((await expectJson<Page>(old, 200)).items).toEqual([]);
  });

  it("a malformed WEBHOOK_RETENTION_DAYS answers 503 naming it", async () => {
    const { token } = await seedStore();
    const response = await callApi("/webhook-events", { token }, queue, { WEBHOOK_RETENTION_DAYS: "forever" });
    expect((await expectJson<{ message: string }>(response, 503)).message).toContain("WEBHOOK_RETENTION_DAYS");
    logs.expectLogged("error", {
      message: "configuration problem",
      problem: expect.stringContaining("WEBHOOK_RETENTION_DAYS"),
    });
  });
});

describe("GET /webhook-events/{id} and redeliver", () => {
  it("the detail adds the payload every attempt sends and one attempt-log line per attempt", async () => {
    const { token, ids, storeId } = await storeWithEvents(1);
    const id = ids[0] ?? "";
    const receiver = fakeReceiver(() => new Response(null, { status: 503 }));
    await deliverEvent(deliveryDeps({ db: await storeDb(storeId), fetch: receiver.fetch }), id);
    const response = await get(`/webhook-events/${id.toUpperCase().replace("EVT_", "evt_")}`, token);
    const detail = await expectJson<Record<string, unknown>>(response, 200);
    expect(detail).toMatchObject({ id, status: "pending", attempts: 1, last_response_status: 503 });
    expect(detail.payload).toEqual(JSON.parse(receiver.received[0]?.body ?? ""));
    expect(detail.attempt_log).toEqual([
      { at: expect.any(String), response_status: 503, error: null, duration_ms: expect.any(Number) },
    ]);
    expect(JSON.stringify(detail)).not.toContain("whsec_");
  });

  it("a malformed event id answers 400", async () => {
    const { token } = await seedStore();
    for (const id of ["nope", uuid(), `evt_${uuid()}x`]) {
      const response = await get(`/webhook-events/${id}`, token);
      expect(await expectJson(response, 400, id)).toEqual({ message: "Invalid event ID." });
    }
  });

  it("redeliver answers 202 and makes a failed event pending for one new attempt with the same webhook-id", async () => {
    const { token, ids, storeId } = await storeWithEvents(1);
    const id = ids[0] ?? "";
    const home = await storeDb(storeId);
    const gone = fakeReceiver(() => new Response(null, { status: 410 }));
    await deliverEvent(deliveryDeps({ db: home, fetch: gone.fetch }), id);
    expect((await readEvent(token, id)).status).toBe("failed");

    const { sent, queue: redeliveries } = recordingQueue();
    const response = await callApi(`/webhook-events/${id}/redeliver`, { method: "POST", token }, redeliveries);
    expect(await expectJson(response, 202)).toMatchObject({
      id,
      status: "pending",
      next_attempt_at: expect.any(String),
    });
    expect(sent).toEqual([{ id }]);

    // One attempt: it fails again at once instead of starting the schedule over.
    const failing = fakeReceiver(() => new Response(null, { status: 500 }));
    await deliverEvent(deliveryDeps({ db: home, fetch: failing.fetch }), id);
    expect(await readEvent(token, id)).toMatchObject({ status: "failed", attempts: 2 });
    const secret = (await expectJson<{ secret: string }>(await get("/webhooks/secret", token), 200)).secret;
    const [request] = failing.received;
    expect(request?.headers.get("webhook-id")).toBe(id);
    expect(() =>
      new Webhook(secret).verify(request?.body ?? "", Object.fromEntries(request?.headers ?? [])),
    ).not.toThrow();
  });

  it("redeliver of an unknown event answers 404", async () => {
    const { token } = await seedStore();
    const id = `evt_${uuid()}`;
    const response = await callApi(`/webhook-events/${id}/redeliver`, { method: "POST", token }, queue);
    await expectStatus(response, 404);
  });
});
