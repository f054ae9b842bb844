import type { PartRecord, StoredPart } from "../parts-state";
import type { HostedFile, MultipartState, Transition, UploadRecord } from "../upload-state";

/**
 * The coordinator's uploads and their parts as rows of its SQLite storage (schema: migrations.ts): reads
 * answer the records of upload-state.ts and parts-state.ts, writes store the records those transitions answer.
 */

type UploadRow = {
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
  complete_attempt: number;
  put_attempt: number;
};

type PartRow = {
  part_number: number;
  size: number | null;
  etag: string | null;
  lease_until: number | null;
  attempt: number;
};

/** A reservation as prepare records it. */
export type NewUpload = Pick<
  UploadRecord,
  "id" | "tokenHash" | "filename" | "contentType" | "size" | "type" | "expiresAt"
> & { multipart?: MultipartState | null };

function fromRow(row: UploadRow): UploadRecord {
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
    completeAttempt: row.complete_attempt,
    putAttempt: row.put_attempt,
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
  return {
    partNumber: row.part_number,
    size: row.size,
    etag: row.etag,
    leaseUntil: row.lease_until,
    attempt: row.attempt,
  };
}

/** The parts that are stored, in the order given. */
export function storedParts(parts: readonly PartRecord[]): StoredPart[] {
  return parts.flatMap((part) =>
    part.etag !== null && part.size !== null ? [{ partNumber: part.partNumber, size: part.size, etag: part.etag }] : [],
  );
}

export class UploadRows {
  constructor(private readonly sql: SqlStorage) {}

  insert(storeId: string, upload: NewUpload): void {
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
  }

  load(id: string): UploadRecord | null {
    const row = this.sql.exec<UploadRow>("SELECT * FROM uploads WHERE id = ?", id).toArray()[0];
    return row ? fromRow(row) : null;
  }

  /**
   * Runs one transition on the stored record and stores its next record. The object runs one call at a
   * time, so nothing comes between the read and the write.
   */
  apply(id: string, transition: (record: UploadRecord | null) => Transition): Transition {
    const result = transition(this.load(id));
    if ("refusal" in result) return result;
    const next = result.next;
    this.sql.exec(
      "UPDATE uploads SET state = ?, lease_until = ?, complete_attempt = ?, put_attempt = ?, result = ?, failure = ?, r2_upload_id = ? WHERE id = ?",
      next.state,
      next.leaseUntil,
      next.completeAttempt,
      next.putAttempt,
      next.result ? JSON.stringify(next.result) : null,
      next.failure,
      next.multipart?.r2UploadId ?? null,
      id,
    );
    return result;
  }

  setExpiresAt(id: string, expiresAt: number): void {
    this.sql.exec("UPDATE uploads SET expires_at = ? WHERE id = ?", expiresAt, id);
  }

  hostedKey(id: string): string | null {
    return this.sql.exec<{ key: string | null }>("SELECT hosted_key AS key FROM uploads WHERE id = ?", id).one().key;
  }

  setHostedKey(id: string, key: string): void {
    this.sql.exec("UPDATE uploads SET hosted_key = ? WHERE id = ?", key, id);
  }

  loadPart(id: string, partNumber: number): PartRecord | null {
    const row = this.sql
      .exec<PartRow>(
        "SELECT part_number, size, etag, lease_until, attempt FROM upload_parts WHERE upload_id = ? AND part_number = ?",
        id,
        partNumber,
      )
      .toArray()[0];
    return row ? fromPartRow(row) : null;
  }

  /** The upload's parts in part order. */
  loadParts(id: string): PartRecord[] {
    return this.sql
      .exec<PartRow>(
        "SELECT part_number, size, etag, lease_until, attempt FROM upload_parts WHERE upload_id = ? ORDER BY part_number",
        id,
      )
      .toArray()
      .map(fromPartRow);
  }

  savePart(id: string, part: PartRecord): void {
    this.sql.exec(
      "INSERT INTO upload_parts (upload_id, part_number, size, etag, lease_until, attempt) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (upload_id, part_number) DO UPDATE SET size = excluded.size, etag = excluded.etag, lease_until = excluded.lease_until, attempt = excluded.attempt",
      id,
      part.partNumber,
      part.size,
      part.etag,
      part.leaseUntil,
      part.attempt,
    );
  }

  deleteParts(id: string): void {
    this.sql.exec("DELETE FROM upload_parts WHERE upload_id = ?", id);
  }
}
