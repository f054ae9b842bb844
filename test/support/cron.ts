import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { vi } from "vitest";
import worker from "../../src/index";
import type { BindingOverrides } from "./http";

/**
 * Runs the Worker's cron handler to its end, as scheduled at `scheduledTime` (now unless given), with
 * `overrides` over the test bindings. The handler sweeps again half a minute after it starts (src/index.ts):
 * the test's clock (timers and Date) is moved on until the handler is done, with real pauses between the moves
 * for its database calls, so no test sleeps through that half minute.
 */
export async function runCron(overrides: BindingOverrides = {}, scheduledTime = Date.now()): Promise<void> {
  const ctx = createExecutionContext();
  // The handler's waitUntil work, watched here: the test pool's own wait for it gives up after 30 s of the
  // (faked) clock, which the moves below pass before the second sweep's database calls are done.
  const work: Promise<unknown>[] = [];
  const handOver = ctx.waitUntil.bind(ctx);
  ctx.waitUntil = (promise) => {
    work.push(promise);
    handOver(promise);
  };
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: Date.now() });
  try {
    await worker.scheduled(
      createScheduledController({ cron: "* * * * *", scheduledTime }),
      { ...env, ...overrides } as Env,
      ctx,
    );
    let ended = false;
    const ending = Promise.allSettled(work).then(() => {
      ended = true;
    });
    while (!ended) {
      await vi.advanceTimersByTimeAsync(1_000);
      await scheduler.wait(5);
    }
    await ending;
  } finally {
    vi.useRealTimers();
  }
  // Settled by now; with the real clock back, this passes on the work's failure, if any.
  await waitOnExecutionContext(ctx);
}
