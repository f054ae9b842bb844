import { createApp } from "./app";
import { setting } from "./config";
import { createDb, type Database } from "./db/client";
import { handleDeadLetters, handleDeliveryBatch, processingRetrySeconds } from "./events/delivery";
import type { DeliveryMessage } from "./events/records";
import { sweepEvents } from "./events/sweep";
import { ApiError } from "./http/errors";
import { readLiveProduct } from "./products/queries";

export { RateLimiter } from "./limits/rate-limiter";
export { StoreCoordinator } from "./uploads/coordinator/store-coordinator";

const app = createApp();

/** Messages of the dead-letter queue (see wrangler.toml) end their event; the rest are deliveries. */
const isDeadLetterQueue = (name: string) => name.endsWith("-dlq");

/** The live product resource, or null when it is archived or gone (a 404 to the API). */
async function liveProductOrNull(db: Database, storeId: string, productId: string) {
  try {
    return (await readLiveProduct(db, productId, [storeId])).resource;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

export default {
  fetch: app.fetch,
  async queue(batch, env) {
    const db = createDb(env.DB);
    if (isDeadLetterQueue(batch.queue)) return handleDeadLetters(batch, db);
    let settings: { schedule: number[]; timeoutMs: number };
    try {
      settings = { schedule: setting(env, "WEBHOOK_RETRY_SCHEDULE"), timeoutMs: setting(env, "WEBHOOK_TIMEOUT_MS") };
    } catch {
      // A malformed setting is logged once by setting(); the events wait, pending, until it is fixed.
      batch.retryAll({ delaySeconds: processingRetrySeconds * 5 });
      return;
    }
    await handleDeliveryBatch(batch, {
      db,
      fetch: (input, init) => fetch(input, init),
      liveProduct: (storeId, productId) => liveProductOrNull(db, storeId, productId),
      ...settings,
    });
  },
  async scheduled(_controller, env, ctx) {
    const retentionDays = setting(env, "WEBHOOK_RETENTION_DAYS");
    ctx.waitUntil(
      sweepEvents({ db: createDb(env.DB), queue: env.WEBHOOK_QUEUE as Queue<DeliveryMessage>, retentionDays }),
    );
  },
} satisfies ExportedHandler<Env, unknown>;
