import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { describe, expect, it, vi } from "vitest";
import { webhookEvents } from "../../src/db/schema";
import {
  attemptClaimMs,
  type DeliveryDeps,
  deliverEvent,
  handleDeadLetters,
  handleDeliveryBatch,
  maxQueueDelaySeconds,
  processingRetrySeconds,
} from "../../src/events/delivery";
import { insertEvent, newEvent } from "../../src/events/records";
import { rotateStoreSecret } from "../../src/events/secrets";
import { sweepEvents, sweepGraceMs } from "../../src/events/sweep";
import { db, deliveryDeps, fakeReceiver, hookUrl, pendingEvent, recordingQueue, storedEvent } from "../support/events";
import { seedStore, uuid } from "../support/factories";
import { captureServiceLogs } from "../support/logs";
import { poll } from "../support/poll";

// The service logs what these tests provoke on purpose; captured, and checked where a test expects a line.
const logs = captureServiceLogs();

/** A promise the test settles by hand. */
function deferred<T>() {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

let messageCounter = 0;
/** Runs the consumer on one batch of messages for `ids` and answers the queue's ack / retry result. */
async function consume(ids: string[], deps: DeliveryDeps, attempts = 1) {
  const batch = createMessageBatch("storefront-checkout-webhooks", [
    ...ids.map((id) => ({ id: `msg-${messageCounter++}`, timestamp: new Date(), attempts, body: { id } })),
  ]);
  // getQueueResult records which messages were retried but not their delay; the spies keep it.
  const retries = batch.messages.map((message) => vi.spyOn(message, "retry"));
  const ctx = createExecutionContext();
  await handleDeliveryBatch(batch, deps);
  const result = await getQueueResult(batch, ctx);
  const delays = new Map(
    batch.messages.map((message, index) => [message.id, retries[index]?.mock.calls[0]?.[0]?.delaySeconds]),
  );
  return {
    ...result,
    retryMessages: result.retryMessages.map((entry) => ({ ...entry, delaySeconds: delays.get(entry.msgId) })),
  };
}

const verify = (secret: string, received: { headers: Headers; body: string }) =>
  new Webhook(secret).verify(received.body, Object.fromEntries(received.headers));

describe("the queue consumer: what the receiver's answer does", () => {
  it("a 2xx answer acks the message and marks the event delivered; the request verifies with standardwebhooks", async () => {
    const { event, secret } = await pendingEvent();
    const receiver = fakeReceiver(() => new Response("ok"));
    const result = await consume([event.id], deliveryDeps({ fetch: receiver.fetch }));
    expect(result.explicitAcks).toHaveLength(1);
    expect(result.retryMessages).toEqual([]);
    const [received] = receiver.received;
    expect(received?.url).toBe(event.url);
    expect(received?.headers.get("webhook-id")).toBe(event.id);
    expect(received?.headers.get("content-type")).toBe("application/json");
    expect(received?.body).toBe(event.body);
    expect(verify(secret, received as NonNullable<typeof received>)).toEqual(JSON.parse(event.body ?? ""));
    expect(received?.redirect).toBe("manual");
    const stored = await storedEvent(event.id);
    expect(stored).toMatchObject({ status: "delivered", attempts: 1, lastResponseStatus: 200, nextAttemptAt: null });
    expect(stored?.attemptLog).toEqual([
      { at: expect.any(String), response_status: 200, error: null, duration_ms: expect.any(Number) },
    ]);
  });

  it("a 500 is retried after the schedule's first delay, with the message's own queue delay", async () => {
    const { event } = await pendingEvent();
    const now = new Date();
    const receiver = fakeReceiver(() => new Response("boom", { status: 500 }));
    const result = await consume(
      [event.id],
      deliveryDeps({ fetch: receiver.fetch, schedule: [7, 300], now: () => now }),
    );
    expect(result.retryMessages).toEqual([{ msgId: expect.any(String), delaySeconds: 7 }]);
    const stored = await storedEvent(event.id);
    expect(stored).toMatchObject({ status: "pending", attempts: 1, lastResponseStatus: 500, retriesUsed: 1 });
    expect(stored?.nextAttemptAt?.getTime()).toBe(now.getTime() + 7000);
  });

  it("a 3xx is a failed attempt: redirects are not followed", async () => {
    const { event } = await pendingEvent();
    const receiver = fakeReceiver(
      () => new Response(null, { status: 302, headers: { Location: "https://elsewhere.test/" } }),
    );
    const result = await consume([event.id], deliveryDeps({ fetch: receiver.fetch }));
    expect(receiver.received).toHaveLength(1);
    expect(result.retryMessages).toHaveLength(1);
    expect((await storedEvent(event.id))?.lastResponseStatus).toBe(302);
  });

  it("Retry-After on a 429 or 503 pushes the next attempt later than the schedule, never earlier", async () => {
    for (const [status, header, expected] of [
      [429, "120", 120],
      [503, "1", 5],
      [500, "120", 5],
    ] as const) {
      const { event } = await pendingEvent();
      const receiver = fakeReceiver(() => new Response(null, { status, headers: { "Retry-After": header } }));
      const result = await consume([event.id], deliveryDeps({ fetch: receiver.fetch, schedule: [5] }));
      expect(
        result.retryMessages.map((m) => m.delaySeconds),
        `${status} ${header}`,
      ).toEqual([expected]);
    }
  });

  it("a 410 ends the attempts at once: failed, acked, no next attempt", async () => {
    const { event } = await pendingEvent();
    const receiver = fakeReceiver(() => new Response(null, { status: 410 }));
    const result = await consume([event.id], deliveryDeps({ fetch: receiver.fetch, schedule: [5, 5, 5] }));
    expect(result.explicitAcks).toHaveLength(1);
    expect(await storedEvent(event.id)).toMatchObject({ status: "failed", attempts: 1, nextAttemptAt: null });
  });
});

describe("the queue consumer: the last retry, timeouts and messages out of turn", () => {
  it("after the schedule's last retry the event is failed and stays listed with every attempt", async () => {
    const { event } = await pendingEvent();
    let clock = Date.now();
    const receiver = fakeReceiver(() => new Response(null, { status: 500 }));
    const deps = deliveryDeps({ fetch: receiver.fetch, schedule: [1, 2], now: () => new Date(clock) });
    for (let attempt = 1; attempt <= 3; attempt++) {
      await consume([event.id], deps, attempt);
      clock += 3000;
    }
    const stored = await storedEvent(event.id);
    expect(stored).toMatchObject({ status: "failed", attempts: 3, nextAttemptAt: null });
    expect(stored?.attemptLog).toHaveLength(3);
    expect(new Set(receiver.received.map((r) => r.headers.get("webhook-id")))).toEqual(new Set([event.id]));
  });

  it("a receiver slower than WEBHOOK_TIMEOUT_MS is a timed-out attempt without a status, retried", async () => {
    const { event } = await pendingEvent();
    const slow = (async (_input: RequestInfo | URL, init?: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason));
      })) as typeof fetch;
    const result = await consume([event.id], deliveryDeps({ fetch: slow, timeoutMs: 50 }));
    expect(result.retryMessages).toHaveLength(1);
    const stored = await storedEvent(event.id);
    expect(stored?.lastResponseStatus).toBeNull();
    expect(stored?.attemptLog[0]).toMatchObject({ response_status: null, error: "timed out after 50 ms" });
  });

  it("a message that arrives before its event is due waits again for the rest, at most 12 hours per hop, without a request", async () => {
    const { event } = await pendingEvent();
    await db()
      .update(webhookEvents)
      .set({ nextAttemptAt: new Date(Date.now() + 20 * 3600_000) })
      .where(eq(webhookEvents.id, event.id));
    const receiver = fakeReceiver(() => new Response("ok"));
    const result = await consume([event.id], deliveryDeps({ fetch: receiver.fetch }));
    expect(receiver.received).toEqual([]);
    expect(result.retryMessages.map((m) => m.delaySeconds)).toEqual([maxQueueDelaySeconds]);
  });

  it("a delivered event's message is acked without a request (at-least-once duplicates are dropped)", async () => {
    const { event } = await pendingEvent();
    const receiver = fakeReceiver(() => new Response("ok"));
    await consume([event.id], deliveryDeps({ fetch: receiver.fetch }));
    const again = await consume([event.id], deliveryDeps({ fetch: receiver.fetch }));
    expect(again.explicitAcks).toHaveLength(1);
    expect(receiver.received).toHaveLength(1);
  });

  it("a malformed message is acked and dropped", async () => {
    const batch = createMessageBatch("storefront-checkout-webhooks", [
      { id: "m1", timestamp: new Date(), attempts: 1, body: "not an object" },
    ]);
    const ctx = createExecutionContext();
    await handleDeliveryBatch(batch, deliveryDeps());
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["m1"]);
    logs.expectLogged("warn", { message: "webhook queue: malformed message dropped", message_id: "m1" });
  });
});

