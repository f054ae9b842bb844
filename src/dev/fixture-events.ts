import type { BatchItem } from "drizzle-orm/batch";
import { upsertStatements } from "../db/batch";
import type { Database } from "../db/client";
import { type WebhookAttempt, webhookEvents } from "../db/schema";
import { eventBody, fillEventBody } from "../events/records";
import { liveProductOrNull } from "../products/queries";
import type { FixtureWebhookEvent } from "./fixture-schema";

type EventRow = typeof webhookEvents.$inferSelect;

function createdAt(event: FixtureWebhookEvent, now: Date): Date {
  if (event.created_at !== undefined) return new Date(event.created_at);
  return new Date(now.getTime() - (event.age_seconds ?? 0) * 1000);
}

/**
 * The stored row of a fixture event, as the delivery would have left it after its last attempt: every line
 * counted as an attempt, each one that did not end the event a retry used, no claim held.
 */
function fixtureEventRow(event: FixtureWebhookEvent, now: Date): EventRow {
  const created = createdAt(event, now);
  const attemptLog: WebhookAttempt[] = event.attempt_log.map((attempt) => ({
    at: new Date(created.getTime() + attempt.after_seconds * 1000).toISOString(),
    response_status: attempt.response_status,
    error: attempt.error,
    duration_ms: attempt.duration_ms,
  }));
  const last = attemptLog.at(-1);
  const pending = event.status === "pending";
  const next = event.next_attempt_after_seconds;
  return {
    id: event.id,
    storeId: event.store_id,
    productId: event.product_id,
    type: event.type,
    url: event.url,
    // The bytes every attempt sent, made as the change makes them (records.ts); a publish's comes after the load.
    body: event.data === undefined ? null : eventBody(event.type, created, event.data),
    status: event.status,
    attempts: attemptLog.length,
    retriesUsed: pending ? attemptLog.length : Math.max(0, attemptLog.length - 1),
    finalAttempt: false,
    nextAttemptAt: pending && next !== undefined ? new Date(created.getTime() + next * 1000) : null,
    lastAttemptAt: last ? new Date(last.at) : null,
    lastResponseStatus: last?.response_status ?? null,
    attemptLog,
    leaseUntil: null,
    createdAt: created,
  };
}

/** Writes (or rewrites, on a second load) a store's fixture events; a rewritten body is filled in again. */
export function eventStatements(
  db: Database,
  events: readonly FixtureWebhookEvent[],
  now: Date,
): BatchItem<"sqlite">[] {
  return upsertStatements(
    db,
    webhookEvents,
    webhookEvents.id,
    events.map((event) => fixtureEventRow(event, now)),
  );
}

/**
 * The body of each loaded `product.published` event the document gave no `data`: `{store_id, product}` with
 * the live product as loaded, the way a delivery builds the body of a publish whose request ended before
 * writing its answer (delivery.ts). Runs after the document's batches, which wrote those events without one.
 */
export async function fillPublishedBodies(
  dbOf: (storeId: string) => Database,
  events: readonly FixtureWebhookEvent[],
  now: Date,
): Promise<void> {
  const pending = events.filter((event) => event.data === undefined);
  await Promise.all(
    pending.map(async (event) => {
      const db = dbOf(event.store_id);
      const product = await liveProductOrNull(db, event.store_id, event.product_id);
      const body = eventBody(event.type, createdAt(event, now), { store_id: event.store_id, product });
      await fillEventBody(db, event.id, body);
    }),
  );
}
