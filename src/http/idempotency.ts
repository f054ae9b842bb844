import type { Context, MiddlewareHandler } from "hono";
import { setting } from "../config";
import { answerKey, claimKey, type KeyStore, releaseKey, renewKey } from "../db/idempotency-keys";
import { bookmarkHeader } from "../db/session";
import { legacyHome } from "../db/shards";
import type { AppEnv } from "../env";
import { toHex } from "../lib/encoding";
import {
  type ClaimVerdict,
  type ClaimWanted,
  type KeptAnswer,
  type KeyClaim,
  type KeyClaimRequest,
  type KeyRef,
  keptHeaders,
  keyLeaseMs,
  keyRenewalMs,
  type RouteKeyClaim,
} from "../lib/idempotency";
import { renewEvery } from "../lib/lease";
import type { GuardedEnv, PathOwner, StoreRule } from "./auth";
import { inBackground } from "./background";
import { ApiError } from "./errors";

/**
 * `Idempotency-Key` on every write (docs/api.md, "Idempotency-Key"): the first request with a key runs, its
 * answer is kept with the request's fingerprint, and a retry gets that answer again without running. The
 * records live with the store (src/lib/idempotency.ts has their rules): in its home database for most routes
 * (db/idempotency-keys.ts), in its coordinator for uploads; a route names its {@link KeyStorage}.
 *
 * The claim is written before the route runs and answered by the route's own first reads' time: the route
 * awaits it (with {@link keyClaim}) beside its first read, and only before its change, so a key adds no
 * sequential round trip when it has no record. The change's own batch or transaction records that the
 * change was made, so no crash between the change and the answer lets a retry make it again.
 */

export const idempotencyMessages = {
  invalid: "Invalid Idempotency-Key.",
  mismatch: "This Idempotency-Key was used for a different request.",
  running: "A request with this Idempotency-Key is still running; retry in a moment.",
} as const;

export const idempotencyHeader = "Idempotency-Key";
export const replayedHeader = "Idempotent-Replayed";

/** 1 to 255 characters of printable ASCII. */
const keyShape = /^[\x20-\x7e]{1,255}$/;

/**
 * Where a route's keys are kept, and the writes of a claim there. `claim` null: the route makes the claim
 * itself, in the call that begins its change ({@link routeClaim}), so the key costs no call of its own.
 */
type KeyStorage = {
  claim:
    | ((scope: { store: KeyStore; tokenHash: string; key: string }, wanted: ClaimWanted) => Promise<ClaimVerdict>)
    | null;
  renew(ref: KeyRef, until: number): Promise<boolean>;
  answer(ref: KeyRef, answer: KeptAnswer): Promise<boolean>;
  release(ref: KeyRef): Promise<void>;
};

/** The storage of a route's keys, for the request. */
export type KeyStorageOf = (c: Context<GuardedEnv<StoreRule>>) => KeyStorage;

/** Keys kept in the store's home database, beside the rows the route changes. */
export const homeDatabaseKeys: KeyStorageOf = (c) => ({
  claim: (scope, wanted) => claimKey(c.var.db, scope, wanted),
  renew: (ref, until) => renewKey(c.var.db, ref, until),
  answer: (ref, answer) => answerKey(c.var.db, ref, answer),
  release: (ref) => releaseKey(c.var.db, ref),
});

/** The claim's answer to the route: its change runs only under its own claim. */
class KeyTaken extends ApiError {
  constructor() {
    super(409, idempotencyMessages.running);
  }
}

/** The refusal of a change whose claim another request took over meanwhile (its lease ran out): that one runs. */
export function keyTakenOver(): ApiError {
  return new ApiError(409, idempotencyMessages.running, undefined, { "Retry-After": "1" });
}

const noKey: KeyClaim = { ref: null, recovering: false };

/**
 * The request's claim of its key, for the route's change: null `ref` without a key. Await it beside the
 * route's first read and before any change; when the key is not the request's (kept answer, another request,
 * still running) it throws, and the middleware answers for the key instead.
 */
export function keyClaim<E extends AppEnv>(c: Context<E>): Promise<KeyClaim> {
  return c.var.keyClaim ?? Promise.resolve(noKey);
}

/** The claim's answer to a route that made the claim itself: its ref (null: nothing kept), or a throw. */
function claimOf(verdict: ClaimVerdict): KeyClaim {
  if (verdict.kind === "run" || verdict.kind === "recover") {
    return { ref: verdict.ref, recovering: verdict.kind === "recover" };
  }
  if (verdict.kind === "unscoped") return noKey;
  throw new KeyTaken();
}

/**
 * For a route whose storage leaves the claim to it: what to claim, to send with the call that begins its
 * change, and `settled`, which hands the call's verdict back and answers the claim (it throws when the key is
 * not the request's, as {@link keyClaim} does). Null without a key.
 */
export function routeClaim<E extends AppEnv>(
  c: Context<E>,
): { request: KeyClaimRequest; settled(verdict: ClaimVerdict): KeyClaim } | null {
  // Typed through the route's own environment, which extends AppEnv's variables.
  const pending = c.var.keyRequest as RouteKeyClaim | undefined;
  if (!pending) return null;
  const { settle, ...request } = pending;
  return {
    request,
    settled: (verdict) => {
      settle(verdict);
      return claimOf(verdict);
    },
  };
}

/** A request's fingerprint: SHA-256 of the method, the path and query, and the body's bytes. */
export async function requestFingerprint(method: string, pathAndQuery: string, body: Uint8Array): Promise<string> {
  const head = new TextEncoder().encode(`${method}\n${pathAndQuery}\n`);
  const bytes = new Uint8Array(head.byteLength + body.byteLength);
  bytes.set(head);
  bytes.set(body, head.byteLength);
  return toHex(await crypto.subtle.digest("SHA-256", bytes));
}

