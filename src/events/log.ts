import { and, count, desc, eq, gte, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { runAtomically } from "../db/batch";
import type { Database } from "../db/client";
import { type WebhookEventStatus, webhookEvents } from "../db/schema";
import { ApiError } from "../http/errors";

type EventRow = typeof webhookEvents.$inferSelect;

export const eventMessages = {
  invalidEventId: "Invalid event ID.",
  notFound: (id: string) => `Webhook event with ID ${id} not found`,
  targetRefused: (reason: string) => `The event's url may not be sent to: ${reason}.`,
} as const;

type EventFilters = { status?: WebhookEventStatus; type?: EventRow["type"]; productId?: string };

const iso = (time: Date | null) => (time ? time.toISOString() : null);

/** The list item of an event: what happened to it, never its body or the store's secret. */
export function eventSummary(row: EventRow) {
  return {
    id: row.id,
    type: row.type,
    product_id: row.productId,
    url: row.url,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.status === "pending" ? iso(row.nextAttemptAt) : null,
    last_attempt_at: iso(row.lastAttemptAt),
    last_response_status: row.lastResponseStatus,
    created_at: row.createdAt.toISOString(),
  };
}

/** The detail of an event: the summary, the body every attempt sends, and the attempt log. */
export function eventDetail(row: EventRow) {
  const payload: { type: EventRow["type"]; timestamp: string; data: Record<string, unknown> } | null =
    row.body === null ? null : JSON.parse(row.body);
  return { ...eventSummary(row), payload, attempt_log: row.attemptLog };
}

/** Events older than the retention are gone even before the sweep deletes them. */
function keptSince(retentionDays: number, now: Date) {
  return gte(webhookEvents.createdAt, new Date(now.getTime() - retentionDays * 86_400_000));
}

/** A page of the store's events, newest first (ties by id, so pages never repeat or skip one). */
export async function listEvents(
  db: Database,
  storeId: string,
  filters: EventFilters,
  page: { page: number; perPage: number },
  retentionDays: number,
  now = new Date(),
) {
  const conditions: SQL[] = [eq(webhookEvents.storeId, storeId), keptSince(retentionDays, now)];
  if (filters.status) conditions.push(eq(webhookEvents.status, filters.status));
  if (filters.type) conditions.push(eq(webhookEvents.type, filters.type));
  if (filters.productId) conditions.push(eq(webhookEvents.productId, filters.productId));
  const where = and(...conditions);
  const [rows, [counted]] = await db.batch([
    db
      .select()
      .from(webhookEvents)
      .where(where)
      .orderBy(desc(webhookEvents.createdAt), desc(webhookEvents.id))
      .limit(page.perPage)
      .offset((page.page - 1) * page.perPage),
    db.select({ total: count() }).from(webhookEvents).where(where),
  ]);
  return { items: rows.map(eventSummary), total: counted?.total ?? 0 };
}

/** The store's event `id` within the retention; another store's event is not found, like an unknown one. */
export async function requireEvent(db: Database, storeId: string, id: string, retentionDays: number, now = new Date()) {
  const row = await db.query.webhookEvents.findFirst({
    where: and(eq(webhookEvents.id, id), eq(webhookEvents.storeId, storeId), keptSince(retentionDays, now)),
  });
  if (!row) throw new ApiError(404, eventMessages.notFound(id));
  return row;
}

/**
 * Asks for one new attempt soon, with the same `webhook-id`: a pending event is simply due now; a delivered or
 * failed one is pending again for exactly one attempt (no retries after it). Answers the event as changed;
 * `record` adds statements to the change's batch from it (the request's `Idempotency-Key` record and answer).
 */
export async function markForRedelivery(
  db: Database,
  row: EventRow,
  now = new Date(),
  record: (updated: EventRow) => BatchItem<"sqlite">[] = () => [],
): Promise<EventRow> {
  const change = {
    status: "pending" as const,
    nextAttemptAt: now,
    finalAttempt: row.status !== "pending" || row.finalAttempt,
  };
  const updated: EventRow = { ...row, ...change };
  await runAtomically(db, [
    db.update(webhookEvents).set(change).where(eq(webhookEvents.id, row.id)),
    ...record(updated),
  ]);
  return updated;
}
