import type { Context } from "hono";
import type { AppEnv } from "../env";
import { inBackground } from "../http/background";
import { log } from "../lib/log";
import { enqueueEvent } from "./records";

/**
 * Hands a committed event to the queue after the answer (the API never waits for a receiver). A failure is
 * logged and left to the sweep, which re-enqueues overdue events.
 */
export function enqueueInBackground<E extends AppEnv>(c: Context<E>, id: string, body?: string): void {
  inBackground(
    c,
    enqueueEvent(c.var.db, c.env.WEBHOOK_QUEUE, id, body).catch((error: unknown) => {
      log.warn("webhook event: enqueue failed; the sweep will retry it", {
        event_id: id,
        error: error instanceof Error ? error.message : String(error),
      });
    }),
  );
}
