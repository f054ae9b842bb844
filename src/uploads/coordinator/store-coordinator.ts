import { DurableObject } from "cloudflare:workers";
import type { ClaimVerdict, ClaimWanted, KeptAnswer, KeyClaimRequest, KeyRef, KeyScope } from "../../lib/idempotency";
import { FixedWindowCounter, type LimitVerdict } from "../../limits/fixed-window";
import {
  beginPart,
  finishPart,
  missingParts,
  type PartRecord,
  type PartTicket,
  renewPart,
  type StoredPart,
} from "../parts-state";
import {
  abandonComplete,
  beginComplete,
  beginPut,
  type CompleteOutcome,
  finishComplete,
  finishPut,
  isGone,
  type PutAttempt,
  type Refusal,
  renewComplete,
  renewPut,
  type Transition,
  type UploadRecord,
} from "../upload-state";
import { type WidthClaim, WidthClaims } from "../width-claims";
import { Expiry, expiryBatchSize } from "./expiry";
import { type KeptChange, KeyRows } from "./key-rows";
import { migrate } from "./migrations";
import { type NewUpload, storedParts, UploadRows } from "./upload-rows";

export type Outcome<T = UploadRecord> = { ok: true; upload: T } | { ok: false; refusal: Refusal };
/**
 * The upload a complete may host, with the parts it assembles first (none for a single-PUT upload) and the
 * hosted key an earlier complete of it began to write, if any.
 */
export type CompleteTicket = UploadRecord & { parts: StoredPart[]; hostedKey: string | null };
/** An upload as `GET /media-uploads/{id}` reads it: the record, and a multipart upload's stored parts in part order. */
export type UploadStatusData = { upload: UploadRecord; parts: StoredPart[] | null };

function outcome(result: Transition): Outcome {
  return "refusal" in result ? { ok: false, refusal: result.refusal } : { ok: true, upload: result.next };
}

/**
 * One object per store. It holds the store's uploads and their parts (upload-rows.ts), to which it applies
 * the transitions of upload-state.ts and parts-state.ts atomically (a Durable Object runs one call at a
 * time); the store's complete limit (limits/fixed-window.ts); the `?width=` claims (width-claims.ts); and
 * the alarm that removes lapsed reservations with their bytes (expiry.ts). Its storage is migrated by
 * migrations.ts when it starts. It answers data; the routes make the API's answers of it. Bytes never pass
 * through it.
 */
