import { and, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { type WebhookAttempt, webhookEvents, webhookSecrets } from "../db/schema";
import { log } from "../lib/log";
import { type DeliveryMessage, eventBody, fillEventBody } from "./records";
import { signingSecrets, storeSecretRow } from "./secrets";
import { signatureHeader } from "./signing";

/** Queues delay a message by at most 12 hours; a longer wait is taken in several hops. */
export const maxQueueDelaySeconds = 12 * 60 * 60;
/** A Retry-After beyond a day is read as a day. */
const maxRetryAfterSeconds = 24 * 60 * 60;
/**
 * What an attempt's claim adds to `WEBHOOK_TIMEOUT_MS`: the database calls around the POST (reading the
 * secret, a publish's body, the record after it), which take milliseconds. Short, because the claim is how
 * long an event waits when its consumer dies mid-attempt (the message comes back and waits for the claim to
 * end). An attempt that still overruns its claim is harmless: another consumer may post the event again
 * (at least once), and the record is fenced by the claim, so the overrun attempt cannot overwrite the newer
 * one's outcome.
 */
const claimSlackMs = 5_000;

/** How long one attempt holds its event: the POST's timeout and {@link claimSlackMs}. */
export function attemptClaimMs(timeoutMs: number): number {
  return timeoutMs + claimSlackMs;
}
/** A message that could not be processed (D1 unavailable, configuration faulty) comes back after this. */
export const processingRetrySeconds = 60;

/** What a delivery needs: the database, a fetch, the retry schedule and timeout, a clock. */
export type DeliveryDeps = {
  db: Database;
  fetch: typeof fetch;
  schedule: readonly number[];
  timeoutMs: number;
  now?: () => Date;
  /**
   * The live product resource for a publish event whose body was never written (its request ended between
   * the batch and the answer); null when it is no longer readable.
   */
  liveProduct: (storeId: string, productId: string) => Promise<unknown>;
  /**
   * Why the event's stored URL may not be fetched (targets.ts), or null: asked before every attempt, so an
   * event made under an older rule, or while a development setting was on, is never sent where it may not go.
   */
  targetRefusal: (url: string) => string | null;
};

/**
 * What became of one message: settled (ack it), or to be seen again after `delaySeconds`. `superseded`: the
 * attempt overran its claim and another consumer took the event over, whose message carries it on.
 */
export type Outcome =
  | { kind: "delivered" | "failed" | "gone" | "superseded" }
  | { kind: "retry"; delaySeconds: number }
  | { kind: "wait"; delaySeconds: number };

type EventRow = typeof webhookEvents.$inferSelect;
type Answer = { status: number | null; retryAfterSeconds: number | null; error: string | null; durationMs: number };

/**
 * Makes the due attempt of event `id`, if it is still pending and due and no other consumer is making one,
 * records it, and answers when the message should come back. `webhook-id` is the event id on every attempt.
 */
export async function deliverEvent(deps: DeliveryDeps, id: string): Promise<Outcome> {
  const now = deps.now?.() ?? new Date();
  // The event and its store's secret in one round trip.
  const [events, secretRows] = await deps.db.batch([
    deps.db.select().from(webhookEvents).where(eq(webhookEvents.id, id)).limit(1),
    deps.db
      .select()
      .from(webhookSecrets)
      .where(
        inArray(
          webhookSecrets.storeId,
          deps.db.select({ storeId: webhookEvents.storeId }).from(webhookEvents).where(eq(webhookEvents.id, id)),
        ),
      ),
  ]);
  const [event] = events;
  if (event?.status !== "pending") return { kind: "gone" };
  const dueInMs = (event.nextAttemptAt?.getTime() ?? 0) - now.getTime();
  // A retry later than a queue's longest delay arrives early: it waits again for the rest.
  if (dueInMs > 1000) return { kind: "wait", delaySeconds: Math.ceil(dueInMs / 1000) };

  // The claim's end is also its token: a later claim of the event can only be made after it, so it ends later.
  const claim = new Date(now.getTime() + attemptClaimMs(deps.timeoutMs));
  const claimed = await deps.db
    .update(webhookEvents)
    .set({ leaseUntil: claim })
    .where(
      and(
        eq(webhookEvents.id, id),
        eq(webhookEvents.status, "pending"),
        or(isNull(webhookEvents.leaseUntil), lt(webhookEvents.leaseUntil, now)),
      ),
    );
  if (claimed.meta.changes === 0) {
    // Another consumer is making this attempt; come back when its lease ends, in case it died.
    const leaseMs = (event.leaseUntil?.getTime() ?? now.getTime()) - now.getTime();
    return { kind: "wait", delaySeconds: Math.max(1, Math.ceil(leaseMs / 1000)) };
  }

  const refused = deps.targetRefusal(event.url);
  if (refused !== null) return refuseTarget(deps, event, claim, now, refused);

  const body = event.body ?? (await rebuildBody(deps, event));
  const secrets = signingSecrets(secretRows[0] ?? (await storeSecretRow(deps.db, event.storeId, now)), now);
  const timestamp = Math.floor(now.getTime() / 1000);
  const answer = await post(
    deps,
    event.url,
    {
      "content-type": "application/json",
      "user-agent": "storefront-checkout-webhooks",
      "webhook-id": event.id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": await signatureHeader(secrets, event.id, timestamp, body),
    },
    body,
  );
  return record(deps, event, claim, now, answer);
}

/**
 * Ends an event whose URL may not be fetched: `failed` without a request (a redelivery is refused too), one
 * attempt-log line saying why. Written only while `claim` is still the event's, like an attempt's record.
 */
async function refuseTarget(
  deps: DeliveryDeps,
  event: EventRow,
  claim: Date,
  at: Date,
  reason: string,
): Promise<Outcome> {
  const entry: WebhookAttempt = {
    at: at.toISOString(),
    response_status: null,
    error: `not sent: ${reason}`,
    duration_ms: 0,
  };
  await deps.db
    .update(webhookEvents)
    .set({
      status: "failed",
      finalAttempt: false,
      nextAttemptAt: null,
      leaseUntil: null,
      attemptLog: sql`json_insert(${webhookEvents.attemptLog}, '$[#]', json(${JSON.stringify(entry)}))`,
    })
    .where(and(eq(webhookEvents.id, event.id), eq(webhookEvents.leaseUntil, claim)));
  log.warn("webhook event: target refused, not sent", { event_id: event.id, reason });
  return { kind: "failed" };
}

/**
 * The body of a publish event whose request ended before it wrote the answer in: the live product as it
 * is now (private file links unsigned: a delivery has no request origin to sign them for). Written once,
 * so every later attempt sends the same bytes.
 */
async function rebuildBody(deps: DeliveryDeps, event: EventRow): Promise<string> {
  // Archived or gone since (null): the event still reports the publish that happened.
  const product = await deps.liveProduct(event.storeId, event.productId);
  const body = eventBody(event.type, event.createdAt, { store_id: event.storeId, product });
  await fillEventBody(deps.db, event.id, body);
  // Another consumer may have written it first; every attempt must send the same bytes.
  const stored = await deps.db.query.webhookEvents.findFirst({ where: eq(webhookEvents.id, event.id) });
  return stored?.body ?? body;
}

/** One POST: redirects are not followed, the timeout covers the answer's status line and headers. */
async function post(deps: DeliveryDeps, url: string, headers: Record<string, string>, body: string): Promise<Answer> {
  const started = Date.now();
  try {
    const response = await deps.fetch(url, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(deps.timeoutMs),
    });
    // Only the status matters; the receiver's body is neither read nor kept.
    await response.body?.cancel().catch(() => {});
    return {
      status: response.status,
      retryAfterSeconds: retryAfter(response.headers.get("retry-after"), Date.now()),
      error: null,
      durationMs: Date.now() - started,
    };
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
    return {
      status: null,
      retryAfterSeconds: null,
      error: timedOut
        ? `timed out after ${deps.timeoutMs} ms`
        : `network error: ${error instanceof Error ? error.message : String(error)}`,
      durationMs: Date.now() - started,
    };
  }
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date), null when absent or unreadable. */
export function retryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  let seconds: number;
  if (/^\d+$/.test(text)) seconds = Number(text);
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return null;
    seconds = Math.ceil((at - nowMs) / 1000);
  }
  return Math.min(maxRetryAfterSeconds, Math.max(0, seconds));
}

