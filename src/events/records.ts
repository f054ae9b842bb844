import { and, eq, getTableColumns, isNull, sql } from "drizzle-orm";
import { setting } from "../config";
import type { Database } from "../db/client";
import { webhookEvents, webhookEventTypes } from "../db/schema";
import { targetRefusal } from "./targets";

export const eventTypes = webhookEventTypes;
type EventType = (typeof eventTypes)[number];

/** An event about to be written with the change it reports. */
export type NewEvent = {
  id: string;
  storeId: string;
  productId: string;
  type: EventType;
  url: string;
  /** The JSON sent on every attempt; null when it is known only after the change (a publish's answer). */
  body: string | null;
  createdAt: Date;
};

/** The message the queue carries: only the event's id; everything else is read from D1 at delivery. */
export type DeliveryMessage = { id: string };

/** A new event id, `evt_<uuid>`: the `webhook-id` of every attempt. */
const newEventId = () => `evt_${crypto.randomUUID()}`;

/**
 * Where an event about the product goes: its `webhook_url` when that may be sent to (targets.ts: `https:`,
 * no credentials, not this machine or a private network; with `WEBHOOK_ALLOW_HTTP=on` also `http:` and local
 * hosts); null, empty or anything else makes no event. The setting is read only for a URL that needs it, so a
 * malformed value fails only the changes that would.
 */
export function eventTarget(env: Env, webhookUrl: unknown): string | null {
  if (typeof webhookUrl !== "string") return null;
  const text = webhookUrl.trim();
  if (text === "" || !URL.canParse(text)) return null;
  const url = new URL(text);
  return targetRefusal(url, () => setting(env, "WEBHOOK_ALLOW_HTTP")) === null ? url.href : null;
}

/** The Standard Webhooks body: `{type, timestamp, data}`, the same bytes on every attempt. */
export function eventBody(type: EventType, createdAt: Date, data: unknown): string {
  return JSON.stringify({ type, timestamp: createdAt.toISOString(), data });
}

/** An event of `type` about `product` to `url`, made now; `data` null means the body is filled in later. */
export function newEvent(
  product: { id: string; storeId: string },
  type: EventType,
  url: string,
  data: unknown | null,
  createdAt = new Date(),
): NewEvent {
  return {
    id: newEventId(),
    storeId: product.storeId,
    productId: product.id,
    type,
    url,
    body: data === null ? null : eventBody(type, createdAt, data),
    createdAt,
  };
}

function eventRow(event: NewEvent) {
  return { ...event, status: "pending" as const, nextAttemptAt: event.createdAt };
}

/** The statement that writes the event; it belongs in the batch of the change it reports. */
export function insertEvent(db: Database, event: NewEvent) {
  return db.insert(webhookEvents).values(eventRow(event));
}

/**
 * The statement that writes the event only if the statement just before it in the batch changed a row
 * (SQLite's `changes()`), for a change that may turn out to change nothing.
 */
export function insertEventIfChanged(db: Database, event: NewEvent) {
  // INSERT … SELECT names every column in the table's order, so the selected row spells out each one.
  const row: typeof webhookEvents.$inferSelect = {
    ...eventRow(event),
    attempts: 0,
    retriesUsed: 0,
    finalAttempt: false,
    lastAttemptAt: null,
    lastResponseStatus: null,
    attemptLog: [],
    leaseUntil: null,
  };
  const values = Object.entries(getTableColumns(webhookEvents)).map(([key, column]) => {
    const value = row[key as keyof typeof row];
    return value === null ? sql`NULL` : sql`${column.mapToDriverValue(value)}`;
  });
  return db.insert(webhookEvents).select(sql`SELECT ${sql.join(values, sql`, `)} WHERE changes() > 0`);
}

/** Fills in a body that was left for later; a body already written is never replaced. */
export function fillEventBody(db: Database, id: string, body: string) {
  return db
    .update(webhookEvents)
    .set({ body })
    .where(and(eq(webhookEvents.id, id), isNull(webhookEvents.body)));
}

/**
 * Hands a committed event to the queue; fills in its body first when given. A failure here only delays the
 * event: the sweep re-enqueues events that are overdue.
 */
export async function enqueueEvent(db: Database, queue: Queue<DeliveryMessage>, id: string, body?: string) {
  if (body !== undefined) await fillEventBody(db, id, body);
  await queue.send({ id }, { contentType: "json" });
}