describe("the queue consumer: signatures during a secret rotation", () => {
  it("during a rotation's overlap every request carries both signatures, each verifying with its own secret", async () => {
    const { event, storeId, secret: oldSecret } = await pendingEvent();
    const newSecret = await rotateStoreSecret(db(), storeId, 3600);
    const receiver = fakeReceiver(() => new Response("ok"));
    await consume([event.id], deliveryDeps({ fetch: receiver.fetch }));
    const [received] = receiver.received;
    const request = received as NonNullable<typeof received>;
    expect(request.headers.get("webhook-signature")?.split(" ")).toHaveLength(2);
    expect(() => verify(newSecret, request)).not.toThrow();
    expect(() => verify(oldSecret, request)).not.toThrow();
  });

  it("after the overlap only the new secret signs", async () => {
    const { event, storeId, secret: oldSecret } = await pendingEvent();
    const newSecret = await rotateStoreSecret(db(), storeId, 0);
    const receiver = fakeReceiver(() => new Response("ok"));
    await consume([event.id], deliveryDeps({ fetch: receiver.fetch }));
    const request = receiver.received[0] as NonNullable<(typeof receiver.received)[0]>;
    expect(request.headers.get("webhook-signature")?.split(" ")).toHaveLength(1);
    expect(() => verify(newSecret, request)).not.toThrow();
    expect(() => verify(oldSecret, request)).toThrow();
  });
});

