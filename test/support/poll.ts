type PollOptions = {
  /** How long to keep asking (20 s unless given). */
  timeoutMs?: number;
  /** The pause between two questions (50 ms unless given). */
  intervalMs?: number;
  /** What is awaited, for the failure message. */
  what?: string;
};

/**
 * Asks `probe` again until `done` holds for what it answers, then answers that value; fails naming the last
 * value once `timeoutMs` have passed. For a condition reached by another process (a queue, a receiver) that
 * a test waits for instead of sleeping a fixed time.
 */
export async function poll<T, U extends T>(
  probe: () => T | Promise<T>,
  done: (value: T) => value is U,
  options?: PollOptions,
): Promise<U>;
export async function poll<T>(
  probe: () => T | Promise<T>,
  done: (value: T) => boolean,
  options?: PollOptions,
): Promise<T>;
export async function poll<T>(
  probe: () => T | Promise<T>,
  done: (value: T) => boolean,
  options: PollOptions = {},
): Promise<T> {
  const { timeoutMs = 20_000, intervalMs = 50, what = "the condition" } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) {
      throw new Error(`${what} not reached within ${timeoutMs} ms; last seen: ${JSON.stringify(value)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
