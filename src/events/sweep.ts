import { and, eq, inArray, isNull, lt, lte, not, or } from "drizzle-orm";
import type { Database } from "../db/client";
import { fencedStore } from "../db/fence";
import { webhookEvents } from "../db/schema";
import type { DeliveryMessage } from "./records";

/**
 * How late a pending event may be before the sweep re-enqueues it: longer than a queue takes to hand a due
 * message to the consumer, so the sweep adds a message only when the one the event had is lost (its enqueue
 * failed, or it was dropped).
 */
export const sweepGraceMs = 10 * 60_000;
/** Events re-enqueued per sweep; more wait for the next run. */
const sweepLimit = 1000;
/** Queues take at most 100 messages per sendBatch; D1 binds at most 100 parameters per statement. */
const chunkSize = 90;

type SweepDeps = {
  db: Database;
  queue: Queue<DeliveryMessage>;
  retentionDays: number;
  now?: () => Date;
};

/**
 * The periodic sweep: drops events older than the retention, and re-enqueues pending events that are overdue
 * by more than {@link sweepGraceMs} and not held by a consumer. Answers what it did. The events of a store
 * being moved (fenced in this database, src/db/move.ts) are left to the next sweep: their rows may not change.
 */
export async function sweepEvents(deps: SweepDeps): Promise<{ expired: number; requeued: number }> {
  const now = deps.now?.() ?? new Date();
  const expired = await deps.db
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
