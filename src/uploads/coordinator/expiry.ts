import { log } from "../../lib/log";
import { stagedKey } from "../../storage/keys";
import type { KeyRows } from "./key-rows";

/**
 * How many lapsed uploads one alarm run removes: one R2 delete call takes at most 1000 keys, and a
 * bounded run keeps a backlog (say after an outage) from overrunning the alarm's time and memory.
 */
export const expiryBatchSize = 500;

/** How many R2 multipart uploads the alarm aborts at once (one R2 call each; R2 has no batch abort). */
const abortConcurrency = 8;

/** When an abort failed, the alarm tries the lapsed uploads again after this long rather than at once. */
export const abortRetryMs = 60_000;

/**
 * When the alarm may remove an upload that is not completed: when it lapses, or, while a complete holds it
 * past that, when the complete's lease runs out (upload-state.ts `stillCompleting`).
 */
const removableAtSql =
  "CASE WHEN state = 'processing' AND lease_until > expires_at THEN lease_until ELSE expires_at END";

type LapsedRow = { id: string; store_id: string; r2_upload_id: string | null; hosted_key: string | null };

/** Whether an R2 abort failed because the multipart upload is already gone (aborted, completed or unknown). */
function isUploadGone(error: unknown): boolean {
  return /does not exist|NoSuchUpload|10024/i.test(error instanceof Error ? error.message : String(error));
}

/**
 * The coordinator's alarm: lapsed reservations are removed with their staged bytes, their R2 multipart
 * uploads and whatever a complete that never finished began to write.
 */
export class Expiry {
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly bucket: R2Bucket,
    private readonly keys: KeyRows,
  ) {}

  /**
   * Deletes up to `batchSize` of the longest-lapsed uploads: aborts the R2 multipart uploads of those
   * that take parts, then deletes the staged bytes of all, and the hosted object a complete that never
   * finished began to write, in one R2 call, and answers how many it removed. A completed upload is never
   * among them (its staged bytes may be what it serves), nor one a complete still holds by its lease.
   * When more remain, the alarm is set to run again at once rather than at the next expiry, so a backlog
   * drains batch by batch without one run outgrowing its limits; an upload whose abort failed stays, and
   * is tried again a minute later.
   */
  async removeLapsed(batchSize: number, now: number): Promise<number> {
    const sql = this.storage.sql;
    // Idempotency-Key records past their time go at the same alarm (key-rows.ts).
    this.keys.dropExpired(now);
    const lapsed = sql
      .exec<LapsedRow>(
        `SELECT id, store_id, r2_upload_id, hosted_key FROM uploads WHERE state <> 'completed' AND ${removableAtSql} <= ? ORDER BY expires_at LIMIT ?`,
        now,
        batchSize,
      )
      .toArray();
    const failed = new Set<string>();
    if (lapsed.length > 0) {
      // Bytes first: if an abort or the delete fails, the rows stay and the alarm retries them. At most
      // two keys an upload: one R2 delete takes 1000.
      await this.abortAll(lapsed, failed);
      await this.bucket.delete(
        lapsed.flatMap((row) => [stagedKey(row.store_id, row.id), ...(row.hosted_key ? [row.hosted_key] : [])]),
      );
      for (const row of lapsed) {
        if (failed.has(row.id)) continue;
        // Neither lapsed nor a complete's: none can have begun or finished meanwhile (stillCompleting).
        sql.exec("DELETE FROM uploads WHERE id = ? AND expires_at <= ? AND state <> 'completed'", row.id, now);
        sql.exec("DELETE FROM upload_parts WHERE upload_id = ?", row.id);
      }
    }
    if (failed.size > 0) await this.storage.setAlarm(Date.now() + abortRetryMs);
    else if (lapsed.length === batchSize) await this.storage.setAlarm(Date.now());
    else await this.schedule();
    return lapsed.length - failed.size;
  }

  /** Sets the alarm for the next upload that may lapse or key record whose time is up, unless it is set earlier already. */
  async schedule(): Promise<void> {
    const upload = this.storage.sql
      .exec<{ at: number | null }>(`SELECT MIN(${removableAtSql}) AS at FROM uploads WHERE state <> 'completed'`)
      .one().at;
    const key = this.keys.nextExpiry();
    const next = upload === null ? key : key === null ? upload : Math.min(upload, key);
    if (next === null) return;
    const current = await this.storage.getAlarm();
    if (current === null || current > next) await this.storage.setAlarm(next);
  }

  /** Aborts the R2 multipart uploads of `rows` that have one, a few at a time; adds the ids whose abort failed to `failed`. */
  private async abortAll(rows: LapsedRow[], failed: Set<string>): Promise<void> {
    const pending = rows.filter((row) => row.r2_upload_id !== null);
    const worker = async () => {
      for (let row = pending.shift(); row; row = pending.shift()) {
        if (!(await this.abort(row))) failed.add(row.id);
      }
    };
    await Promise.all(Array.from({ length: Math.min(abortConcurrency, pending.length) }, worker));
  }

  /** Aborts one lapsed upload's R2 multipart upload; false when R2 failed (an upload already gone is aborted). */
  private async abort(row: LapsedRow): Promise<boolean> {
    try {
      await this.bucket.resumeMultipartUpload(stagedKey(row.store_id, row.id), row.r2_upload_id as string).abort();
      return true;
    } catch (error) {
      if (isUploadGone(error)) return true;
      log.error("upload: aborting a lapsed multipart upload failed", { upload_id: row.id, error: String(error) });
      return false;
    }
  }
}
