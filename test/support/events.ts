import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { createDb } from "../../src/db/client";
import { webhookEvents } from "../../src/db/schema";
import type { DeliveryDeps } from "../../src/events/delivery";
import { type DeliveryMessage, insertEvent, newEvent } from "../../src/events/records";
import { storeSecretRow } from "../../src/events/secrets";
import { seedStore, uuid } from "./factories";
import { api, expectJson } from "./http";

export const db = () => createDb(env.DB);

/** A queue that records what the API sends, or refuses every send (`failing`), in place of the real binding. */
export function recordingQueue(options: { failing?: boolean } = {}) {
  const sent: DeliveryMessage[] = [];
  const queue = {
    async send(body: DeliveryMessage) {
      if (options.failing) throw new Error("queue unavailable");
      sent.push(body);
    },
    async sendBatch(messages: Iterable<{ body: DeliveryMessage }>) {
      if (options.failing) throw new Error("queue unavailable");
      for (const message of messages) sent.push(message.body);
    },
  };
  return { sent, queue: queue as unknown as Queue<DeliveryMessage> };
}

type Call = { method?: string; token?: string; store?: string; body?: unknown };

/**
 * Calls the API with the test bindings but `queue` as the webhook queue (and `vars` over the variables), and
 * waits for what the request left running after its answer (the enqueue).
 */
export function callApi(
  path: string,
  call: Call,
  queue: Queue<DeliveryMessage>,
  vars: Record<string, string> = {},
): Promise<Response> {
  return api(path, { ...call, env: { WEBHOOK_QUEUE: queue, ...vars } });
}

/**
 * The stored event row, or undefined: for tests of the delivery functions, which take the database and
 * write the row. A test that went through the API reads the event through it ({@link readEvent}).
 */
export const storedEvent = (id: string) => db().query.webhookEvents.findFirst({ where: eq(webhookEvents.id, id) });

/** An event as GET /webhook-events/{id} answers it. */
export type EventDetail = {
  id: string;
  type: string;
  product_id: string;
  url: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_response_status: number | null;
  created_at: string;
  payload: { type: string; timestamp: string; data: Record<string, unknown> } | null;
  attempt_log: Record<string, unknown>[];
};

/** Event `id` as GET /webhook-events/{id} answers it to `token`, expecting 200. */
export async function readEvent(token: string, id: string): Promise<EventDetail> {
  return expectJson<EventDetail>(await api(`/webhook-events/${id}`, { token }), 200);
}

/**
 * The events of a product as the API shows them to `token` (the store's own events only): listed by
 * GET /webhook-events?product=, newest first, each read in detail.
 */
export async function eventsOf(token: string, productId: string): Promise<EventDetail[]> {
  const list = await expectJson<{ items: { id: string }[] }>(
    await api(`/webhook-events?product=${productId}&per_page=100`, { token }),
    200,
  );
  return Promise.all(list.items.map((item) => readEvent(token, item.id)));
}

export type Received = { url: string; headers: Headers; body: string; redirect: RequestInit["redirect"] };

/** A receiver in place of fetch: records each request and answers what `answer` says for it. */
export function fakeReceiver(answer: (received: Received, index: number) => Response | Promise<Response>) {
  const received: Received[] = [];
  const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const entry = { url: request.url, headers: request.headers, body: await request.text(), redirect: init?.redirect };
    received.push(entry);
    return answer(entry, received.length - 1);
  }) as typeof fetch;
  return { received, fetch: fetcher };
}

/** Delivery dependencies over the test database with a short schedule, overridable. */
export function deliveryDeps(overrides: Partial<DeliveryDeps> = {}): DeliveryDeps {
  return {
    db: db(),
    fetch: fakeReceiver(() => new Response(null, { status: 204 })).fetch,
    schedule: [5, 300, 1800],
    timeoutMs: 1000,
    liveProduct: async () => null,
    ...overrides,
  };
}

export const hookUrl = () => `https://hooks.example.test/${crypto.randomUUID()}`;

/**
 * A committed, pending custom-field event of a fresh store, aimed at `url` (a fresh hook URL unless given),
 * with the store's secret.
 */
export async function pendingEvent(options: { url?: string; createdAt?: Date } = {}) {
  const { storeId } = await seedStore();
  const productId = uuid();
  const data = { store_id: storeId, product_id: productId, variant_id: null, list: "custom_fields", name: "nip" };
  const event = newEvent(
    { id: productId, storeId },
    "product.custom_field.deleted",
    options.url ?? hookUrl(),
    data,
    options.createdAt ?? new Date(),
  );
  await insertEvent(db(), event);
  const secret = (await storeSecretRow(db(), storeId)).secret;
  return { event, storeId, secret };
}
