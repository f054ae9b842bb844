import { DurableObject } from "cloudflare:workers";
import { FixedWindowCounter, type LimitVerdict } from "../limits/fixed-window";
import { stagedKey } from "./keys";
import { beginPart, finishPart, missingParts, type PartRecord, type PartTicket, type StoredPart } from "./parts-state";
import {
  abandonComplete,
  beginComplete,
  beginPut,
  type CompleteOutcome,
  finishComplete,
  finishPut,
  type HostedFile,
  isGone,
  type MultipartState,
  type PutAttempt,
  publicState,
  type Refusal,
  stillCompleting,
  type Transition,
  type UploadRecord,
} from "./upload-state";
import { type WidthClaim, WidthClaims } from "./width-claims";

/**
 * How many lapsed uploads one alarm run removes: one R2 delete call takes at most 1000 keys, and a
 * bounded run keeps a backlog (say after an outage) from overrunning the alarm's time and memory.
 */
export const expiryBatchSize = 500;

/** How many R2 multipart uploads the alarm aborts at once (one R2 call each; R2 has no batch abort). */
const abortConcurrency = 8;

/** When an abort failed, the alarm tries the lapsed uploads again after this long rather than at once. */
export const abortRetryMs = 60_000;

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
  part_size: number | null;
  part_count: number | null;
  r2_upload_id: string | null;
  max_expires_at: number | null;
  hosted_key: string | null;
};

type PartRow = {
  part_number: number;
  size: number | null;
  etag: string | null;
  lease_until: number | null;
};

export type NewUpload = Pick<
  UploadRecord,
  "id" | "tokenHash" | "filename" | "contentType" | "size" | "type" | "expiresAt"
> & { multipart?: MultipartState | null };
export type Outcome<T = UploadRecord> = { ok: true; upload: T } | { ok: false; refusal: Refusal };
/**
 * The upload a complete may host, with the parts it assembles first (none for a single-PUT upload) and the
 * hosted key an earlier complete of it began to write, if any.
 */
export type CompleteTicket = UploadRecord & { parts: StoredPart[]; hostedKey: string | null };
export type UploadView = {
  id: string;
  state: ReturnType<typeof publicState>;
  expires_at: string;
  result: HostedFile | null;
  /** How a multipart upload is cut (the route adds `part_url`); null for a single-PUT upload. */
  multipart: { part_size: number; part_count: number } | null;
  /** A multipart upload's stored parts in part order, until it is completed; null for a single-PUT upload. */
  parts: { part_number: number; size: number; etag: string }[] | null;
};

/** Columns added to `uploads` after the first release, with their types; objects created earlier get them on start. */
const laterColumns = {
  part_size: "INTEGER",
  part_count: "INTEGER",
  r2_upload_id: "TEXT",
  max_expires_at: "INTEGER",
  // Where a complete writes the hosted object, recorded before it writes: see recordHostedKey.
  hosted_key: "TEXT",
} as const;

/**
 * When the alarm may remove an upload that is not completed: when it lapses, or, while a complete holds it
 * past that, when the complete's lease runs out (upload-state.ts `stillCompleting`).
 */
const removableAtSql =
  "CASE WHEN state = 'processing' AND lease_until > expires_at THEN lease_until ELSE expires_at END";

/** The ETag of a part as HTTP carries it (a quoted entity tag), also in the part list, so a client compares them as they are. */
export function partEtag(etag: string): string {
  return `"${etag}"`;
}

/** Whether an R2 abort failed because the multipart upload is already gone (aborted, completed or unknown). */
function isUploadGone(error: unknown): boolean {
  return /does not exist|NoSuchUpload|10024/i.test(error instanceof Error ? error.message : String(error));
}

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
    multipart:
      row.part_size === null || row.part_count === null || row.max_expires_at === null
        ? null
        : {
            partSize: row.part_size,
            partCount: row.part_count,
            r2UploadId: row.r2_upload_id,
            maxExpiresAt: row.max_expires_at,
          },
  };
}

function fromPartRow(row: PartRow): PartRecord {
  return { partNumber: row.part_number, size: row.size, etag: row.etag, leaseUntil: row.lease_until };
}

function storedParts(parts: readonly PartRecord[]): StoredPart[] {
  return parts.flatMap((part) =>
    part.etag !== null && part.size !== null ? [{ partNumber: part.partNumber, size: part.size, etag: part.etag }] : [],
  );
}