export class StoreCoordinator extends DurableObject<Env> {
  private readonly rows: UploadRows;
  private readonly keys: KeyRows;
  private readonly expiry: Expiry;
  private readonly completeCounter: FixedWindowCounter;
  private readonly widthClaims = new WidthClaims();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage);
    this.rows = new UploadRows(ctx.storage.sql);
    this.keys = new KeyRows(ctx.storage.sql);
    this.expiry = new Expiry(ctx.storage, env.BUCKET, this.keys);
    this.completeCounter = new FixedWindowCounter(ctx.storage.sql);
  }

  /** Counts one complete call of the store against its limit. */
  consumeCompleteLimit(limit: number, windowSeconds = 60): LimitVerdict {
    return this.completeCounter.consume("complete", limit, windowSeconds * 1000);
  }

  /** `?width=` generation: whether this request makes variant `key` (see width-claims.ts). */
  claimWidth(key: string, waitedOn: number | null, notStored = false, now = Date.now()): WidthClaim {
    return this.widthClaims.claim(key, waitedOn, now, notStored);
  }

  /** A `?width=` generation still under way keeps its claim (see width-claims.ts); false once taken over. */
  renewWidth(key: string, attempt: number, now = Date.now()): boolean {
    return this.widthClaims.renew(key, attempt, now);
  }

  /** The end of a `?width=` generation this object handed out. */
  finishWidth(key: string, attempt: number, made: boolean, now = Date.now()): void {
    this.widthClaims.finish(key, attempt, made, now);
  }

  /**
   * Records a new reservation (with its R2 multipart upload, if it takes parts) and makes sure the alarm will
   * clean it up. With `kept`, the prepare's `Idempotency-Key` record is written with it, in the same
   * transaction; answers false, reserving nothing, when a later request took that key over.
   */
  async reserve(storeId: string, upload: NewUpload, kept?: KeptChange): Promise<boolean> {
    if (kept && !this.keys.holds(kept.ref)) return false;
    this.rows.insert(storeId, upload);
    if (kept) this.keys.recordChange(kept);
    await this.expiry.schedule();
    return true;
  }

  /** Claims an `Idempotency-Key` of the store's uploads (src/lib/idempotency.ts); the alarm drops it after its time. */
  async claimKey(scope: KeyScope, wanted: ClaimWanted): Promise<ClaimVerdict> {
    const verdict = this.keys.claim(scope, wanted);
    await this.expiry.schedule();
    return verdict;
  }

  renewKey(ref: KeyRef, until: number): boolean {
    return this.keys.renew(ref, until);
  }

  answerKey(ref: KeyRef, answer: KeptAnswer): boolean {
    return this.keys.answer(ref, answer);
  }

  releaseKey(ref: KeyRef): void {
    this.keys.release(ref);
  }

  beginPut(id: string, attempt: PutAttempt, now = Date.now()): Outcome {
    return outcome(this.rows.apply(id, (record) => beginPut(record, attempt, now)));
  }

  /** Byte PUT `attempt`, still streaming, holds the upload for another `leaseMs` (upload-state.ts `renewPut`). */
  renewPut(id: string, attempt: number, now = Date.now()): Outcome<{ leaseUntil: number }> {
    const renewed = outcome(this.rows.apply(id, (record) => renewPut(record, attempt, now)));
    return renewed.ok ? { ok: true, upload: { leaseUntil: renewed.upload.leaseUntil as number } } : renewed;
  }

  /** Byte PUT `attempt` ends: stored, or not; refused, changing nothing, once a later PUT took the upload over. */
  finishPut(id: string, attempt: number, stored: boolean, now = Date.now()): Outcome {
    return outcome(this.rows.apply(id, (record) => finishPut(record, attempt, stored, now)));
  }

  /** A part PUT begins: the part's lease and where its bytes go, or why not (see parts-state.ts). */
  beginPart(
    id: string,
    attempt: PutAttempt & { partNumber: number },
    now = Date.now(),
  ): { ok: true; ticket: PartTicket } | { ok: false; refusal: Refusal } {
    const result = beginPart(this.rows.load(id), this.rows.loadPart(id, attempt.partNumber), attempt, now);
    if ("refusal" in result) return { ok: false, refusal: result.refusal };
    this.rows.savePart(id, result.next);
    return { ok: true, ticket: result.ticket };
  }

  /** Part PUT `attempt`, still streaming, holds its part for another `leaseMs` (parts-state.ts `renewPart`). */
  renewPart(id: string, partNumber: number, attempt: number, now = Date.now()): Outcome<{ leaseUntil: number }> {
    const result = renewPart(this.rows.load(id), this.rows.loadPart(id, partNumber), attempt, now);
    if ("refusal" in result) return { ok: false, refusal: result.refusal };
    this.rows.savePart(id, result.next);
    return { ok: true, upload: { leaseUntil: result.next.leaseUntil as number } };
  }

  /**
   * A part PUT ends: records the stored part and extends the reservation by `ttlMs` (capped), or frees
   * the part for another PUT. Answers the reservation's new end. Refused, recording nothing, once a later
   * PUT of the part took it over.
   */
  finishPart(
    id: string,
    partNumber: number,
    finish: { attempt: number; stored: { size: number; etag: string } | null },
    ttlMs: number,
    now = Date.now(),
  ): Outcome<{ expiresAt: number }> {
    const result = finishPart(this.rows.load(id), this.rows.loadPart(id, partNumber), finish, now, ttlMs);
    if ("refusal" in result) return { ok: false, refusal: result.refusal };
    this.rows.savePart(id, result.next);
    this.rows.setExpiresAt(id, result.upload.expiresAt);
    return { ok: true, upload: { expiresAt: result.upload.expiresAt } };
  }

  /**
   * A complete begins: a new attempt (`completeAttempt` of the ticket) holding the upload for
   * `completeLeaseMs`, which it renews while it runs and presents to every later call. A multipart upload's
   * stored parts come with it, for complete to assemble.
   */
  async beginComplete(
    id: string,
    now = Date.now(),
    key?: KeyClaimRequest,
  ): Promise<Outcome<CompleteTicket> & { key?: ClaimVerdict }> {
    if (!key) return this.begin(id, now);
    // The complete's Idempotency-Key, claimed in the same call (no coordinator call more): a key that is not
    // this request's begins nothing.
    const verdict = this.keys.claim(key.scope, key.wanted);
    const ours = verdict.kind === "run" || verdict.kind === "recover";
    // Claim and begin before anything is awaited: no other call comes in between.
    const begun: Outcome<CompleteTicket> = ours
      ? this.begin(id, now)
      : { ok: false, refusal: { status: 409, reason: "being_processed" } };
    await this.expiry.schedule();
    return { ...begun, key: verdict };
  }

  private begin(id: string, now: number): Outcome<CompleteTicket> {
    let parts: PartRecord[] = [];
    const begun = outcome(
      this.rows.apply(id, (current) => {
        // Parts not yet assembled are what complete will assemble; after that the staged object is the upload.
        if (current?.multipart?.r2UploadId) parts = this.rows.loadParts(id);
        return beginComplete(current, now, current?.multipart ? missingParts(current.multipart, parts) : 0);
      }),
    );
    if (!begun.ok) return begun;
    return { ok: true, upload: { ...begun.upload, parts: storedParts(parts), hostedKey: this.rows.hostedKey(id) } };
  }

  /**
   * Complete `attempt`, still running, holds the upload for another `completeLeaseMs`; refused once a later
   * complete took it over or it may no longer finish (upload-state.ts `renewComplete`).
   */
  renewComplete(id: string, attempt: number, now = Date.now()): Outcome<{ leaseUntil: number }> {
    const renewed = outcome(this.rows.apply(id, (record) => renewComplete(record, attempt, now)));
    return renewed.ok ? { ok: true, upload: { leaseUntil: renewed.upload.leaseUntil as number } } : renewed;
  }

  /**
   * Complete `attempt` is about to write its hosted object at `key` (a WebP, or an in-place object that
   * names the staged bytes). Recorded first, so that if the complete never finishes and the reservation
   * lapses, the alarm removes that object with the staged bytes: nothing is left that names removed bytes.
   * Refused like its renewal once the attempt may no longer finish, so it writes nothing.
   */
  recordHostedKey(id: string, attempt: number, key: string, now = Date.now()): Outcome<{ hostedKey: string }> {
    // The renewal's checks, and a fresh lease with them: the write that follows is the complete's work.
    const renewed = outcome(this.rows.apply(id, (record) => renewComplete(record, attempt, now)));
    if (!renewed.ok) return renewed;
    this.rows.setHostedKey(id, key);
    return { ok: true, upload: { hostedKey: key } };
  }

  /**
   * Complete `attempt` ends; the parts of a multipart upload, now one object, are forgotten once it is
   * completed. Refused, changing nothing, once a later complete took the upload over.
   */
  finishComplete(
    id: string,
    attempt: number,
    completed: CompleteOutcome,
    now = Date.now(),
    kept?: KeptChange,
  ): Outcome {
    const finished = outcome(this.rows.apply(id, (record) => finishComplete(record, attempt, completed, now)));
    if (finished.ok && finished.upload.state === "completed") this.rows.deleteParts(id);
    // The complete's `Idempotency-Key` record, in the transaction of its outcome (unless taken over meanwhile).
    if (finished.ok && kept && this.keys.holds(kept.ref)) this.keys.recordChange(kept);
    return finished;
  }

  /**
   * Complete `attempt` failed for a reason other than the bytes; `partsAssembled` says whether a multipart
   * upload's parts became one object. Refused once a later complete took the upload over.
   */
  abandonComplete(id: string, attempt: number, partsAssembled = true): Outcome {
    return outcome(this.rows.apply(id, (record) => abandonComplete(record, attempt, partsAssembled)));
  }

  /** The upload and its stored parts, for `GET /media-uploads/{id}`; null when unknown or lapsed. */
  status(id: string, now = Date.now()): UploadStatusData | null {
    const upload = this.rows.load(id);
    if (isGone(upload, now)) return null;
    return { upload, parts: upload.multipart ? storedParts(this.rows.loadParts(id)) : null };
  }

  /** Deletes one batch of lapsed, uncompleted uploads and their staged bytes, then waits for the next one. */
  override async alarm(): Promise<void> {
    await this.removeLapsed(expiryBatchSize);
  }

  /** One run of the alarm over at most `batchSize` lapsed uploads (expiry.ts); answers how many it removed. */
  removeLapsed(batchSize: number, now = Date.now()): Promise<number> {
    return this.expiry.removeLapsed(batchSize, now);
  }
}