describe("faults: a consumer that dies or is cut off", () => {
  it("a consumer that dies after the POST, before recording it, delivers once more later with the same webhook-id", async () => {
    const { event, secret } = await pendingEvent();
    const receiver = fakeReceiver(() => new Response("ok"));
    let clock = Date.now();
    const base = deliveryDeps({ fetch: receiver.fetch, now: () => new Date(clock) });
    // The isolate dies between the request and the write of its result: every write after the POST fails.
    let dying = true;
    const flaky = new Proxy(base.db, {
      get(target, key, proxy) {
        const value = Reflect.get(target, key, proxy);
        if (key !== "update" || typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (dying && receiver.received.length > 0) throw new Error("isolate died");
          return value.apply(target, args);
        };
      },
    });
    const first = await consume([event.id], { ...base, db: flaky });
    expect(first.retryMessages).toEqual([{ msgId: expect.any(String), delaySeconds: processingRetrySeconds }]);
    expect(receiver.received).toHaveLength(1);
    expect((await storedEvent(event.id))?.status).toBe("pending");

    // The queue brings the message back after the dead attempt's lease ran out.
    dying = false;
    clock += base.timeoutMs + 31_000;
    const second = await consume([event.id], base, 2);
    expect(second.explicitAcks).toHaveLength(1);
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received.map((r) => r.headers.get("webhook-id"))).toEqual([event.id, event.id]);
    for (const request of receiver.received) expect(() => verify(secret, request)).not.toThrow();
    expect((await storedEvent(event.id))?.status).toBe("delivered");
    logs.expectLogged("warn", { message: "webhook queue: delivery could not be processed", event_id: event.id });
  });

  it("a consumer cut between its POST and its record: the event is tried again once its claim ends, WEBHOOK_TIMEOUT_MS plus a few seconds", async () => {
    expect(attemptClaimMs(15_000)).toBeLessThan(30_000);
    const { event } = await pendingEvent();
    const receiver = fakeReceiver(() => new Response("ok"));
    let clock = Date.now();
    const base = deliveryDeps({ fetch: receiver.fetch, now: () => new Date(clock) });
    // The runtime dies right after the POST: the attempt is never recorded, and its message comes back.
    const cut = new Proxy(base.db, {
      get(target, key, proxy) {
        const value = Reflect.get(target, key, proxy);
        if (key !== "update" || typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (receiver.received.length > 0) throw new Error("the runtime died");
          return value.apply(target, args);
        };
      },
    });
    await consume([event.id], { ...base, db: cut });
    expect(receiver.received).toHaveLength(1);

    // The message comes back while the claim holds: it waits exactly for the rest of the claim.
    clock += 1000;
    const early = await consume([event.id], base, 2);
    expect(early.retryMessages.map((m) => m.delaySeconds)).toEqual([
      Math.ceil((attemptClaimMs(base.timeoutMs) - 1000) / 1000),
    ]);
    expect(receiver.received).toHaveLength(1);

    clock += attemptClaimMs(base.timeoutMs) - 1000 + 1;
    expect(attemptClaimMs(base.timeoutMs)).toBeLessThanOrEqual(base.timeoutMs + 10_000);
    const again = await consume([event.id], base, 3);
    expect(again.explicitAcks).toHaveLength(1);
    expect(receiver.received.map((r) => r.headers.get("webhook-id"))).toEqual([event.id, event.id]);
    expect((await storedEvent(event.id))?.status).toBe("delivered");
  });
});

