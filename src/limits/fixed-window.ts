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
}
