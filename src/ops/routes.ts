import { zValidator } from "@hono/zod-validator";
import { z } from "zod";
import { optionalSetting, setting } from "../config";
import { MoveRefused, moveStore, recoverMove } from "../db/move";
import { ApiError, messages } from "../http/errors";
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
 * The operator's routes of a deployment (`npm run store:move -- --url ...`), under `/api/v1/_ops`. They exist
 * only when the secret `STORE_MOVE_SECRET` is set, and answer only `Authorization: Bearer <that secret>`;
 * otherwise every one of them answers like an unknown route (no secret) or 401 (another bearer). A move writes
 * stores of no caller, so a request the gate let through forgets every read answer the isolate kept; one it
 * refused wrote nothing and forgets nothing.
 */
export const opsRoutes = createRouter()
  .use(
    "*",
    async (c, next) => {
      const secret = optionalSetting(c.env, "STORE_MOVE_SECRET");
      if (!secret) throw new ApiError(404, messages.notFound);
      const sent = /^Bearer +(\S+)$/i.exec(c.req.header("Authorization")?.trim() ?? "")?.[1] ?? "";
      // Compared as digests, so the comparison tells nothing of the secret's length either.
      if (!constantTimeEqual(await sha256Hex(sent), await sha256Hex(secret)))
        throw new ApiError(401, messages.unauthenticated);
      await next();
    },
    forgetEveryRead,
  )
  .post("/stores/:id/move", moveParams, moveBody, async (c) =>
    c.json(await runMove(c.env, c.req.valid("param").id, c.req.valid("json").to)),
  )
  .post("/stores/:id/move/recover", moveParams, async (c) => c.json(await runRecovery(c.env, c.req.valid("param").id)));