/** The next step after an answer: delivered on 2xx, failed on 410 or when no retry is left, else a retry. */
function nextStep(
  event: Pick<EventRow, "retriesUsed" | "finalAttempt">,
  answer: Pick<Answer, "status" | "retryAfterSeconds">,
  schedule: readonly number[],
): { status: "delivered" | "failed" } | { status: "pending"; delaySeconds: number } {
  const status = answer.status;
  if (status !== null && status >= 200 && status < 300) return { status: "delivered" };
  if (status === 410 || event.finalAttempt || event.retriesUsed >= schedule.length) return { status: "failed" };
  let delaySeconds = schedule[event.retriesUsed] ?? 0;
  if ((status === 429 || status === 503) && answer.retryAfterSeconds !== null) {
    delaySeconds = Math.max(delaySeconds, answer.retryAfterSeconds);
  }
  return { status: "pending", delaySeconds };
}

/**
 * Records the attempt made under `claim`: its log line, and the event's next step. Only while the claim is
 * still the event's: an attempt that overran it (another consumer claimed the event since) adds its log line
 * and nothing else, so it cannot overwrite the newer attempt's outcome or free its claim.
 */
async function record(deps: DeliveryDeps, event: EventRow, claim: Date, at: Date, answer: Answer): Promise<Outcome> {
  const step = nextStep(event, answer, deps.schedule);
  const entry: WebhookAttempt = {
    at: at.toISOString(),
    response_status: answer.status,
    error: answer.error,
    duration_ms: answer.durationMs,
  };
  const logLine = sql`json_insert(${webhookEvents.attemptLog}, '$[#]', json(${JSON.stringify(entry)}))`;
  const retrying = step.status === "pending";
  const recorded = await deps.db
    .update(webhookEvents)
    .set({
      status: step.status,
      attempts: sql`${webhookEvents.attempts} + 1`,
      retriesUsed: retrying ? event.retriesUsed + 1 : event.retriesUsed,
      finalAttempt: false,
      nextAttemptAt: retrying ? new Date(at.getTime() + step.delaySeconds * 1000) : null,
      lastAttemptAt: at,
      lastResponseStatus: answer.status,
      attemptLog: logLine,
      leaseUntil: null,
    })
    .where(and(eq(webhookEvents.id, event.id), eq(webhookEvents.leaseUntil, claim)));
  if (recorded.meta.changes === 0) {
    // The POST was made: it stays in the attempt log, as every attempt does.
    await deps.db
      .update(webhookEvents)
      .set({ attempts: sql`${webhookEvents.attempts} + 1`, attemptLog: logLine })
      .where(eq(webhookEvents.id, event.id));
    log.warn("webhook delivery: an attempt outlived its claim", {
      event_id: event.id,
      response_status: answer.status,
      error: answer.error,
      duration_ms: answer.durationMs,
    });
    return { kind: "superseded" };
  }
  if (retrying) return { kind: "retry", delaySeconds: step.delaySeconds };
  return { kind: step.status };
}

