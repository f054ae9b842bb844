import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { webhookEvents } from "../../src/db/schema";
import worker from "../../src/index";
import { runCron } from "../support/cron";
import { db, pendingEvent, recordingQueue, storedEvent } from "../support/events";
import { captureServiceLogs } from "../support/logs";

// The service logs what these tests provoke on purpose; captured, and checked where a test expects a line.
const logs = captureServiceLogs();

/** The Worker's own queue handler on one message for `id`, from `queue`, with `bindings`. */
async function runQueue(queue: string, id: string, bindings: Env = env) {
  const batch = createMessageBatch(queue, [{ id: "m1", timestamp: new Date(), attempts: 1, body: { id } }]);
  const ctx = createExecutionContext();
  await worker.queue(batch as MessageBatch<unknown>, bindings);
  return getQueueResult(batch, ctx);
}

describe("the Worker's queue handler (src/index.ts)", () => {
  it("delivers with the real fetch: a refused connection is a network error, retried", async () => {
    // Nothing listens on the discard port of the loopback interface, a target only local development may have.
    const { event } = await pendingEvent({ url: "http://127.0.0.1:9/hook" });
    const result = await runQueue("storefront-checkout-webhooks", event.id, {
      ...env,
      WEBHOOK_ALLOW_HTTP: "on",
    } as Env);
    expect(result.retryMessages).toEqual([{ msgId: "m1" }]);
    const stored = await storedEvent(event.id);
    expect(stored).toMatchObject({ status: "pending", attempts: 1, lastResponseStatus: null });
    expect(stored?.attemptLog[0]?.error).toMatch(/^network error: /);
  });

  it("without WEBHOOK_ALLOW_HTTP=on an event stored with a loopback target is failed and acked, never fetched", async () => {
    const { event } = await pendingEvent({ url: "http://127.0.0.1:9/hook" });
    const result = await runQueue("storefront-checkout-webhooks", event.id);
    expect(result.explicitAcks).toEqual(["m1"]);
    const stored = await storedEvent(event.id);
    expect(stored).toMatchObject({ status: "failed", attempts: 0, lastResponseStatus: null });
    expect(stored?.attemptLog[0]?.error).toMatch(/^not sent: plain http: is allowed only with WEBHOOK_ALLOW_HTTP=on/);
    logs.expectLogged("warn", { message: "webhook event: target refused, not sent", event_id: event.id });
  });

  it("messages of the dead-letter queue end their event failed", async () => {
    const { event } = await pendingEvent({ url: "https://hooks.example.test/x" });
    const result = await runQueue("storefront-checkout-webhooks-dlq", event.id);
    expect(result.explicitAcks).toEqual(["m1"]);
    expect((await storedEvent(event.id))?.status).toBe("failed");
    logs.expectLogged("warn", { message: "webhook queue: dead-lettered event marked failed", event_id: event.id });
  });

  it("a malformed WEBHOOK_RETRY_SCHEDULE holds the whole batch, the event untouched", async () => {
    const { event } = await pendingEvent({ url: "https://hooks.example.test/x" });
    const result = await runQueue("storefront-checkout-webhooks", event.id, {
      ...env,
      WEBHOOK_RETRY_SCHEDULE: "soon",
    } as Env);
    expect(result.retryBatch.retry).toBe(true);
    expect(await storedEvent(event.id)).toMatchObject({ status: "pending", attempts: 0 });
    logs.expectLogged("error", {
      message: "configuration problem",
      problem: expect.stringContaining("WEBHOOK_RETRY_SCHEDULE"),
    });
  });
});

describe("the Worker's cron handler (src/index.ts)", () => {
  it("re-enqueues an event overdue by more than the grace, making it due now", async () => {
    const { event } = await pendingEvent({ url: "https://hooks.example.test/x" });
    const overdue = new Date(Date.now() - 60 * 60_000);
    await db().update(webhookEvents).set({ nextAttemptAt: overdue }).where(eq(webhookEvents.id, event.id));
    const { sent, queue } = recordingQueue();
    await runCron({ WEBHOOK_QUEUE: queue });
    expect(sent).toContainEqual({ id: event.id });
    const stored = await storedEvent(event.id);
    expect(stored?.nextAttemptAt?.getTime()).toBeGreaterThan(overdue.getTime() + 50 * 60_000);
  });
});
