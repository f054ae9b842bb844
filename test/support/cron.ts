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
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: Date.now() });
  try {
    const ctx = createExecutionContext();
    await worker.scheduled(
      createScheduledController({ cron: "* * * * *", scheduledTime }),
      { ...env, ...overrides } as Env,
      ctx,
    );
    let ended = false;
    const ending = waitOnExecutionContext(ctx).then(() => {
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
}
