/** Outcome of counting one request against a limit. */
export type LimitVerdict = {
  allowed: boolean;
  limit: number;
  windowSeconds: number;
  /** Requests still accepted in the current window after this one. */
  remaining: number;
  /** Whole seconds until the window resets (>= 1); also the `Retry-After` of a refusal. */
  resetSeconds: number;
};

/** Budget of a window leased to one isolate, which spends it without asking again (see budget-lease.ts). */
export type LeaseGrant = {
  /** Calls granted to the caller, counted in the window as if already made; 0 when the window is spent. */
  granted: number;
  limit: number;
  windowSeconds: number;
  /** Calls of the window not yet granted to anyone, after this grant. */
  unleased: number;
  /** Milliseconds until the window closes, by the limiter's clock (> 0). */
  resetMs: number;
  /** When the window opened, by the limiter's clock: tells the grants of one window from the next's. */
  windowStartedAt: number;
};

/**
 * A grant never exceeds this share of what is still unleased, so slices shrink as a window runs out and
 * fewer calls are stranded in isolates that stop calling.
 */
const leaseShareOfUnleased = 1 / 4;

/**
 * An exact fixed-window counter kept in a Durable Object's SQLite storage. The window opens at the
 * first request after the previous one closed, so a burst is never split by a clock boundary.
 * Refused requests count too, so hammering a limit never shortens the wait.
 */
export class FixedWindowCounter {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(
      "CREATE TABLE IF NOT EXISTS rate_windows (key TEXT PRIMARY KEY, started_at INTEGER NOT NULL, count INTEGER NOT NULL)",
    );
  }

  /** Counts one request for `key` and tells whether it is within `limit` per `windowMs`. */
  consume(key: string, limit: number, windowMs: number, now = Date.now()): LimitVerdict {
    const row = this.sql
      .exec<{ started_at: number; count: number }>("SELECT started_at, count FROM rate_windows WHERE key = ?", key)
      .toArray()[0];
    const open = row !== undefined && now < row.started_at + windowMs;
    const startedAt = open ? row.started_at : now;
    const count = (open ? row.count : 0) + 1;
    this.sql.exec(
      "INSERT INTO rate_windows (key, started_at, count) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET started_at = excluded.started_at, count = excluded.count",
      key,
      startedAt,
      count,
    );
    return {
      allowed: count <= limit,
      limit,
      windowSeconds: Math.ceil(windowMs / 1000),
      remaining: Math.max(0, limit - count),
      resetSeconds: Math.max(1, Math.ceil((startedAt + windowMs - now) / 1000)),
    };
  }

  /**
   * Takes back one request of `key` from the window still open: one counted before it was known whether it
   * counts (a right secret, src/ops/routes.ts). Nothing once that window has closed; if a later request has
   * opened the next one meanwhile, that window is one request short instead (at most one per refund).
   */
  refund(key: string, windowMs: number, now = Date.now()): void {
    this.sql.exec(
      "UPDATE rate_windows SET count = count - 1 WHERE key = ? AND count > 0 AND ? < started_at + ?",
      key,
      now,
      windowMs,
    );
  }

  /**
   * Grants up to `want` calls of `key`'s window at once (at least 1 while any is left), counting them as
   * made: the sum of grants in a window never exceeds `limit`.
   */
  lease(key: string, limit: number, windowMs: number, want: number, now = Date.now()): LeaseGrant {
    const row = this.sql
      .exec<{ started_at: number; count: number }>("SELECT started_at, count FROM rate_windows WHERE key = ?", key)
      .toArray()[0];
    const open = row !== undefined && now < row.started_at + windowMs;
    const startedAt = open ? row.started_at : now;
    const counted = open ? row.count : 0;
    const unleased = Math.max(0, limit - counted);
    const share = Math.max(1, Math.ceil(unleased * leaseShareOfUnleased));
    const granted = Math.max(0, Math.min(Math.floor(want), unleased, share));
    if (granted > 0 || !open) {
      this.sql.exec(
        "INSERT INTO rate_windows (key, started_at, count) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET started_at = excluded.started_at, count = excluded.count",
        key,
        startedAt,
        counted + granted,
      );
    }
    return {
      granted,
      limit,
      windowSeconds: Math.ceil(windowMs / 1000),
      unleased: unleased - granted,
      resetMs: Math.max(1, startedAt + windowMs - now),
      windowStartedAt: startedAt,
    };
  }
}