function isDeliveryMessage(body: unknown): body is DeliveryMessage {
  return typeof body === "object" && body !== null && typeof (body as DeliveryMessage).id === "string";
}

/**
 * The consumer: every message of the batch at once; settled events are acked, retries and early arrivals
 * come back through the queue's own delay. A message whose processing throws comes back after a minute
 * (after the consumer's `max_retries` it goes to the dead-letter queue).
 */
export async function handleDeliveryBatch(batch: MessageBatch<unknown>, deps: DeliveryDeps): Promise<void> {
  await Promise.all(
    batch.messages.map(async (message) => {
      if (!isDeliveryMessage(message.body)) {
        log.warn("webhook queue: malformed message dropped", { message_id: message.id });
        message.ack();
        return;
      }
      try {
        const outcome = await deliverEvent(deps, message.body.id);
        if (outcome.kind === "retry" || outcome.kind === "wait") {
          message.retry({ delaySeconds: Math.min(maxQueueDelaySeconds, outcome.delaySeconds) });
        } else {
          message.ack();
        }
      } catch (error) {
        log.warn("webhook queue: delivery could not be processed", {
          event_id: message.body.id,
          error: error instanceof Error ? error.message : String(error),
        });
        message.retry({ delaySeconds: processingRetrySeconds });
      }
    }),
  );
}

/**
 * The dead-letter consumer: a message that could not be processed after every retry marks its event
 * `failed` (listed, and redeliverable), with the reason in its attempt log.
 */
export async function handleDeadLetters(batch: MessageBatch<unknown>, db: Database, now = new Date()) {
  for (const message of batch.messages) {
    if (isDeliveryMessage(message.body)) {
      const entry: WebhookAttempt = {
        at: now.toISOString(),
        response_status: null,
        error: "gave up: the delivery could not be processed",
        duration_ms: 0,
      };
      await db
        .update(webhookEvents)
        .set({
          status: "failed",
          nextAttemptAt: null,
          leaseUntil: null,
          attemptLog: sql`json_insert(${webhookEvents.attemptLog}, '$[#]', json(${JSON.stringify(entry)}))`,
        })
        .where(and(eq(webhookEvents.id, message.body.id), eq(webhookEvents.status, "pending")));
      log.warn("webhook queue: dead-lettered event marked failed", { event_id: message.body.id });
    }
    message.ack();
  }
}
