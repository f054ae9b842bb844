import type { LimitVerdict } from "../limits/fixed-window";
import { ApiError, messages } from "./errors";

/** Counts one request of `subject` (e.g. `token:<hash>`, `ip:<address>`) in its own limiter object. */
export function consumeLimit(
  namespace: Env["RATE_LIMITER"],
  subject: string,
  limit: number,
  windowSeconds = 60,
): Promise<LimitVerdict> {
  const stub = namespace.get(namespace.idFromName(subject));
  return stub.consume(limit, windowSeconds);
}

/** The IETF draft `RateLimit-Policy` / `RateLimit` headers for a verdict. */
export function rateLimitHeaders(verdict: LimitVerdict): Record<string, string> {
  return {
    "RateLimit-Policy": `${verdict.limit};w=${verdict.windowSeconds}`,
    RateLimit: `limit=${verdict.limit}, remaining=${verdict.remaining}, reset=${verdict.resetSeconds}`,
  };
}

/** The 429 of a refused verdict, with `Retry-After` and the rate-limit headers. */
export function tooManyRequests(verdict: LimitVerdict): ApiError {
  return new ApiError(429, messages.tooManyRequests(verdict.resetSeconds), undefined, {
    ...rateLimitHeaders(verdict),
    "Retry-After": String(verdict.resetSeconds),
  });
}
