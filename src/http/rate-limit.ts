import type { Context, MiddlewareHandler } from "hono";
import { type SettingName, setting } from "../config";
import type { AppEnv } from "../env";
import { type LeaseClient, LeasedBudgets } from "../limits/budget-lease";
import type { LimitVerdict } from "../limits/fixed-window";
import { inBackground } from "./background";
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

/** Takes back one request of `subject` counted by {@link consumeLimit} in the window still open. */
export function refundLimit(namespace: Env["RATE_LIMITER"], subject: string, windowSeconds = 60): Promise<void> {
  return namespace.get(namespace.idFromName(subject)).refund(windowSeconds);
}

/** The client's IP as Cloudflare gives it: the subject of the per-IP limits. */
export const clientIp = (c: Context) => c.req.header("CF-Connecting-IP") ?? "unknown";

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
  return generalBudgets.take(subject, limit, windowSeconds, durableLeaseClient(c.env.RATE_LIMITER), (task) =>
    inBackground(c, task),
  );
}

/** The IETF draft `RateLimit-Policy` / `RateLimit` headers for a verdict. */
function rateLimitHeaders(verdict: LimitVerdict): Record<string, string> {
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

/** Puts the verdict's rate-limit headers on the response, whatever status it ends up with. */
export function announceLimit(c: Context, verdict: LimitVerdict): void {
  for (const [name, value] of Object.entries(rateLimitHeaders(verdict))) c.header(name, value);
}

/** Counts one request against `limit` calls per `windowSeconds` wherever the subject's counter lives. */
type LimitCounter = (limit: number, windowSeconds: number) => Promise<LimitVerdict>;

/** The counter of `subject` in its own rate-limiter object (e.g. `put:<ip>`). */
export function limiterObject(namespace: Env["RATE_LIMITER"], subject: string): LimitCounter {
  return (limit, windowSeconds) => consumeLimit(namespace, subject, limit, windowSeconds);
}

/** The configuration variables that are a per-minute limit. */
type LimitSetting = Extract<SettingName, `${string}_LIMIT_PER_MINUTE`>;

/**
 * A route's own rate limit: counts the request on the counter of `subjectOf(c)` against the `limit`
 * variable per 60 s, sets the rate-limit headers and answers 429 with `Retry-After` when it is spent.
 */
export function rateLimit<E extends AppEnv = AppEnv>(
  subjectOf: (c: Context<E>) => LimitCounter,
  limit: LimitSetting,
): MiddlewareHandler<E> {
  return async (c, next) => {
    const verdict = await subjectOf(c)(setting(c.env, limit), 60);
    announceLimit(c, verdict);
    if (!verdict.allowed) throw tooManyRequests(verdict);
    await next();
  };
}
