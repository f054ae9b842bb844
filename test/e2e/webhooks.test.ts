import { afterAll, describe, expect, inject, it } from "vitest";
import { type Answer, type Delivery, startReceiver } from "../../scripts/webhook-receiver.mjs";

const baseUrl = inject("baseUrl");
const uuid = () => crypto.randomUUID();
const secret = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")}`;
const storeId = uuid();
const token = `e2e-webhooks-${uuid()}`;

const call = async (path: string, init: { method?: string; body?: unknown } = {}) => {
  const response = await fetch(`${baseUrl}/api/v1${path}`, {
    method: init.method ?? "GET",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: response.status, body: response.status === 204 ? null : await response.json() };
};

const receivers: Array<{ close: () => Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
});

/** A receiver that verifies with `secrets` and answers as `answer` says (by attempt index). */
async function receiver(answer: (delivery: Delivery, index: number) => Answer | Promise<Answer>, secrets = [secret]) {
  let count = 0;
  const started = await startReceiver({ secrets, answer: (delivery) => answer(delivery, count++) });
  receivers.push(started);
  return started;
}

/** Loads the store, its token and one product per URL; answers the product ids. */
async function seedProducts(urls: string[]) {
  const products = urls.map((url) => {
    const id = uuid();
    return {
      id,
      store_id: storeId,
      status: "published",
      name: "E2E webhooks",
      slug: `e2e-${id.slice(0, 8)}`,
      webhook_url: `${url}/hook`,
      custom_fields: [{ name: "nip", enabled: true, order: 0 }],
      variants: [{ id: uuid(), name: "V", amount: 100, currency: "pln" }],
    };
  });
  const response = await fetch(`${baseUrl}/api/v1/_dev/fixtures`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      stores: [{ id: storeId, name: "E2E webhooks", plan_active: true, webhook_secret: secret }],
      tokens: [{ token, store_ids: [storeId], abilities: ["*"] }],
      products,
    }),
  });
  expect(response.status).toBe(201);
  return products.map((product) => product.id);
}

async function until<T>(probe: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

type EventDetail = { id: string; status: string; attempts: number; attempt_log: Array<Record<string, unknown>> };
const eventOf = async (productId: string) => {
  const list = await call(`/webhook-events?product=${productId}`);
  const [item] = (list.body as { items: Array<{ id: string }> }).items;
  return item ? ((await call(`/webhook-events/${item.id}`)).body as EventDetail) : null;
};

describe("events over real HTTP (wrangler dev, its local queue, real receivers)", () => {
  it("a publish is delivered once to a healthy receiver, signed as standardwebhooks verifies", async () => {
    const ok = await receiver(() => 204);
    const [productId] = await seedProducts([ok.url]);
    const published = await call(`/products/${productId}/publish`, { method: "POST" });
    expect(published.status).toBe(200);
    await until(
      () => ok.deliveries.length,
      (n) => n >= 1,
    );
    expect(ok.deliveries).toHaveLength(1);
    const [delivery] = ok.deliveries;
    expect(delivery?.verifiedWith).toEqual([secret]);
    expect(delivery?.event).toMatchObject({
      type: "product.published",
      data: { store_id: storeId, product: published.body },
    });
    const event = await until(
      () => eventOf(productId ?? ""),
      (e) => e?.status === "delivered",
    );
    expect(event).toMatchObject({ id: delivery?.id, status: "delivered", attempts: 1 });
  });

  it("a receiver failing twice gets the same webhook-id on every attempt until it answers 2xx", async () => {
    const flaky = await receiver((_delivery, index) => (index < 2 ? 500 : 200));
    const [productId] = await seedProducts([flaky.url]);
    expect((await call(`/products/${productId}/custom-fields/nip`, { method: "DELETE" })).status).toBe(204);
    await until(
      () => flaky.deliveries.length,
      (n) => n >= 3,
    );
    expect(new Set(flaky.deliveries.map((d) => d.id)).size).toBe(1);
    expect(flaky.deliveries.every((d) => d.verifiedWith.length === 1)).toBe(true);
    expect(flaky.deliveries[0]?.event).toMatchObject({
      type: "product.custom_field.deleted",
      data: { product_id: productId, variant_id: null, list: "custom_fields", name: "nip" },
    });
    const event = await until(
      () => eventOf(productId ?? ""),
      (e) => e?.status === "delivered",
    );
    expect(event?.attempt_log.map((line) => line.response_status)).toEqual([500, 500, 200]);
  });

  it("a receiver slower than the timeout is retried; its attempts are logged as timed out", async () => {
    const slow = await receiver(async (_delivery, index) => {
      if (index === 0) await new Promise((resolve) => setTimeout(resolve, 2500));
      return 204;
    });
    const [productId] = await seedProducts([slow.url]);
    expect((await call(`/products/${productId}/publish`, { method: "POST" })).status).toBe(200);
    const event = await until(
      () => eventOf(productId ?? ""),
      (e) => e?.status === "delivered",
    );
    expect(event?.attempt_log[0]).toMatchObject({ response_status: null, error: "timed out after 1000 ms" });
    expect(event?.attempt_log.at(-1)).toMatchObject({ response_status: 204 });
  });

  it("a 410 ends the attempts at once: one request, the event failed", async () => {
    const gone = await receiver(() => 410);
    const [productId] = await seedProducts([gone.url]);
    expect((await call(`/products/${productId}/publish`, { method: "POST" })).status).toBe(200);
    const event = await until(
      () => eventOf(productId ?? ""),
      (e) => e?.status === "failed",
    );
    expect(event).toMatchObject({ status: "failed", attempts: 1 });
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(gone.deliveries).toHaveLength(1);
  });

  it("a receiver that always fails ends failed after the schedule; redeliver sends once more with the same id", async () => {
    let healthy = false;
    const down = await receiver(() => (healthy ? 200 : 503));
    const [productId] = await seedProducts([down.url]);
    expect((await call(`/products/${productId}/publish`, { method: "POST" })).status).toBe(200);
    const failed = await until(
      () => eventOf(productId ?? ""),
      (e) => e?.status === "failed",
    );
    expect(failed).toMatchObject({ status: "failed", attempts: 4 });
    healthy = true;
    const redelivered = await call(`/webhook-events/${failed?.id}/redeliver`, { method: "POST" });
    expect(redelivered.status).toBe(202);
    const event = await until(
      () => eventOf(productId ?? ""),
      (e) => e?.status === "delivered",
    );
    expect(event?.attempts).toBe(5);
    expect(new Set(down.deliveries.map((d) => d.id))).toEqual(new Set([failed?.id]));
  });

  it("after a rotation each delivery carries both signatures: receivers with the old or the new secret verify it", async () => {
    const secrets = [secret];
    const both = await receiver(() => 204, secrets);
    const [productId] = await seedProducts([both.url]);
    // After the fixture load, which sets the store's secret.
    const rotated = await call("/webhooks/secret/rotate", { method: "POST" });
    expect(rotated.status).toBe(200);
    const newSecret = (rotated.body as { secret: string }).secret;
    secrets.push(newSecret);
    expect((await call(`/products/${productId}/publish`, { method: "POST" })).status).toBe(200);
    await until(
      () => both.deliveries.length,
      (n) => n >= 1,
    );
    expect(both.deliveries[0]?.headers["webhook-signature"].split(" ")).toHaveLength(2);
    expect(both.deliveries[0]?.verifiedWith).toEqual([secret, newSecret]);
  });
});
