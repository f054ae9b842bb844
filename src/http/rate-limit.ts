import type { Context } from "hono";
import { type Background, type LeaseClient, LeasedBudgets } from "../limits/budget-lease";
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

/**
 * Lease calls to the limiter objects of `namespace`. Build one per request: a stub belongs to the
 * request that made it, and the background refill it serves runs under that same request.
 */
export function durableLeaseClient(namespace: Env["RATE_LIMITER"]): LeaseClient {
  return (subject, { limit, windowSeconds, want }) =>
    namespace.get(namespace.idFromName(subject)).lease(limit, windowSeconds, want);
}

/** This isolate's slices of the general API limit, shared by every request it serves. */
export const generalBudgets = new LeasedBudgets();

/** Counts one call of `subject` against the general limit, from this isolate's leased slice when it can. */
export function takeGeneralLimit(
  c: Context,
  subject: string,
  limit: number,
  windowSeconds = 60,
): Promise<LimitVerdict> {
  return generalBudgets.take(subject, limit, windowSeconds, durableLeaseClient(c.env.RATE_LIMITER), backgroundOf(c));
}

/** The request's `waitUntil`; Hono's `app.request()` has none, and there the task simply runs on. */
function backgroundOf(c: Context): Background {
  try {
    const ctx = c.executionCtx;
    return (task) => ctx.waitUntil(task);
  } catch {
    return (task) => void task;
  }
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
