/**
 * The records of `Idempotency-Key` (docs/api.md, "Idempotency-Key") as both stores keep them, D1 for the
 * routes of a store's home database and the store's coordinator for uploads, and the rules every store
 * applies to them. The request side (the header, the fingerprint, the answers) is src/http/idempotency.ts.
 */

/** Whose key it is: a key is the token's own, within one store. */
export type KeyScope = { storeId: string; tokenHash: string; key: string };

/** A claim the request holds: its scope and its attempt, which every later write of the record presents. */
export type KeyRef = KeyScope & { attempt: number };

/** An answer as it is kept and given again: status, the kept headers, the body's text. */
export type KeptAnswer = { status: number; headers: Record<string, string>; body: string };

/**
 * A key's record. `leaseUntil` is the running request's claim (renewed while it runs); `changed` says the
 * change was made (in the change's own batch or transaction); `answer` is null until the request answered.
 */
export type KeyRecord = KeyScope & {
  fingerprint: string;
  attempt: number;
  leaseUntil: number;
  changed: boolean;
  answer: KeptAnswer | null;
  expiresAt: number;
};

/**
 * What a claim found. `run`: the request is the key's (first, or after one that died before its change);
 * `recover`: one that died after its change and before its answer, so the request answers without changing
 * again; `replay`: the kept answer; `mismatch`: the key belongs to another request; `running`: the first
 * request still runs; `unscoped`: the request names no resource of the token's stores, so nothing is kept.
 */
export type ClaimVerdict =
  | { kind: "run" | "recover"; ref: KeyRef }
  | { kind: "replay"; answer: KeptAnswer }
  | { kind: "mismatch" | "running" | "unscoped" };

/**
 * What a route's change works with: the claim to record with it (null without a key, or when nothing is kept),
 * and whether the change was already made by a request that died before its answer (then it only answers).
 */
export type KeyClaim = { ref: KeyRef | null; recovering: boolean };

/** How long a claim lasts unless renewed: a request whose process died holds its key no longer than this. */
export const keyLeaseMs = 15_000;
/** How often a running request renews its claim: a third of the lease, so two renewals may be late. */
export const keyRenewalMs = keyLeaseMs / 3;

/** What a claim asks for. */
export type ClaimWanted = { fingerprint: string; now: number; ttlMs: number };

/** A claim a route makes itself, in the call of its store that begins its change (complete's begin). */
export type KeyClaimRequest = { scope: KeyScope; wanted: ClaimWanted };

/** A claim left to the route, and how it hands the claim's verdict back (http/idempotency.ts `routeClaim`). */
export type RouteKeyClaim = KeyClaimRequest & { settle(verdict: ClaimVerdict): void };

/**
 * The record a claim leaves and its verdict, from the record it found (none, or one past its time, is a new
 * key). A claim whose lease ran out is taken over with the next attempt: before the change it runs again,
 * after it the request recovers the answer.
 */
export function claimRecord(
  found: KeyRecord | null,
  scope: KeyScope,
  wanted: ClaimWanted,
): { verdict: ClaimVerdict; record: KeyRecord | null } {
  const { fingerprint, now } = wanted;
  if (found === null || found.expiresAt <= now) {
    const record: KeyRecord = {
      ...scope,
      fingerprint,
      attempt: 1,
      leaseUntil: now + keyLeaseMs,
      changed: false,
      answer: null,
      expiresAt: now + wanted.ttlMs,
    };
    return { verdict: { kind: "run", ref: { ...scope, attempt: 1 } }, record };
  }
  if (found.fingerprint !== fingerprint) return { verdict: { kind: "mismatch" }, record: null };
  if (found.answer !== null) return { verdict: { kind: "replay", answer: found.answer }, record: null };
  if (found.leaseUntil > now) return { verdict: { kind: "running" }, record: null };
  const attempt = found.attempt + 1;
  const record = { ...found, attempt, leaseUntil: now + keyLeaseMs };
  return { verdict: { kind: found.changed ? "recover" : "run", ref: { ...scope, attempt } }, record };
}

/** The verdict of a claim that found `found` after its own write, which took the key if `took`. */
export function verdictOf(found: KeyRecord | null, fingerprint: string, took: boolean): ClaimVerdict {
  if (found === null) return { kind: "unscoped" };
  const { storeId, tokenHash, key, attempt } = found;
  if (took) return { kind: found.changed ? "recover" : "run", ref: { storeId, tokenHash, key, attempt } };
  if (found.fingerprint !== fingerprint) return { kind: "mismatch" };
  return found.answer !== null ? { kind: "replay", answer: found.answer } : { kind: "running" };
}

/** The headers an answer keeps, where present (the rest are the replay's own: request id, rate limit, CORS). */
export const keptHeaders = ["Content-Type", "Location", "Retry-After", "X-D1-Bookmark"] as const;

/** A JSON answer as kept, the same bytes the route sends (Hono's `c.json` is `JSON.stringify` too). */
export function jsonAnswer(status: number, value: unknown): KeptAnswer {
  return { status, headers: { "Content-Type": "application/json" }, body: JSON.stringify(value) };
}

/** An answer without a body (204). */
export function emptyAnswer(status: number): KeptAnswer {
  return { status, headers: {}, body: "" };
}
