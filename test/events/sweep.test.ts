import { describe, expect, it } from "vitest";
import { dropExpiredEveryMinutes, sweepAgainAfterMs, sweepGraceMs } from "../../src/events/sweep";
import { runCron } from "../support/cron";
import { pendingEvent, recordingQueue, storedEvent } from "../support/events";
import { captureServiceLogs } from "../support/logs";

// The service logs what these tests provoke on purpose; captured, and checked where a test expects a line.
captureServiceLogs();

/** Runs the cron handler as scheduled at `scheduledTime`, with `queue` as the webhook queue. */
const sweepAt = (scheduledTime: number, queue: Queue<{ id: string }>) =>
  runCron({ WEBHOOK_QUEUE: queue, WEBHOOK_RETENTION_DAYS: "2" }, scheduledTime);

describe("the sweep every minute (src/index.ts cron handler)", () => {
  it("sweeps again half a minute into each run, so an event whose message was lost waits under a minute", async () => {
    expect(sweepGraceMs + sweepAgainAfterMs).toBeLessThan(60_000);
    // Lost 10 s ago: not yet overdue at the run's start, overdue by its second sweep.
    const { event: lost } = await pendingEvent({ createdAt: new Date(Date.now() - 10_000) });
    let at = Date.now();
    if (new Date(at).getUTCMinutes() % 5 === 0) at += 60_000;
    const { sent, queue } = recordingQueue();
    await sweepAt(at, queue);
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

    await sweepAt(at, queue);
    expect(sent).toContainEqual({ id: lost.id });
    expect(await storedEvent(old.id)).toBeDefined();

    while (new Date(at).getUTCMinutes() % 5 !== 0) at += aMinute;
    await sweepAt(at, queue);
    expect(await storedEvent(old.id)).toBeUndefined();
  });
});
