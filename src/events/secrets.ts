import { eq, sql } from "drizzle-orm";
import { runAtomically } from "../db/batch";
import type { Database } from "../db/client";
import { keyStatements } from "../db/idempotency-keys";
import { webhookSecrets } from "../db/schema";
import { jsonAnswer, type KeyRef } from "../lib/idempotency";
import { newWebhookSecret } from "./signing";

type SecretRow = typeof webhookSecrets.$inferSelect;

/**
 * The store's secret row, made on first need; two callers racing keep the first one written. Once it exists the
 * insert selects no row, so reading the secret writes nothing (a store being moved is fenced for writes, not
 * for reads: docs/scaling.md).
 */
export async function storeSecretRow(db: Database, storeId: string, now = new Date()): Promise<SecretRow> {
  const [, rows] = await db.batch([
    db
      .insert(webhookSecrets)
      // Every column in the table's order: store_id, secret, previous_secret, previous_until, created_at.
      .select(
        sql`SELECT ${storeId}, ${newWebhookSecret()}, NULL, NULL, ${now.getTime()} WHERE NOT EXISTS (SELECT 1 FROM ${webhookSecrets} WHERE ${webhookSecrets.storeId} = ${storeId})`,
      )
      .onConflictDoNothing({ target: webhookSecrets.storeId }),
    db.select().from(webhookSecrets).where(eq(webhookSecrets.storeId, storeId)),
  ]);
  const [row] = rows;
  if (!row) throw new Error(`webhook secret of store ${storeId} was not written`);
  return row;
}

/** The secrets that sign a delivery now: the current one, and the previous one during its overlap. */
export function signingSecrets(row: SecretRow, now = new Date()): string[] {
  return row.previousSecret && row.previousUntil && row.previousUntil > now
    ? [row.secret, row.previousSecret]
    : [row.secret];
}

/**
 * Replaces the store's secret with a new one; the replaced one keeps signing, beside it, for `overlapSeconds`.
 * Answers the new secret. The store's secret row must exist ({@link storeSecretRow}). `key`: the request's
 * `Idempotency-Key` claim, recorded with its answer (`{secret}`) in the rotation's batch.
 */
export async function rotateStoreSecret(
  db: Database,
  storeId: string,
  overlapSeconds: number,
  options: { now?: Date; key?: KeyRef | null } = {},
): Promise<string> {
  const now = options.now ?? new Date();
  const secret = newWebhookSecret();
  await runAtomically(db, [
    // One statement: two rotations at once each keep the secret they replaced, never a half-written pair.
    db
      .update(webhookSecrets)
      .set({
        previousSecret: sql`${webhookSecrets.secret}`,
        previousUntil: new Date(now.getTime() + overlapSeconds * 1000),
        secret,
      })
      .where(eq(webhookSecrets.storeId, storeId)),
    ...keyStatements(db, options.key ?? null, jsonAnswer(200, { secret })),
  ]);
  return secret;
}
