import type { Context, MiddlewareHandler } from "hono";
import { setting } from "../config";
import type { AppEnv } from "../env";
import { announceLimit, clientIp, consumeLimit, limiterObject, rateLimit, tooManyRequests } from "../http/rate-limit";
import type { LimitVerdict } from "../limits/fixed-window";

/*
 * The per-IP limits of the byte PUT and the part PUT (docs/api.md, "Rate limits", and docs/uploads.md,
 * "Limits and token guessing"). Every byte PUT counts toward `PUT_LIMIT_PER_MINUTE` (20), so upload tokens cannot be guessed
 * fast. Part PUTs count toward `PART_LIMIT_PER_MINUTE` (600) instead, so a 5 GB upload in parts is not
 * throttled; a part PUT naming no upload of its token counts toward the 20 as well, and while those 20
 * are spent every part PUT of the IP is refused before its token is looked at: a guess past the limit
 * learns nothing, whether it was right or not.
 */

const putSubject = (c: Context) => `put:${clientIp(c)}`;

/** The byte PUT's own limit: every attempt of a client IP counts. */
export const putLimit = rateLimit((c) => limiterObject(c.env.RATE_LIMITER, putSubject(c)), "PUT_LIMIT_PER_MINUTE");

/**
 * The IP's PUT window as it stands, without counting a request: a lease of no calls. (It opens a window
 * when none is open, which only moves where the IP's next window starts.)
 */
async function peekPutWindow(c: Context<AppEnv>): Promise<LimitVerdict> {
  const limit = setting(c.env, "PUT_LIMIT_PER_MINUTE");
  const namespace = c.env.RATE_LIMITER;
  const grant = await namespace.get(namespace.idFromName(putSubject(c))).lease(limit, 60, 0);
  return {
    allowed: grant.unleased > 0,
    limit,
    windowSeconds: grant.windowSeconds,
    remaining: grant.unleased,
    resetSeconds: Math.max(1, Math.ceil(grant.resetMs / 1000)),
  };
}

/**
 * The part PUT's limits, before anything else: 429 while the IP's byte-PUT limit is spent, else the part
 * counted toward the IP's part limit (429 past it). Both limiter calls go out at once.
 */
export const partLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  const [puts, parts] = await Promise.all([
    peekPutWindow(c),
    consumeLimit(c.env.RATE_LIMITER, `part:${clientIp(c)}`, setting(c.env, "PART_LIMIT_PER_MINUTE")),
  ]);
  if (!puts.allowed) throw tooManyRequests(puts);
  announceLimit(c, parts);
  if (!parts.allowed) throw tooManyRequests(parts);
  await next();
};

/**
 * Counts a part PUT that named no upload of its token (unknown upload, wrong or garbage token) toward the
 * IP's byte-PUT limit; the one that spends it answers 429 rather than the 404.
 */
export async function countPartMiss(c: Context<AppEnv>): Promise<void> {
  const verdict = await consumeLimit(c.env.RATE_LIMITER, putSubject(c), setting(c.env, "PUT_LIMIT_PER_MINUTE"));
  if (!verdict.allowed) throw tooManyRequests(verdict);
}