describe("faults: attempts that overlap", () => {
  it("an attempt that outlived its claim cannot overwrite the attempt that took over: its POST is logged, its outcome is not", async () => {
    const { event } = await pendingEvent();
    const start = Date.now();
    const slowAnswer = deferred<Response>();
    const slow = fakeReceiver(() => slowAnswer.promise);
    const stale = deliverEvent(deliveryDeps({ fetch: slow.fetch, now: () => new Date(start) }), event.id);
    await poll(
      () => slow.received.length,
      (count) => count === 1,
      { what: "the slow attempt's POST" },
    );

    // Long past the slow attempt's claim, another consumer takes the event and delivers it.
    const later = start + 60_000;
    const fast = fakeReceiver(() => new Response("ok"));
    expect(await deliverEvent(deliveryDeps({ fetch: fast.fetch, now: () => new Date(later) }), event.id)).toEqual({
      kind: "delivered",
    });

    // The slow attempt wakes up with a 500: the event stays delivered, with both POSTs in its log.
    slowAnswer.resolve(new Response(null, { status: 500 }));
    expect(await stale).toEqual({ kind: "superseded" });
    const stored = await storedEvent(event.id);
    expect(stored).toMatchObject({
      status: "delivered",
      nextAttemptAt: null,
      leaseUntil: null,
      retriesUsed: 0,
      lastResponseStatus: 200,
      attempts: 2,
    });
    expect(stored?.attemptLog.map((entry) => entry.response_status).sort()).toEqual([200, 500]);
    logs.expectLogged("warn", { message: "webhook delivery: an attempt outlived its claim", event_id: event.id });
  });

  it("while one consumer holds an attempt, another message for the event waits instead of posting twice", async () => {
    const { event } = await pendingEvent();
    const now = Date.now();
    await db()
      .update(webhookEvents)
      .set({ leaseUntil: new Date(now + 20_000) })
      .where(eq(webhookEvents.id, event.id));
    const receiver = fakeReceiver(() => new Response("ok"));
    const outcome = await deliverEvent(deliveryDeps({ fetch: receiver.fetch, now: () => new Date(now) }), event.id);
    expect(outcome).toEqual({ kind: "wait", delaySeconds: 20 });
    expect(receiver.received).toEqual([]);
  });
});

