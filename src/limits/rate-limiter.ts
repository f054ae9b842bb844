import { DurableObject } from "cloudflare:workers";
import { FixedWindowCounter, type LeaseGrant, type LimitVerdict } from "./fixed-window";

/**
 * One object per limited subject (an API token, a client IP): every request of that subject is
 * counted in one place, so the limit is exact and `Retry-After` is true.
 */
export class RateLimiter extends DurableObject<Env> {
  private readonly counter = new FixedWindowCounter(this.ctx.storage.sql);

  /** Counts one request and answers whether it may proceed. */
  consume(limit: number, windowSeconds: number): LimitVerdict {
    return this.counter.consume("window", limit, windowSeconds * 1000);
  }

  /** Takes back one request counted by {@link RateLimiter.consume} in the window still open. */
  refund(windowSeconds: number): void {
    this.counter.refund("window", windowSeconds * 1000);
  }

  /** Grants an isolate up to `want` calls of the current window to spend locally (the general API limit). */
  lease(limit: number, windowSeconds: number, want: number): LeaseGrant {
    return this.counter.lease("window", limit, windowSeconds * 1000, want);
  }
}
