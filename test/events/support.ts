import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { createApp } from "../../src/app";
import { createDb } from "../../src/db/client";
import { webhookEvents } from "../../src/db/schema";
import type { DeliveryDeps } from "../../src/events/delivery";
import type { DeliveryMessage } from "../../src/events/records";
import { origin } from "../support/http";

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

const app = createApp();

type Call = { method?: string; token?: string; store?: string; body?: unknown };

/**
 * Calls the API with the test bindings but `queue` as the webhook queue (and `vars` over the variables), and
 * waits for what the request left running after its answer (the enqueue).
 */
export async function callApi(
  path: string,
  call: Call,
  queue: Queue<DeliveryMessage>,
  vars: Record<string, string> = {},
): Promise<Response> {
  const headers = new Headers();
  if (call.token) headers.set("Authorization", `Bearer ${call.token}`);
  if (call.store) headers.set("X-Service-Store", call.store);
  if (call.body !== undefined) headers.set("Content-Type", "application/json");
  const ctx = createExecutionContext();
  const response = await app.fetch(
    new Request(`${origin}/api/v1${path}`, {
      method: call.method ?? "GET",
      headers,
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
    }),
    { ...env, WEBHOOK_QUEUE: queue, ...vars } as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response;
}

/** The stored event row, or undefined. */
export const storedEvent = (id: string) => db().query.webhookEvents.findFirst({ where: eq(webhookEvents.id, id) });

/** Every stored event of a product. */
export const eventsOf = (productId: string) =>
  db().select().from(webhookEvents).where(eq(webhookEvents.productId, productId));

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
