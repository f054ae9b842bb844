import type { Context } from "hono";

/**
 * Keeps `task` running after the response, and after a client that went away: workerd cancels a
 * request's own continuations when its client disconnects, but not what it handed to `waitUntil`. Hono's
 * test `app.request()` has no execution context; there the task simply runs on. Failures are the task's
 * own business (its caller awaits it too, or it is a best-effort refill).
 */
export function inBackground(c: Context, task: Promise<unknown>): void {
  let ctx: Context["executionCtx"];
  try {
    ctx = c.executionCtx;
  } catch {
    task.catch(() => {});
    return;
  }
  ctx.waitUntil(task.catch(() => {}));
}
