import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import type { components } from "../../openapi/schema";
import { type Answer, type Delivery, startReceiver } from "../../scripts/webhook-receiver.mjs";
import { poll } from "../support/poll";
import { expectJson, expectStatus } from "../support/responses";
import { serverApi } from "../support/server";

const uuid = () => randomUUID();
const secret = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")}`;
const storeId = uuid();
const token = `e2e-webhooks-${uuid()}`;

/** A call of the store's token to the API of `wrangler dev`. */
const call = (path: string, init: { method?: string } = {}) => serverApi(path, { method: init.method, token });

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
  const response = await serverApi("/_dev/fixtures", {
    method: "POST",
    body: {
      stores: [{ id: storeId, name: "E2E webhooks", plan_active: true, webhook_secret: secret }],
      tokens: [{ token, store_ids: [storeId], abilities: ["*"] }],
      products,
    },
  });
  await expectStatus(response, 201);
  return products.map((product) => product.id);
}

type EventDetail = components["schemas"]["WebhookEventDetail"];
/** The detail of the one event of a product, or null while there is none. */
const eventOf = async (productId: string) => {
  const list = await expectJson<{ items: Array<{ id: string }> }>(
    await call(`/webhook-events?product=${productId}`),
    200,
  );
  const [item] = list.items;
  return item ? expectJson<EventDetail>(await call(`/webhook-events/${item.id}`), 200) : null;
};

/** The product's event once it has reached `status`. */
const eventReaching = (productId: string | undefined, status: "delivered" | "failed") =>
  poll(
    () => eventOf(productId ?? ""),
    (event): event is EventDetail => event?.status === status,
    { what: `the event of product ${productId} ${status}` },
  );

/** Publishes a product and expects the 200; answers the published product. */
const publish = async (productId: string | undefined) =>
  expectJson(await call(`/products/${productId}/publish`, { method: "POST" }), 200);

/** The receiver's deliveries once there are at least `count`. */
const deliveriesOf = (receiver: { deliveries: Delivery[] }, count: number) =>
  poll(
    () => receiver.deliveries.length,
    (n) => n >= count,
    { what: `${count} deliveries` },
  );

describe("events over real HTTP (wrangler dev, its local queue, real receivers): delivered once and signed, retried with the same id until 2xx or past the timeout", () => {
  it("a publish is delivered once to a healthy receiver, signed as standardwebhooks verifies", async () => {
    const ok = await receiver(() => 204);
    const [productId] = await seedProducts([ok.url]);
    const published = await publish(productId);
    await deliveriesOf(ok, 1);
    expect(ok.deliveries).toHaveLength(1);
    const [delivery] = ok.deliveries;
    expect(delivery?.verifiedWith).toEqual([secret]);
    expect(delivery?.event).toMatchObject({
      type: "product.published",
      data: { store_id: storeId, product: published },
    });
    const event = await eventReaching(productId, "delivered");
    expect(event).toMatchObject({ id: delivery?.id, status: "delivered", attempts: 1 });
  });

  it("a receiver failing twice gets the same webhook-id on every attempt until it answers 2xx", async () => {
    const flaky = await receiver((_delivery, index) => (index < 2 ? 500 : 200));
    const [productId] = await seedProducts([flaky.url]);
    await expectStatus(await call(`/products/${productId}/custom-fields/nip`, { method: "DELETE" }), 204);
    await deliveriesOf(flaky, 3);
    expect(new Set(flaky.deliveries.map((d) => d.id)).size).toBe(1);
    expect(flaky.deliveries.every((d) => d.verifiedWith.length === 1)).toBe(true);
    expect(flaky.deliveries[0]?.event).toMatchObject({
      type: "product.custom_field.deleted",
      data: { product_id: productId, variant_id: null, list: "custom_fields", name: "nip" },
    });
    const event = await eventReaching(productId, "delivered");
    expect(event?.attempt_log.map((line) => line.response_status)).toEqual([500, 500, 200]);
  });

  it("a receiver slower than the timeout is retried; its attempts are logged as timed out", async () => {
    // The first attempt is answered only once the retry has come, so it is slower than the timeout by
    // construction (however long the timeout and the schedule), never by a guessed sleep.
    let retried = () => {};
    const retry = new Promise<void>((resolve) => {
      retried = resolve;
    });
    onTestFinished(() => retried());
    const slow = await receiver(async (_delivery, index) => {
      if (index === 0) await retry;
      else retried();
      return 204;
    });
    const [productId] = await seedProducts([slow.url]);
    await publish(productId);
    const event = await eventReaching(productId, "delivered");
    expect(event?.attempt_log[0]).toMatchObject({ response_status: null, error: "timed out after 1000 ms" });
    expect(event?.attempt_log.at(-1)).toMatchObject({ response_status: 204 });
  });
});

describe("events over real HTTP: a 410 or an exhausted schedule fails the event, redeliver sends it again, a rotation signs with both secrets", () => {
  it("a 410 ends the attempts at once: one request, the event failed", async () => {
    const gone = await receiver(() => 410);
    // A witness published once the 410 is in, failing once: its retry is due after any retry of the 410's
    // event would be (same schedule, later start), so once the witness is delivered such a retry had its turn.
    const witness = await receiver((_delivery, index) => (index < 1 ? 500 : 204));
    const [productId, witnessId] = await seedProducts([gone.url, witness.url]);
    await publish(productId);
    const event = await eventReaching(productId, "failed");
    expect(event).toMatchObject({ status: "failed", attempts: 1 });
    await publish(witnessId);
    expect(await eventReaching(witnessId, "delivered")).toMatchObject({ attempts: 2 });
    expect(gone.deliveries).toHaveLength(1);
  });

  it("a receiver that always fails ends failed after the schedule; redeliver sends once more with the same id", async () => {
    let healthy = false;
    const down = await receiver(() => (healthy ? 200 : 503));
    const [productId] = await seedProducts([down.url]);
    await publish(productId);
    const failed = await eventReaching(productId, "failed");
    expect(failed).toMatchObject({ status: "failed", attempts: 4 });
    healthy = true;
    await expectStatus(await call(`/webhook-events/${failed.id}/redeliver`, { method: "POST" }), 202);
    const event = await eventReaching(productId, "delivered");
    expect(event?.attempts).toBe(5);
    expect(new Set(down.deliveries.map((d) => d.id))).toEqual(new Set([failed.id]));
  });

  it("after a rotation each delivery carries both signatures: receivers with the old or the new secret verify it", async () => {
    const secrets = [secret];
    const both = await receiver(() => 204, secrets);
    const [productId] = await seedProducts([both.url]);
    // After the fixture load, which sets the store's secret.
    const rotated = await expectJson<{ secret: string }>(
      await call("/webhooks/secret/rotate", { method: "POST" }),
      200,
    );
    const newSecret = rotated.secret;
    secrets.push(newSecret);
    await publish(productId);
    await deliveriesOf(both, 1);
    expect(both.deliveries[0]?.headers["webhook-signature"].split(" ")).toHaveLength(2);
    expect(both.deliveries[0]?.verifiedWith).toEqual([secret, newSecret]);
  });
});