/**
 * One object per store: it owns the store's uploads and applies the transitions of upload-state.ts
 * atomically (a Durable Object runs one call at a time), keeps the parts of multipart uploads, counts
 * the store's completes, and its alarm deletes lapsed reservations together with their staged bytes and
 * aborts their R2 multipart uploads. Bytes never pass through it.
 */
export class StoreCoordinator extends DurableObject<Env> {
  private readonly sql = this.ctx.storage.sql;
  private readonly completeCounter: FixedWindowCounter;
  private readonly widthClaims = new WidthClaims();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS uploads (
      id TEXT PRIMARY KEY, store_id TEXT NOT NULL, token_hash TEXT NOT NULL, filename TEXT NOT NULL,
      content_type TEXT NOT NULL, size INTEGER NOT NULL, type TEXT NOT NULL, state TEXT NOT NULL,
      expires_at INTEGER NOT NULL, lease_until INTEGER, result TEXT, failure TEXT)`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS uploads_pending ON uploads (expires_at) WHERE state <> 'completed'");
    const present = new Set(
      this.sql
        .exec<{ name: string }>("PRAGMA table_info(uploads)")
        .toArray()
        .map((column) => column.name),
    );
    for (const [name, type] of Object.entries(laterColumns)) {
      if (!present.has(name)) this.sql.exec(`ALTER TABLE uploads ADD COLUMN ${name} ${type}`);
    }
    this.sql.exec(`CREATE TABLE IF NOT EXISTS upload_parts (
      upload_id TEXT NOT NULL, part_number INTEGER NOT NULL, size INTEGER, etag TEXT, lease_until INTEGER,
      PRIMARY KEY (upload_id, part_number)) WITHOUT ROWID`);
    this.completeCounter = new FixedWindowCounter(this.sql);
  }

  /** Counts one complete call of the store against its limit. */
  consumeCompleteLimit(limit: number, windowSeconds = 60): LimitVerdict {
    return this.completeCounter.consume("complete", limit, windowSeconds * 1000);
  }

  /** `?width=` generation: whether this request makes variant `key` (see width-claims.ts). */
  claimWidth(key: string, waitedOn: number | null, notStored = false, now = Date.now()): WidthClaim {
    return this.widthClaims.claim(key, waitedOn, now, notStored);
  }

  /** The end of a `?width=` generation this object handed out. */
  finishWidth(key: string, attempt: number, made: boolean, now = Date.now()): void {
    this.widthClaims.finish(key, attempt, made, now);
  }

  /** Records a new reservation (with its R2 multipart upload, if it takes parts) and makes sure the alarm will clean it up. */
  async reserve(storeId: string, upload: NewUpload): Promise<void> {
    const plan = upload.multipart ?? null;
    this.sql.exec(
      "INSERT INTO uploads (id, store_id, token_hash, filename, content_type, size, type, state, expires_at, part_size, part_count, r2_upload_id, max_expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, ?, ?, ?)",
      upload.id,
      storeId,
      upload.tokenHash,
      upload.filename,
      upload.contentType,
      upload.size,
      upload.type,
      upload.expiresAt,
      plan?.partSize ?? null,
      plan?.partCount ?? null,
      plan?.r2UploadId ?? null,
      plan?.maxExpiresAt ?? null,
    );
    await this.scheduleCleanup();
  }

  beginPut(id: string, attempt: PutAttempt, now = Date.now()): Outcome {
    return this.apply(id, (record) => beginPut(record, attempt, now));
  }

  finishPut(id: string, stored: boolean, now = Date.now()): Outcome {
    return this.apply(id, (record) => finishPut(record, stored, now));
  }

  /** A part PUT begins: the part's lease and where its bytes go, or why not (see parts-state.ts). */
  beginPart(
    id: string,
    attempt: PutAttempt & { partNumber: number },
    now = Date.now(),
  ): { ok: true; ticket: PartTicket } | { ok: false; refusal: Refusal } {
    const result = beginPart(this.load(id), this.loadPart(id, attempt.partNumber), attempt, now);
    if ("refusal" in result) return { ok: false, refusal: result.refusal };
    this.savePart(id, result.next);
    return { ok: true, ticket: result.ticket };
  }

  /**
   * A part PUT ends: records the stored part and extends the reservation by `ttlMs` (capped), or frees
   * the part for another PUT. Answers the reservation's new end.
   */
  finishPart(
    id: string,
    partNumber: number,
    finish: { leaseUntil: number; stored: { size: number; etag: string } | null },
    ttlMs: number,
    now = Date.now(),
  ): Outcome<{ expiresAt: number }> {
    const result = finishPart(this.load(id), this.loadPart(id, partNumber), finish, now, ttlMs);
    if ("refusal" in result) return { ok: false, refusal: result.refusal };
    this.savePart(id, result.next);
    this.sql.exec("UPDATE uploads SET expires_at = ? WHERE id = ?", result.upload.expiresAt, id);
    return { ok: true, upload: { expiresAt: result.upload.expiresAt } };
  }

  /** A complete begins; a multipart upload's stored parts come with it, for complete to assemble. */
  beginComplete(id: string, now = Date.now()): Outcome<CompleteTicket> {
    let parts: PartRecord[] = [];
    const outcome = this.apply(id, (current) => {
      // Parts not yet assembled are what complete will assemble; after that the staged object is the upload.
      if (current?.multipart?.r2UploadId) parts = this.loadParts(id);
      return beginComplete(current, now, current?.multipart ? missingParts(current.multipart, parts) : 0);
    });
    if (!outcome.ok) return outcome;
    return { ok: true, upload: { ...outcome.upload, parts: storedParts(parts), hostedKey: this.hostedKey(id) } };
  }

  /**
   * A complete is about to write its hosted object at `key` (a WebP, or an in-place object that names the
   * staged bytes). Recorded first, so that if the complete never finishes and the reservation lapses, the
   * alarm removes that object with the staged bytes: nothing is left that names removed bytes. Refused
   * (404) once the complete may no longer finish (upload-state.ts `stillCompleting`).
   */
  recordHostedKey(id: string, key: string, now = Date.now()): Outcome<{ hostedKey: string }> {
    if (!stillCompleting(this.load(id), now)) return { ok: false, refusal: { status: 404, reason: "not_found" } };
    this.sql.exec("UPDATE uploads SET hosted_key = ? WHERE id = ?", key, id);
    return { ok: true, upload: { hostedKey: key } };
  }

  /** A complete ends; the parts of a multipart upload, now one object, are forgotten once it is completed. */
  finishComplete(id: string, outcome: CompleteOutcome, now = Date.now()): Outcome {
    const finished = this.apply(id, (record) => finishComplete(record, outcome, now));
    if (finished.ok && finished.upload.state === "completed") {
      this.sql.exec("DELETE FROM upload_parts WHERE upload_id = ?", id);
    }
    return finished;
  }

  /** A complete failed for a reason other than the bytes; `partsAssembled` says whether a multipart upload's parts became one object. */
  abandonComplete(id: string, partsAssembled = true): Outcome {
    return this.apply(id, (record) => abandonComplete(record, partsAssembled));
  }

  /** The upload as `GET /media-uploads/{id}` shows it; null when unknown or lapsed. */
  view(id: string, now = Date.now()): UploadView | null {
    const record = this.load(id);
    if (isGone(record, now)) return null;
    const plan = record.multipart;
    const parts = plan ? storedParts(this.loadParts(id)) : null;
    // Every part stored is every byte stored, whether or not a complete has assembled them yet.
    const allStored = plan !== null && record.state === "reserved" && parts?.length === plan.partCount;
    return {
      id: record.id,
      state: allStored ? "stored" : publicState(record.state),
      expires_at: new Date(record.expiresAt).toISOString(),
      result: record.result,
      multipart: plan ? { part_size: plan.partSize, part_count: plan.partCount } : null,
      parts:
        parts?.map((part) => ({ part_number: part.partNumber, size: part.size, etag: partEtag(part.etag) })) ?? null,
    };
  }

  /** Deletes one batch of lapsed, uncompleted uploads and their staged bytes, then waits for the next one. */
  override async alarm(): Promise<void> {
    await this.removeLapsed(expiryBatchSize);
  }

  /**
   * Deletes up to `batchSize` of the longest-lapsed uploads: aborts the R2 multipart uploads of those
   * that take parts, then deletes the staged bytes of all, and the hosted object a complete that never
   * finished began to write, in one R2 call, and answers how many it removed. A completed upload is never
   * among them (its staged bytes may be what it serves), nor one a complete still holds by its lease.
   * When more remain, the alarm is set to run again at once rather than at the next expiry, so a backlog
   * drains batch by batch without one run outgrowing its limits; an upload whose abort failed stays, and
   * is tried again a minute later.
   */
  async removeLapsed(batchSize: number, now = Date.now()): Promise<number> {
    const lapsed = this.sql
      .exec<{ id: string; store_id: string; r2_upload_id: string | null; hosted_key: string | null }>(
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
      await this.env.BUCKET.delete(
        lapsed.flatMap((row) => [stagedKey(row.store_id, row.id), ...(row.hosted_key ? [row.hosted_key] : [])]),
      );
      for (const row of lapsed) {
        if (failed.has(row.id)) continue;
        // Neither lapsed nor a complete's: none can have begun or finished meanwhile (stillCompleting).
        this.sql.exec("DELETE FROM uploads WHERE id = ? AND expires_at <= ? AND state <> 'completed'", row.id, now);
        this.sql.exec("DELETE FROM upload_parts WHERE upload_id = ?", row.id);
      }
    }
    if (failed.size > 0) await this.ctx.storage.setAlarm(Date.now() + abortRetryMs);
    else if (lapsed.length === batchSize) await this.ctx.storage.setAlarm(Date.now());
    else await this.scheduleCleanup();
    return lapsed.length - failed.size;
  }

  /** Aborts the R2 multipart uploads of `rows` that have one, a few at a time; adds the ids whose abort failed to `failed`. */
  private async abortAll(rows: { id: string; store_id: string; r2_upload_id: string | null }[], failed: Set<string>) {
    const pending = rows.filter((row) => row.r2_upload_id !== null);
    const worker = async () => {
      for (let row = pending.shift(); row; row = pending.shift()) {
        try {
          await this.env.BUCKET.resumeMultipartUpload(
            stagedKey(row.store_id, row.id),
            row.r2_upload_id as string,
          ).abort();
        } catch (error) {
          if (isUploadGone(error)) continue;
          failed.add(row.id);
          console.error(
            JSON.stringify({
              level: "error",
              message: "upload: aborting a lapsed multipart upload failed",
              upload_id: row.id,
              error: String(error),
            }),
          );
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(abortConcurrency, pending.length) }, worker));
  }

  private async scheduleCleanup() {
    const next = this.sql
      .exec<{ at: number | null }>(`SELECT MIN(${removableAtSql}) AS at FROM uploads WHERE state <> 'completed'`)
      .one().at;
    if (next === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > next) await this.ctx.storage.setAlarm(next);
  }

  private hostedKey(id: string): string | null {
    return this.sql.exec<{ key: string | null }>("SELECT hosted_key AS key FROM uploads WHERE id = ?", id).one().key;
  }

  private load(id: string): UploadRecord | null {
    const row = this.sql.exec<Row>("SELECT * FROM uploads WHERE id = ?", id).toArray()[0];
    return row ? fromRow(row) : null;
  }

  private loadPart(id: string, partNumber: number): PartRecord | null {
    const row = this.sql
      .exec<PartRow>(
        "SELECT part_number, size, etag, lease_until FROM upload_parts WHERE upload_id = ? AND part_number = ?",
        id,
        partNumber,
      )
      .toArray()[0];
    return row ? fromPartRow(row) : null;
  }

  private loadParts(id: string): PartRecord[] {
    return this.sql
      .exec<PartRow>(
        "SELECT part_number, size, etag, lease_until FROM upload_parts WHERE upload_id = ? ORDER BY part_number",
        id,
      )
      .toArray()
      .map(fromPartRow);
  }

  private savePart(id: string, part: PartRecord) {
    this.sql.exec(
      "INSERT INTO upload_parts (upload_id, part_number, size, etag, lease_until) VALUES (?, ?, ?, ?, ?) ON CONFLICT (upload_id, part_number) DO UPDATE SET size = excluded.size, etag = excluded.etag, lease_until = excluded.lease_until",
      id,
      part.partNumber,
      part.size,
      part.etag,
      part.leaseUntil,
    );
  }

  /** Runs one transition and stores its next record; a call of the object is never interleaved with another. */
  private apply(id: string, transition: (record: UploadRecord | null) => Transition): Outcome {
    const result = transition(this.load(id));
    if ("refusal" in result) return { ok: false, refusal: result.refusal };
    const next = result.next;
    this.sql.exec(
      "UPDATE uploads SET state = ?, lease_until = ?, result = ?, failure = ?, r2_upload_id = ? WHERE id = ?",
      next.state,
      next.leaseUntil,
      next.result ? JSON.stringify(next.result) : null,
      next.failure,
      next.multipart?.r2UploadId ?? null,
      id,
    );
    return { ok: true, upload: next };
  }
}
