import { zValidator } from "@hono/zod-validator";
import type { MiddlewareHandler } from "hono";
import { z } from "zod";
import { optionalSetting, setting } from "../config";
import { MoveRefused, moveStore, recoverMove } from "../db/move";
import type { AppEnv } from "../env";
import { ApiError, messages } from "../http/errors";
import { announceLimit, clientIp, consumeLimit, refundLimit, tooManyRequests } from "../http/rate-limit";
import { forgetEveryRead } from "../http/read-cache";
import { createRouter } from "../http/router";
import { validationHook } from "../http/validate";
import { constantTimeEqual, sha256Hex } from "../lib/crypto";

/** The store id of a move's path, and the shard of its body (`{"to": "SHARD_<n>"}`). */
export const moveParams = zValidator(
  "param",
  z.object({ id: z.uuid({ error: messages.invalidStoreId }) }),
  validationHook,
);
export const moveBody = zValidator("json", z.object({ to: z.string().min(1) }), validationHook);

/**
 * Moves a store (src/db/move.ts) and returns its report; a refused move becomes the API error of its status.
 * The request lasts as long as the move: `TOKEN_CACHE_SECONDS`, the copy and about two seconds.
 */
export async function runMove(env: Env, storeId: string, to: string) {
  try {
    return await moveStore(env, {
      storeId: storeId.toLowerCase(),
      to,
      tokenCacheSeconds: setting(env, "TOKEN_CACHE_SECONDS"),
    });
  } catch (error) {
    if (error instanceof MoveRefused) throw new ApiError(error.status, error.message);
    throw error;
  }
}

/**
 * Finishes a move that stopped part-way (src/db/move.ts, recoverMove) and returns what it found and did. Lasts
 * about two seconds for a store still marked moving, plus the cleanup.
 */
export async function runRecovery(env: Env, storeId: string) {
  try {
    return await recoverMove(env, { storeId: storeId.toLowerCase() });
  } catch (error) {
    if (error instanceof MoveRefused) throw new ApiError(error.status, error.message);
    throw error;
  }
}

/**
 * The gate of the operator's routes: 404 without `STORE_MOVE_SECRET`, 429 while the client IP's wrong secrets
 * are spent, 401 for any bearer but the secret. The operator chooses the secret (`wrangler secret put`), so it
 * may be short: wrong ones are limited to `OPS_SECRET_LIMIT_PER_MINUTE` (10) per client IP.
 * Only wrong secrets spend that budget, so an operator's moves and recoveries, however many, never lock the
 * operator out; yet each attempt is counted before the comparison and a right secret gives its count back.
 * Counting only after a wrong comparison would let a burst of concurrent guesses all be compared before any
 * count lands; counted first, a guess past the limit is refused uncompared, and learns nothing, right or not.
 */
const operatorOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  const secret = optionalSetting(c.env, "STORE_MOVE_SECRET");
  if (!secret) throw new ApiError(404, messages.notFound);
  const subject = `ops:${clientIp(c)}`;
  const verdict = await consumeLimit(c.env.RATE_LIMITER, subject, setting(c.env, "OPS_SECRET_LIMIT_PER_MINUTE"));
  if (!verdict.allowed) throw tooManyRequests(verdict);
  const sent = /^Bearer +(\S+)$/i.exec(c.req.header("Authorization")?.trim() ?? "")?.[1] ?? "";
  // Compared as digests, so the comparison tells nothing of the secret's length either.
  if (!constantTimeEqual(await sha256Hex(sent), await sha256Hex(secret))) {
    announceLimit(c, verdict);
    throw new ApiError(401, messages.unauthenticated);
  }
  await refundLimit(c.env.RATE_LIMITER, subject);
  await next();
};

/**
 * The operator's routes of a deployment (`npm run store:move -- --url ...`), under `/api/v1/_ops`. They exist
 * only when the secret `STORE_MOVE_SECRET` is set, and answer only `Authorization: Bearer <that secret>`;
 * otherwise every one of them answers like an unknown route (no secret) or 401 (another bearer). A move writes
 * stores of no caller, so a request the gate let through forgets every read answer the isolate kept; one it
 * refused wrote nothing and forgets nothing.
 */
export const opsRoutes = createRouter()
  .use("*", operatorOnly, forgetEveryRead)
  .post("/stores/:id/move", moveParams, moveBody, async (c) =>
    c.json(await runMove(c.env, c.req.valid("param").id, c.req.valid("json").to)),
  )
  .post("/stores/:id/move/recover", moveParams, async (c) => c.json(await runRecovery(c.env, c.req.valid("param").id)));
