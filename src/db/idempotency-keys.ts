import { and, eq, isNull, lte, not, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import {
  type ClaimVerdict,
  type ClaimWanted,
  type KeptAnswer,
  type KeyRecord,
  type KeyRef,
  keyLeaseMs,
  verdictOf,
} from "../lib/idempotency";
import { abortUnless, runAtomically } from "./batch";
import type { Database } from "./client";
import { fencedStore } from "./fence";
import { idempotencyKeys, products, variants } from "./schema";

/**
 * The `Idempotency-Key` records of a store's home database (schema.ts `idempotencyKeys`): the claim, one batch;
 * the statements that record the change in the change's own batch; the answer; the cron's clean-up.
 */

/**
 * The store a key belongs to: the request's store, or, for a token of several stores without `X-Service-Store`,
 * the store among `scope` that holds the product or variant `id` the path names (null when none does).
 */
export type KeyStore = string | { kind: "product" | "variant"; id: string; scope: readonly string[] };

function storeSql(store: KeyStore): SQL {
  if (typeof store === "string") return sql`${store}`;
  const within = sql.join(
    store.scope.map((id) => sql`${id}`),
    sql`, `,
  );
  if (store.kind === "product") {
    return sql`(SELECT ${products.storeId} FROM ${products} WHERE ${products.id} = ${store.id} AND ${products.storeId} IN (${within}))`;
  }
  return sql`(SELECT ${products.storeId} FROM ${variants} JOIN ${products} ON ${products.id} = ${variants.productId} WHERE ${variants.id} = ${store.id} AND ${products.storeId} IN (${within}))`;
}

const ofKey = (store: SQL, tokenHash: string, key: string) =>
  and(eq(idempotencyKeys.storeId, store), eq(idempotencyKeys.tokenHash, tokenHash), eq(idempotencyKeys.key, key));

const ofRef = (ref: KeyRef) =>
  and(ofKey(sql`${ref.storeId}`, ref.tokenHash, ref.key), eq(idempotencyKeys.attempt, ref.attempt));

function recordOf(row: typeof idempotencyKeys.$inferSelect): KeyRecord {
  const { status, headers, body, ...rest } = row;
  return { ...rest, answer: status === null ? null : { status, headers: headers ?? {}, body: body ?? "" } };
}

/**
 * Claims the key in one batch (one round trip): a record past its time is dropped; a new key is inserted
 * with attempt 1; a key whose claim ran out, of the same request and not answered, is taken over with the
 * next attempt; then the record is read. Its verdict: src/lib/idempotency.ts.
 */
export async function claimKey(
  db: Database,
  scope: { store: KeyStore; tokenHash: string; key: string },
  wanted: ClaimWanted,
): Promise<ClaimVerdict> {
  const { now, fingerprint } = wanted;
  const store = storeSql(scope.store);
  const where = ofKey(store, scope.tokenHash, scope.key);
  const [, taken, rows] = await db.batch([
    db.delete(idempotencyKeys).where(and(where, lte(idempotencyKeys.expiresAt, now))),
    db
      .insert(idempotencyKeys)
      // Every column in the table's order: store_id, token_hash, key, fingerprint, attempt, lease_until,
      // changed, status, headers, body, expires_at.
      .select(
        sql`SELECT ${store}, ${scope.tokenHash}, ${scope.key}, ${fingerprint}, 1, ${now + keyLeaseMs}, 0, NULL, NULL, NULL, ${now + wanted.ttlMs} WHERE ${store} IS NOT NULL`,
      )
      .onConflictDoUpdate({
        target: [idempotencyKeys.storeId, idempotencyKeys.tokenHash, idempotencyKeys.key],
        set: { attempt: sql`${idempotencyKeys.attempt} + 1`, leaseUntil: now + keyLeaseMs },
        setWhere: and(
          sql`${idempotencyKeys.fingerprint} = excluded.fingerprint`,
          isNull(idempotencyKeys.status),
          lte(idempotencyKeys.leaseUntil, now),
        ),
      }),
    db.select().from(idempotencyKeys).where(where),
  ]);
  const [row] = rows;
  return verdictOf(row ? recordOf(row) : null, fingerprint, taken.meta.changes > 0);
}

/**
 * The statements that record, in the change's own batch, that the change was made under claim `ref`, with
 * its answer when the route knows it before the batch: the batch aborts (GuardFailedError) when a later
 * request took the key over, so a claim that lost its key changes nothing. None without a claim (`ref` null). Placed right after the change's
 * statement with `ifChanged`, the record is written only if that statement changed a row; the statements
 * after it then see the record's count of changes, which is the change's.
 */
export function keyStatements(
  db: Database,
  ref: KeyRef | null,
  answer: KeptAnswer | null,
  options: { ifChanged?: boolean } = {},
): BatchItem<"sqlite">[] {
  if (ref === null) return [];
  return [
    abortUnless(db, sql`EXISTS (SELECT 1 FROM ${idempotencyKeys} WHERE ${ofRef(ref)})`),
    db
      .update(idempotencyKeys)
      .set({
        changed: true,
        ...(answer ? { status: answer.status, headers: answer.headers, body: answer.body } : {}),
      })
      .where(and(ofRef(ref), options.ifChanged ? sql`changes() > 0` : undefined)),
  ];
}

/** Keeps `answer` for the key; false when a later request took the key over. */
export async function answerKey(db: Database, ref: KeyRef, answer: KeptAnswer): Promise<boolean> {
  const result = await db
    .update(idempotencyKeys)
    .set({ status: answer.status, headers: answer.headers, body: answer.body })
    .where(ofRef(ref));
  return result.meta.changes > 0;
}

/** Renews the claim until `until`; false once a later request took the key over or it was answered. */
export async function renewKey(db: Database, ref: KeyRef, until: number): Promise<boolean> {
  const result = await db
    .update(idempotencyKeys)
    .set({ leaseUntil: until })
    .where(and(ofRef(ref), isNull(idempotencyKeys.status)));
  return result.meta.changes > 0;
}

/**
 * Lets the key go without an answer (a 5xx, 401, 403 or 429): a key whose change was not made is forgotten,
 * so a retry runs anew; one whose change was made is left for a retry to recover its answer at once.
 */
export async function releaseKey(db: Database, ref: KeyRef): Promise<void> {
  const unanswered = and(ofRef(ref), isNull(idempotencyKeys.status));
  await runAtomically(db, [
    db.delete(idempotencyKeys).where(and(unanswered, eq(idempotencyKeys.changed, false))),
    db.update(idempotencyKeys).set({ leaseUntil: 0 }).where(unanswered),
  ]);
}

/** Records deleted per statement by the cron: each run deletes at most this many per database. */
const expiredPerRun = 1000;

/**
 * Deletes the records past their time (at most {@link expiredPerRun}; the rest at the next run), not those of
 * a store being moved (fenced: its rows may not change); answers how many.
 */
export async function dropExpiredKeys(db: Database, now: number): Promise<number> {
  const result = await db
    .delete(idempotencyKeys)
    .where(
      sql`rowid IN (SELECT rowid FROM ${idempotencyKeys} WHERE ${and(
        lte(idempotencyKeys.expiresAt, now),
        not(fencedStore(idempotencyKeys.storeId)),
      )} LIMIT ${expiredPerRun})`,
    );
  return result.meta.changes;
}
