import { DurableObject } from "cloudflare:workers";
import { FixedWindowCounter, type LimitVerdict } from "./fixed-window";

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
}
