import {
  type ClaimVerdict,
  type ClaimWanted,
  claimRecord,
  type KeptAnswer,
  type KeyRecord,
  type KeyRef,
  type KeyScope,
} from "../../lib/idempotency";

/**
 * The `Idempotency-Key` records of the store's prepares and completes, in its coordinator's SQLite storage
 * (migration 3): the rules of src/lib/idempotency.ts applied to rows. The coordinator is one store's, so a
 * record's store is the object's own and is not stored. A call of the object runs alone and its writes are
 * one transaction, so a record written in the call that makes the change is atomic with it.
 */

type KeyRow = {
  token_hash: string;
  key: string;
  fingerprint: string;
  attempt: number;
  lease_until: number;
  changed: number;
  status: number | null;
  headers: string | null;
  body: string | null;
  expires_at: number;
};

/** A change's record, for the call that makes the change: the claim it is made under, and its answer. */
export type KeptChange = { ref: KeyRef; answer: KeptAnswer };

export class KeyRows {
  constructor(private readonly sql: SqlStorage) {}

  private load(scope: KeyScope): KeyRecord | null {
    const row = this.sql
      .exec<KeyRow>("SELECT * FROM idempotency_keys WHERE token_hash = ? AND key = ?", scope.tokenHash, scope.key)
      .toArray()[0];
    if (!row) return null;
    return {
      ...scope,
      fingerprint: row.fingerprint,
      attempt: row.attempt,
      leaseUntil: row.lease_until,
      changed: row.changed === 1,
      answer:
        row.status === null
          ? null
          : { status: row.status, headers: JSON.parse(row.headers ?? "{}"), body: row.body ?? "" },
      expiresAt: row.expires_at,
    };
  }

  /** Claims the key (src/lib/idempotency.ts `claimRecord`) and answers the verdict. */
  claim(scope: KeyScope, wanted: ClaimWanted): ClaimVerdict {
    const { verdict, record } = claimRecord(this.load(scope), scope, wanted);
    if (record) {
      this.sql.exec(
        "INSERT OR REPLACE INTO idempotency_keys (token_hash, key, fingerprint, attempt, lease_until, changed, status, headers, body, expires_at) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?)",
        record.tokenHash,
        record.key,
        record.fingerprint,
        record.attempt,
        record.leaseUntil,
        record.changed ? 1 : 0,
        record.expiresAt,
      );
    }
    return verdict;
  }

  /** Whether claim `ref` still holds its key and may make its change. */
  holds(ref: KeyRef): boolean {
    const record = this.load(ref);
    return record !== null && record.attempt === ref.attempt && !record.changed && record.answer === null;
  }

  /** Records that the change was made, with its answer; call within the call that makes the change. */
  recordChange(change: KeptChange): void {
    this.answer(change.ref, change.answer, true);
  }

  /** Keeps `answer`; false when a later request took the key over. */
  answer(ref: KeyRef, answer: KeptAnswer, changed = false): boolean {
    return (
      this.sql.exec(
        `UPDATE idempotency_keys SET status = ?, headers = ?, body = ?${changed ? ", changed = 1" : ""} WHERE token_hash = ? AND key = ? AND attempt = ?`,
        answer.status,
        JSON.stringify(answer.headers),
        answer.body,
        ref.tokenHash,
        ref.key,
        ref.attempt,
      ).rowsWritten > 0
    );
  }

  /** Renews the claim until `until`; false once taken over or answered. */
  renew(ref: KeyRef, until: number): boolean {
    return (
      this.sql.exec(
        "UPDATE idempotency_keys SET lease_until = ? WHERE token_hash = ? AND key = ? AND attempt = ? AND status IS NULL",
        until,
        ref.tokenHash,
        ref.key,
        ref.attempt,
      ).rowsWritten > 0
    );
  }

  /** Lets an unanswered key go: forgotten if its change was not made, else left for a retry to recover. */
  release(ref: KeyRef): void {
    const where = "token_hash = ? AND key = ? AND attempt = ? AND status IS NULL";
    this.sql.exec(`DELETE FROM idempotency_keys WHERE ${where} AND changed = 0`, ref.tokenHash, ref.key, ref.attempt);
    this.sql.exec(`UPDATE idempotency_keys SET lease_until = 0 WHERE ${where}`, ref.tokenHash, ref.key, ref.attempt);
  }

  /** Deletes the records past their time; answers how many. */
  dropExpired(now: number): number {
    return this.sql.exec("DELETE FROM idempotency_keys WHERE expires_at <= ?", now).rowsWritten;
  }

  /** When the next record's time is up; null without records. */
  nextExpiry(): number | null {
    return this.sql.exec<{ at: number | null }>("SELECT MIN(expires_at) AS at FROM idempotency_keys").one().at;
  }
}
