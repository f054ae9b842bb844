import { DurableObject } from "cloudflare:workers";
import { FixedWindowCounter, type LimitVerdict } from "../limits/fixed-window";
import { stagedKey } from "./keys";
import {
  abandonComplete,
  beginComplete,
  beginPut,
  type CompleteOutcome,
  finishComplete,
  finishPut,
  type HostedFile,
  isGone,
  type PutAttempt,
  publicState,
  type Refusal,
  type Transition,
  type UploadRecord,
} from "./upload-state";

/**
 * How many lapsed uploads one alarm run removes: one R2 delete call takes at most 1000 keys, and a
 * bounded run keeps a backlog (say after an outage) from overrunning the alarm's time and memory.
 */
export const expiryBatchSize = 500;

type Row = {
  id: string;
  token_hash: string;
  filename: string;
  content_type: string;
  size: number;
  type: "image" | "file";
  state: UploadRecord["state"];
  expires_at: number;
  lease_until: number | null;
  result: string | null;
  failure: string | null;
};

export type NewUpload = Pick<
  UploadRecord,
  "id" | "tokenHash" | "filename" | "contentType" | "size" | "type" | "expiresAt"
>;
export type Outcome<T = UploadRecord> = { ok: true; upload: T } | { ok: false; refusal: Refusal };
export type UploadView = {
  id: string;
  state: ReturnType<typeof publicState>;
  expires_at: string;
  result: HostedFile | null;
};

function fromRow(row: Row): UploadRecord {
  return {
    id: row.id,
    tokenHash: row.token_hash,
    filename: row.filename,
    contentType: row.content_type,
    size: row.size,
    type: row.type,
    state: row.state,
    expiresAt: row.expires_at,
    leaseUntil: row.lease_until,
    result: row.result ? (JSON.parse(row.result) as HostedFile) : null,
    failure: row.failure,
  };
}

/**
 * One object per store: it owns the store's uploads and applies the transitions of upload-state.ts
 * atomically (a Durable Object runs one call at a time), counts the store's completes, and its alarm
 * deletes lapsed reservations together with their staged bytes. Bytes never pass through it.
 */
export class StoreCoordinator extends DurableObject<Env> {
  private readonly sql = this.ctx.storage.sql;
  private readonly completeCounter: FixedWindowCounter;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS uploads (
      id TEXT PRIMARY KEY, store_id TEXT NOT NULL, token_hash TEXT NOT NULL, filename TEXT NOT NULL,
      content_type TEXT NOT NULL, size INTEGER NOT NULL, type TEXT NOT NULL, state TEXT NOT NULL,
      expires_at INTEGER NOT NULL, lease_until INTEGER, result TEXT, failure TEXT)`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS uploads_pending ON uploads (expires_at) WHERE state <> 'completed'");
    this.completeCounter = new FixedWindowCounter(this.sql);
  }

  /** Counts one complete call of the store against its limit. */
  consumeCompleteLimit(limit: number, windowSeconds = 60): LimitVerdict {
    return this.completeCounter.consume("complete", limit, windowSeconds * 1000);
  }

  /** Records a new reservation and makes sure the alarm will clean it up. */
  async reserve(storeId: string, upload: NewUpload): Promise<void> {
    this.sql.exec(
      "INSERT INTO uploads (id, store_id, token_hash, filename, content_type, size, type, state, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?)",
      upload.id,
      storeId,
      upload.tokenHash,
      upload.filename,
      upload.contentType,
      upload.size,
      upload.type,
      upload.expiresAt,
    );
    await this.scheduleCleanup();
  }

  beginPut(id: string, attempt: PutAttempt, now = Date.now()): Outcome {
    return this.apply(id, (record) => beginPut(record, attempt, now));
  }

  finishPut(id: string, stored: boolean, now = Date.now()): Outcome {
    return this.apply(id, (record) => finishPut(record, stored, now));
  }

  beginComplete(id: string, now = Date.now()): Outcome {
    return this.apply(id, (record) => beginComplete(record, now));
  }

  finishComplete(id: string, outcome: CompleteOutcome): Outcome {
    return this.apply(id, (record) => finishComplete(record, outcome));
  }

  abandonComplete(id: string): Outcome {
    return this.apply(id, abandonComplete);
  }

  /** The upload as `GET /media-uploads/{id}` shows it; null when unknown or lapsed. */
  view(id: string, now = Date.now()): UploadView | null {
    const record = this.load(id);
    if (isGone(record, now)) return null;
    return {
      id: record.id,
      state: publicState(record.state),
      expires_at: new Date(record.expiresAt).toISOString(),
      result: record.result,
    };
  }

  /** Deletes one batch of lapsed, uncompleted uploads and their staged bytes, then waits for the next one. */
  override async alarm(): Promise<void> {
    await this.removeLapsed(expiryBatchSize);
  }

  /**
   * Deletes up to `batchSize` of the longest-lapsed uploads and their staged bytes in one R2 call, and
   * answers how many it removed. When more remain, the alarm is set to run again at once rather than
   * at the next expiry, so a backlog drains batch by batch without one run outgrowing its limits.
   */
  async removeLapsed(batchSize: number, now = Date.now()): Promise<number> {
    const lapsed = this.sql
      .exec<{ id: string; store_id: string }>(
        "SELECT id, store_id FROM uploads WHERE state <> 'completed' AND expires_at <= ? ORDER BY expires_at LIMIT ?",
        now,
        batchSize,
      )
      .toArray();
    if (lapsed.length > 0) {
      // Bytes first: if the delete fails, the rows stay and the alarm retries them.
      await this.env.BUCKET.delete(lapsed.map((row) => stagedKey(row.store_id, row.id)));
      for (const row of lapsed) this.sql.exec("DELETE FROM uploads WHERE id = ? AND expires_at <= ?", row.id, now);
    }
    if (lapsed.length === batchSize) await this.ctx.storage.setAlarm(Date.now());
    else await this.scheduleCleanup();
    return lapsed.length;
  }

  private async scheduleCleanup() {
    const next = this.sql
      .exec<{ at: number | null }>("SELECT MIN(expires_at) AS at FROM uploads WHERE state <> 'completed'")
      .one().at;
    if (next === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > next) await this.ctx.storage.setAlarm(next);
  }

  private load(id: string): UploadRecord | null {
    const row = this.sql.exec<Row>("SELECT * FROM uploads WHERE id = ?", id).toArray()[0];
    return row ? fromRow(row) : null;
  }

  /** Runs one transition and stores its next record; a call of the object is never interleaved with another. */
  private apply(id: string, transition: (record: UploadRecord | null) => Transition): Outcome {
    const result = transition(this.load(id));
    if ("refusal" in result) return { ok: false, refusal: result.refusal };
    const next = result.next;
    this.sql.exec(
      "UPDATE uploads SET state = ?, lease_until = ?, result = ?, failure = ? WHERE id = ?",
      next.state,
      next.leaseUntil,
      next.result ? JSON.stringify(next.result) : null,
      next.failure,
      id,
    );
    return { ok: true, upload: next };
  }
}
