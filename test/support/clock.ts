import { afterEach, beforeEach, vi } from "vitest";

/** A clock that moves only when the test moves it. */
export type ManualClock = {
  /** The clock's time, in milliseconds since the epoch. */
  now: () => number;
  /** Moves the clock `ms` forward. */
  advance: (ms: number) => void;
};

/** A clock for code that takes its clock as an argument (`now`): it stands still until the test advances it. */
export function manualClock(start = 1_000_000): ManualClock {
  let now = start;
  return {
    now: () => now,
    advance: (ms) => {
      now += ms;
    },
  };
}

/**
 * The isolate's own clock (`Date`) under the test's hand in every test of the calling file or describe
 * block, for code that reads the time itself (the guard's token cache). It stands still until the test
 * advances it; timers stay real, so I/O and awaiting behave as usual.
 */
export function isolateClock(): ManualClock {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  return {
    now: () => Date.now(),
    advance: (ms) => {
      vi.setSystemTime(Date.now() + ms);
    },
  };
}