describe("faults: the sweep re-enqueues what was lost", () => {
  it("an event whose enqueue failed is re-enqueued by the sweep once overdue, then delivered", async () => {
    const { event } = await pendingEvent();
    const { sent, queue } = recordingQueue();
    const early = await sweepEvents({ db: db(), queue, retentionDays: 30 });
    expect(sent.filter((m) => m.id === event.id)).toEqual([]);
    expect(early.requeued).toBeGreaterThanOrEqual(0);

    const later = new Date(Date.now() + 11 * 60_000);
    await sweepEvents({ db: db(), queue, retentionDays: 30, now: () => later });
    expect(sent.filter((m) => m.id === event.id)).toEqual([{ id: event.id }]);
    // Re-enqueued once: the next sweep leaves it to the message it just sent.
    await sweepEvents({ db: db(), queue, retentionDays: 30, now: () => later });
    expect(sent.filter((m) => m.id === event.id)).toHaveLength(1);

    const receiver = fakeReceiver(() => new Response("ok"));
    await consume([event.id], deliveryDeps({ fetch: receiver.fetch, now: () => later }));
    expect((await storedEvent(event.id))?.status).toBe("delivered");
  });

  it("an event whose enqueue was lost is re-enqueued by a sweep 45 seconds after it was due, not before the grace", async () => {
    expect(sweepGraceMs).toBeLessThanOrEqual(45_000);
    const { event } = await pendingEvent();
    const due = event.createdAt.getTime();
    const { sent, queue } = recordingQueue();
    await sweepEvents({ db: db(), queue, retentionDays: 30, now: () => new Date(due + sweepGraceMs - 1000) });
    expect(sent.filter((m) => m.id === event.id)).toEqual([]);
    await sweepEvents({ db: db(), queue, retentionDays: 30, now: () => new Date(due + 45_000) });
    expect(sent.filter((m) => m.id === event.id)).toEqual([{ id: event.id }]);
  });

  it("an attempt whose consumer died (claim expired, message lost) is re-enqueued by the next sweep; a held claim is left alone", async () => {
    const { event: dead } = await pendingEvent();
    const { event: held } = await pendingEvent();
    const due = dead.createdAt.getTime();
    await db()
      .update(webhookEvents)
      .set({ leaseUntil: new Date(due + attemptClaimMs(1000)) })
      .where(eq(webhookEvents.id, dead.id));
    await db()
      .update(webhookEvents)
      .set({ leaseUntil: new Date(due + 10 * 60_000) })
      .where(eq(webhookEvents.id, held.id));
    const { sent, queue } = recordingQueue();
    await sweepEvents({ db: db(), queue, retentionDays: 30, now: () => new Date(due + 45_000) });
    expect(sent.filter((m) => m.id === dead.id)).toEqual([{ id: dead.id }]);
    expect(sent.filter((m) => m.id === held.id)).toEqual([]);
  });

  it("the sweep drops events older than WEBHOOK_RETENTION_DAYS", async () => {
    const { event: old } = await pendingEvent({ createdAt: new Date(Date.now() - 3 * 86_400_000) });
    const { event: recent } = await pendingEvent();
    await sweepEvents({ db: db(), queue: recordingQueue().queue, retentionDays: 2 });
    expect(await storedEvent(old.id)).toBeUndefined();
    expect(await storedEvent(recent.id)).toBeDefined();
  });
});

describe("faults: dead letters and a publish body never written", () => {
  it("a dead-lettered message marks its event failed with the reason in the attempt log", async () => {
    const { event } = await pendingEvent();
    const batch = createMessageBatch("storefront-checkout-webhooks-dlq", [
      { id: "d1", timestamp: new Date(), attempts: 1, body: { id: event.id } },
    ]);
    const ctx = createExecutionContext();
    await handleDeadLetters(batch, db());
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["d1"]);
    const stored = await storedEvent(event.id);
    expect(stored?.status).toBe("failed");
    expect(stored?.attemptLog.at(-1)?.error).toMatch(/gave up/);
    logs.expectLogged("warn", { message: "webhook queue: dead-lettered event marked failed", event_id: event.id });
  });

  it("a publish event whose body was never written is sent with the live product, and the same bytes every attempt", async () => {
    const { storeId } = await seedStore();
    const productId = uuid();
    const event = newEvent({ id: productId, storeId }, "product.published", hookUrl(), null);
    await insertEvent(db(), event);
    const receiver = fakeReceiver(() => new Response(null, { status: 500 }));
    let clock = Date.now();
    const deps = deliveryDeps({
      fetch: receiver.fetch,
      now: () => new Date(clock),
      liveProduct: async (store, product) => ({ id: product, store, read_at: clock }),
    });
    await consume([event.id], deps);
    clock += 10_000;
    await consume([event.id], deps, 2);
    const bodies = receiver.received.map((r) => r.body);
    expect(bodies).toHaveLength(2);
    expect(bodies[1]).toBe(bodies[0]);
    expect(JSON.parse(bodies[0] ?? "").data).toMatchObject({ store_id: storeId, product: { id: productId } });
  });
});
