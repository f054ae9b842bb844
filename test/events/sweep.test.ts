import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { dropExpiredEveryMinutes, sweepAgainAfterMs, sweepGraceMs } from "../../src/events/sweep";
import worker from "../../src/index";
import { pendingEvent, recordingQueue, storedEvent } from "../support/events";
import { captureServiceLogs } from "../support/logs";

// The service logs what these tests provoke on purpose; captured, and checked where a test expects a line.
captureServiceLogs();

/**
 * Runs the Worker's cron handler as scheduled at `scheduledTime`, with `queue` as the webhook queue, to its end:
 * its second sweep waits half a minute on a timer, so the test's clock (timers and Date) is moved on until the
 * handler is done, with real pauses between the moves for its database calls.
 */
async function runCron(scheduledTime: number, queue: Queue<{ id: string }>) {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: Date.now() });
  try {
    const ctx = createExecutionContext();
    await worker.scheduled(
      createScheduledController({ cron: "* * * * *", scheduledTime }),
      { ...env, WEBHOOK_QUEUE: queue, WEBHOOK_RETENTION_DAYS: "2" },
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

describe("the sweep every minute (src/index.ts cron handler)", () => {
  it("sweeps again half a minute into each run, so an event whose message was lost waits under a minute", async () => {
    expect(sweepGraceMs + sweepAgainAfterMs).toBeLessThan(60_000);
    // Lost 10 s ago: not yet overdue at the run's start, overdue by its second sweep.
    const { event: lost } = await pendingEvent({ createdAt: new Date(Date.now() - 10_000) });
    let at = Date.now();
    if (new Date(at).getUTCMinutes() % 5 === 0) at += 60_000;
    const { sent, queue } = recordingQueue();
    await runCron(at, queue);
    expect(sent).toContainEqual({ id: lost.id });
  });

  it("every run re-enqueues an event whose enqueue was lost 45 seconds ago; only the run of every fifth minute drops events past the retention", async () => {
    expect(dropExpiredEveryMinutes).toBe(5);
    // Made 45 s ago; its message never reached the queue.
    const { event: lost } = await pendingEvent({ createdAt: new Date(Date.now() - 45_000) });
    const { event: old } = await pendingEvent({ createdAt: new Date(Date.now() - 3 * 86_400_000) });
    const aMinute = 60_000;
    // The sweep reads the clock itself; the time it was scheduled for says which run it is.
    let at = Date.now();
    if (new Date(at).getUTCMinutes() % 5 === 0) at += aMinute;
    const { sent, queue } = recordingQueue();

    await runCron(at, queue);
    expect(sent).toContainEqual({ id: lost.id });
    expect(await storedEvent(old.id)).toBeDefined();

    while (new Date(at).getUTCMinutes() % 5 !== 0) at += aMinute;
    await runCron(at, queue);
    expect(await storedEvent(old.id)).toBeUndefined();
  });
});