/** The fingerprint of the request of `c` (its body stays readable: Hono keeps what it read). */
async function fingerprintOf(c: Context): Promise<string> {
  const url = new URL(c.req.url);
  return requestFingerprint(c.req.method, `${url.pathname}${url.search}`, new Uint8Array(await c.req.arrayBuffer()));
}

/** The store the key belongs to: the request's, or the one of the token's stores that owns the path's resource. */
function keyStore(c: Context<GuardedEnv<StoreRule>>, owner: PathOwner | undefined): KeyStore {
  const { storeId, scope } = c.var.caller;
  if (storeId !== null) return storeId;
  if (!owner) throw new Error("a write of no known store has no owner to find it by");
  return { kind: owner.kind, id: (c.req.param(owner.param) ?? "").toLowerCase(), scope };
}

/** Whether an answer is kept: 2xx, and 4xx but 401, 403 and 429 (they say nothing about the request's effect). */
export const keepable = (status: number) =>
  (status >= 200 && status < 300) || (status >= 400 && status < 500 && ![401, 403, 429].includes(status));

async function keptAnswer(response: Response): Promise<KeptAnswer> {
  const headers: Record<string, string> = {};
  for (const name of keptHeaders) {
    const value = response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  return { status: response.status, headers, body: await response.clone().text() };
}

/**
 * A response in place of the route's: its status, body and own headers, over the headers the request's
 * middleware set on the route's response (CORS, rate limit), not the route's own (body type, Retry-After…).
 */
function replacing(c: Context, status: number, headers: Record<string, string>, body: string | null): Response {
  const merged = new Headers(c.res.headers);
  for (const name of [...keptHeaders, "Content-Length", "ETag"]) merged.delete(name);
  for (const [name, value] of Object.entries(headers)) merged.set(name, value);
  c.res = undefined; // dropped whole: the setter would otherwise merge the route's headers back in
  return new Response(body, { status, headers: merged });
}

/** The answer for a key that is not the request's: the kept one again, or why not. */
function answerFor(c: Context, verdict: ClaimVerdict): Response | null {
  if (verdict.kind === "replay") {
    const { status, headers, body } = verdict.answer;
    return replacing(c, status, { ...headers, [replayedHeader]: "true" }, body === "" ? null : body);
  }
  if (verdict.kind === "mismatch" || verdict.kind === "running") {
    const running = verdict.kind === "running";
    const headers: Record<string, string> = {
      "Content-Type": "application/json",
      ...(running ? { "Retry-After": "1" } : {}),
    };
    return replacing(c, running ? 409 : 422, headers, JSON.stringify({ message: idempotencyMessages[verdict.kind] }));
  }
  return null;
}

/**
 * The middleware of a write (bearerRoute, POST and DELETE), after the guard and the path ids: the key checked
 * (400), the claim started, the route run while the claim is renewed, then the answer kept, or the key's
 * answer given instead. Keeping the answer happens after the response, in the background: a retry that comes
 * first is told the request still runs (409) unless the change's batch already kept it.
 */
export function idempotency(
  storage: KeyStorageOf,
  owner: PathOwner | undefined,
): MiddlewareHandler<GuardedEnv<StoreRule>> {
  return async (c, next) => {
    const key = c.req.header(idempotencyHeader);
    if (key === undefined) return next();
    if (!keyShape.test(key)) throw new ApiError(400, idempotencyMessages.invalid);
    const wanted = {
      fingerprint: await fingerprintOf(c),
      now: Date.now(),
      ttlMs: setting(c.env, "IDEMPOTENCY_TTL_SECONDS") * 1000,
    };
    const keys = storage(c);
    let stopRenewing = () => {};
    const store = keyStore(c, owner);
    const { tokenHash } = c.var.caller;
    let settle = (_verdict: ClaimVerdict) => {};
    const claiming =
      keys.claim?.({ store, tokenHash, key }, wanted) ??
      new Promise<ClaimVerdict>((resolve) => {
        settle = resolve;
        if (typeof store !== "string") throw new Error("a claim left to the route needs the request's store");
        c.set("keyRequest", { scope: { storeId: store, tokenHash, key }, wanted, settle: resolve });
      });
    const claimed = claiming.then((verdict) => {
      if (verdict.kind === "run" || verdict.kind === "recover") {
        const { ref } = verdict;
        stopRenewing = renewEvery(keyRenewalMs, () => keys.renew(ref, Date.now() + keyLeaseMs), {
          key: "idempotency",
        });
      }
      return verdict;
    });
    c.set("keyClaim", claimed.then(claimOf));
    c.var.keyClaim?.catch(() => {}); // awaited by the route; its failure is the route's (or answered below)
    try {
      await next();
    } finally {
      // A route that ended before making the claim left to it changed nothing: nothing is kept.
      settle({ kind: "unscoped" });
      // A claim that failed (the database refused it) is the route's failure, already rendered by it.
      await claimed.catch(() => {});
      stopRenewing();
    }
    const verdict = await claimed;
    const replaced = answerFor(c, verdict);
    if (replaced) {
      c.res = replaced;
      return;
    }
    if (verdict.kind !== "run" && verdict.kind !== "recover") return;
    const { ref } = verdict;
    const kept = keepable(c.res.status) ? await keptAnswer(c.res) : null;
    // The session's bookmark, which d1Session adds to the answer once this returns (db/session.ts).
    const bookmark = c.var.databases.bookmark(c.var.home ?? legacyHome);
    if (kept && bookmark) kept.headers[bookmarkHeader] = bookmark;
    inBackground(c, kept ? keys.answer(ref, kept) : keys.release(ref));
  };
}
