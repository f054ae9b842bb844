import { and, eq, inArray, isNull, lt, lte, not, or } from "drizzle-orm";
import type { Database } from "../db/client";
import { fencedStore } from "../db/fence";
import { webhookEvents } from "../db/schema";
import type { DeliveryMessage } from "./records";

/**
 * How late a pending event may be before the sweep re-enqueues it: longer than a queue takes to hand a due
 * message to the consumer (seconds), so the sweep adds a message only when the one the event had is lost (its
 * enqueue failed or never ran, or it was dropped), and short, because with the sweep running every half
 * minute ({@link sweepAgainAfterMs}) an event whose message was lost waits this long plus at most 30 s: under
 * a minute. A message merely later than this (a
 * queue backlog) gets a duplicate, which costs a queue message, never a second POST: the duplicate finds the
 * attempt claimed, or not due, or the event settled.
 */
export const sweepGraceMs = 25_000;

/**
 * The cron runs once a minute, its finest step; each run sweeps again this long after its start (re-enqueueing
 * only), so the re-enqueue sweep runs every half minute.
 */
export const sweepAgainAfterMs = 30_000;
/** Events re-enqueued per sweep; more wait for the next run. */
const sweepLimit = 1000;
/** Queues take at most 100 messages per sendBatch; D1 binds at most 100 parameters per statement. */
const chunkSize = 90;

/**
 * Dropping the events past the retention reads the whole table (`created_at` has no index of its own), and
 * the retention is counted in days: the sweep does it every this many minutes, not on every run.
 */
export const dropExpiredEveryMinutes = 5;

/** Whether the cron run scheduled at `scheduledTime` also drops the events past the retention. */
export function dropsExpired(scheduledTime: number): boolean {
  return new Date(scheduledTime).getUTCMinutes() % dropExpiredEveryMinutes === 0;
}

type SweepDeps = {
  db: Database;
  queue: Queue<DeliveryMessage>;
  retentionDays: number;
  /** Whether this run drops the events past the retention too (every run unless told; see {@link dropsExpired}). */
  dropExpired?: boolean;
  now?: () => Date;
};

/**
 * The periodic sweep (every minute): drops events older than the retention (when `dropExpired`), and
 * re-enqueues pending events that are overdue by more than {@link sweepGraceMs} and not held by a consumer:
 * an event whose enqueue was lost, and one whose attempt's consumer died (its claim ended) if its message was
 * lost too. Answers what it did. The events of a store being moved (fenced in this database, src/db/move.ts)
 * are left to the next sweep: their rows may not change.
 */
export async function sweepEvents(deps: SweepDeps): Promise<{ expired: number; requeued: number }> {
  const now = deps.now?.() ?? new Date();
  const expired =
    deps.dropExpired === false
      ? { meta: { changes: 0 } }
      : await deps.db
          .delete(webhookEvents)
          .where(
            and(
              lt(webhookEvents.createdAt, new Date(now.getTime() - deps.retentionDays * 86_400_000)),
              not(fencedStore(webhookEvents.storeId)),
            ),
          );

  const overdue = await deps.db
    .select({ id: webhookEvents.id })
    .from(webhookEvents)
    .where(
      and(
        eq(webhookEvents.status, "pending"),
        lte(webhookEvents.nextAttemptAt, new Date(now.getTime() - sweepGraceMs)),
        or(isNull(webhookEvents.leaseUntil), lt(webhookEvents.leaseUntil, now)),
        not(fencedStore(webhookEvents.storeId)),
      ),
    )
    .limit(sweepLimit);
  for (let start = 0; start < overdue.length; start += chunkSize) {
    const ids = overdue.slice(start, start + chunkSize).map((row) => row.id);
    // Due now: the next sweep leaves them alone unless this enqueue is lost too.
    await deps.db.update(webhookEvents).set({ nextAttemptAt: now }).where(inArray(webhookEvents.id, ids));
    await deps.queue.sendBatch(ids.map((id) => ({ body: { id }, contentType: "json" as const })));
  }
  return { expired: expired.meta.changes, requeued: overdue.length };
}
