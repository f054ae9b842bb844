import { inArray, sql } from "drizzle-orm";
import { createApp } from "./app";
import { setting } from "./config";
import { fencedStore } from "./db/fence";
import { dropExpiredKeys } from "./db/idempotency-keys";
import { webhookEvents } from "./db/schema";
import { homeDb, homeNames, legacyHome } from "./db/shards";
import { handleDeadLetters, handleDeliveryBatch, processingRetrySeconds } from "./events/delivery";
import type { DeliveryMessage } from "./events/records";
import { dropsExpired, sweepAgainAfterMs, sweepEvents } from "./events/sweep";
import { targetRefusal } from "./events/targets";
import { log } from "./lib/log";
import { liveProductOrNull } from "./products/queries";

export { RateLimiter } from "./limits/rate-limiter";
export { StoreCoordinator } from "./uploads/coordinator/store-coordinator";

const app = createApp();

/** Messages of the dead-letter queue (see wrangler.toml) end their event; the rest are deliveries. */
const isDeadLetterQueue = (name: string) => name.endsWith("-dlq");

/**
 * The messages of a batch by the home database their event lives in. A message carries only the event's id
 * (records.ts), so every home is asked at once which of the batch's events it holds: one statement per home,
 * one trip of latency per batch. A message whose event no home holds (dropped by the retention) goes with
 * `DB`'s, where the delivery finds nothing to send and acks it. While a store moves its events are in two
 * homes, fenced in the one it leaves (src/db/move.ts): the open one has them; when every home holding an event
 * fences its store, the message is held (under the key {@link heldByMove}) and comes back a little later.
 */
async function byHome(env: Env, messages: readonly Message<unknown>[]): Promise<Map<string, Message<unknown>[]>> {
  const ids = [
    ...new Set(
      messages.flatMap((message) => {
        const id = (message.body as Partial<DeliveryMessage> | null)?.id;
        return typeof id === "string" ? [id] : [];
      }),
    ),
  ];
  const homeOf = new Map<string, string>();
  if (ids.length > 0) {
    await Promise.all(
      homeNames(env).map(async (home) => {
        const db = homeDb(env, home);
        const rows = await db
          .select({ id: webhookEvents.id, fenced: sql<number>`${fencedStore(webhookEvents.storeId)}` })
          .from(webhookEvents)
          .where(inArray(webhookEvents.id, ids));
        for (const row of rows) {
          if (!row.fenced) homeOf.set(row.id, home);
          else if (!homeOf.has(row.id)) homeOf.set(row.id, heldByMove);
        }
      }),
    );
  }
  const groups = new Map<string, Message<unknown>[]>();
  for (const message of messages) {
    const id = (message.body as Partial<DeliveryMessage> | null)?.id;
    const home = (typeof id === "string" && homeOf.get(id)) || legacyHome;
    groups.set(home, [...(groups.get(home) ?? []), message]);
  }
  return groups;
}

/** The group of {@link byHome} whose events' store is moving: they are delivered once it has arrived. */
const heldByMove = "moving";
/** How long a message whose store is moving waits: a move holds a store's writes for seconds. */
const movingRetrySeconds = 10;

/** `batch` with only `messages`: each home's messages are handled against that home's database. */
function part(batch: MessageBatch<unknown>, messages: Message<unknown>[]): MessageBatch<unknown> {
  return {
    queue: batch.queue,
    metadata: batch.metadata,
    messages,
    retryAll: (options) => {
      for (const message of messages) message.retry(options);
    },
    ackAll: () => {
      for (const message of messages) message.ack();
    },
  };
}

export default {
  fetch: app.fetch,
  async queue(batch, env) {
    const deadLetters = isDeadLetterQueue(batch.queue);
    let settings: { schedule: number[]; timeoutMs: number } = { schedule: [], timeoutMs: 0 };
    if (!deadLetters) {
      try {
        settings = { schedule: setting(env, "WEBHOOK_RETRY_SCHEDULE"), timeoutMs: setting(env, "WEBHOOK_TIMEOUT_MS") };
      } catch {
        // A malformed setting is logged once by setting(); the events wait, pending, until it is fixed.
        batch.retryAll({ delaySeconds: processingRetrySeconds * 5 });
        return;
      }
    }
    let groups: Map<string, Message<unknown>[]>;
    try {
      groups = await byHome(env, batch.messages);
    } catch (error) {
      // Like a delivery that could not be processed: every message comes back after a minute.
      log.warn("webhook queue: the events' databases could not be asked", {
        error: error instanceof Error ? error.message : String(error),
      });
      batch.retryAll({ delaySeconds: processingRetrySeconds });
      return;
    }
    const held = groups.get(heldByMove);
    groups.delete(heldByMove);
    for (const message of held ?? []) message.retry({ delaySeconds: movingRetrySeconds });
    if (deadLetters) {
      await Promise.all(
        [...groups].map(([home, messages]) => handleDeadLetters(part(batch, messages), homeDb(env, home))),
      );
      return;
    }
    await Promise.all(
      [...groups].map(([home, messages]) => {
        const db = homeDb(env, home);
        return handleDeliveryBatch(part(batch, messages), {
          db,
          fetch: (input, init) => fetch(input, init),
          liveProduct: (storeId, productId) => liveProductOrNull(db, storeId, productId),
          targetRefusal: (url) => targetRefusal(url, () => setting(env, "WEBHOOK_ALLOW_HTTP")),
          ...settings,
        });
      }),
    );
  },
  async scheduled(controller, env, ctx) {
    const retentionDays = setting(env, "WEBHOOK_RETENTION_DAYS");
    const queue = env.WEBHOOK_QUEUE as Queue<DeliveryMessage>;
    const dropExpired = dropsExpired(controller.scheduledTime);
    // Every home database holds events of its stores: each is swept (DB for stores placed before sharding). At
    // the same minutes as expired events, its Idempotency-Key records past their time go (the coordinators' go
    // at their own alarms).
    const sweepHomes = (dropping: boolean) =>
      Promise.all(
        homeNames(env).flatMap((home) => [
          sweepEvents({ db: homeDb(env, home), queue, retentionDays, dropExpired: dropping }),
          ...(dropping ? [dropExpiredKeys(homeDb(env, home), controller.scheduledTime)] : []),
        ]),
      );
    // Then once more half a minute later (re-enqueueing only), so an event whose message was lost waits under
    // a minute although the cron's finest step is one (sweep.ts, `sweepAgainAfterMs`).
    ctx.waitUntil(
      sweepHomes(dropExpired)
        .then(() => new Promise((resolve) => setTimeout(resolve, sweepAgainAfterMs)))
        .then(() => sweepHomes(false)),
    );
  },
} satisfies ExportedHandler<Env, unknown>;
