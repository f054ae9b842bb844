/**
 * The schema of a store coordinator's SQLite storage, as numbered migrations: each runs once per object,
 * in order, and is recorded in `schema_migrations` in the same transaction, so an object that stops midway
 * starts again from the last recorded one. A change of schema is a new migration at the end; a migration
 * that shipped is never edited.
 *
 * Objects created before numbered migrations have no record. Migration 1 is the schema as those objects
 * had it, written so it brings any of them (created before parts, before hosted keys, or current) to the
 * same tables without touching their rows; every later migration may then assume exactly that schema.
 *
 * (The complete limit's `rate_windows` table belongs to limits/fixed-window.ts, shared with the rate
 * limiter's object, and is created there.)
 */

export type Migration = { version: number; name: string; up(sql: SqlStorage): void };

/** The columns `uploads` gained before migrations were numbered, for objects created earlier. */
const columnsAddedBeforeNumbering = {
  part_size: "INTEGER",
  part_count: "INTEGER",
  r2_upload_id: "TEXT",
  max_expires_at: "INTEGER",
  hosted_key: "TEXT",
} as const;

function columnsOf(sql: SqlStorage, table: string): Set<string> {
  return new Set(
    sql
      .exec<{ name: string }>(`PRAGMA table_info(${table})`)
      .toArray()
      .map((column) => column.name),
  );
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: "uploads and their parts, the schema of every object before migrations were numbered",
    up(sql) {
      sql.exec(`CREATE TABLE IF NOT EXISTS uploads (
        id TEXT PRIMARY KEY, store_id TEXT NOT NULL, token_hash TEXT NOT NULL, filename TEXT NOT NULL,
        content_type TEXT NOT NULL, size INTEGER NOT NULL, type TEXT NOT NULL, state TEXT NOT NULL,
        expires_at INTEGER NOT NULL, lease_until INTEGER, result TEXT, failure TEXT)`);
      sql.exec("CREATE INDEX IF NOT EXISTS uploads_pending ON uploads (expires_at) WHERE state <> 'completed'");
      const present = columnsOf(sql, "uploads");
      for (const [name, type] of Object.entries(columnsAddedBeforeNumbering)) {
        if (!present.has(name)) sql.exec(`ALTER TABLE uploads ADD COLUMN ${name} ${type}`);
      }
      sql.exec(`CREATE TABLE IF NOT EXISTS upload_parts (
        upload_id TEXT NOT NULL, part_number INTEGER NOT NULL, size INTEGER, etag TEXT, lease_until INTEGER,
        PRIMARY KEY (upload_id, part_number)) WITHOUT ROWID`);
    },
  },
  {
    version: 2,
    name: "uploads.complete_attempt: the number of the latest complete, which fences the earlier ones",
    up(sql) {
      // 0 for every existing row: the next begin is attempt 1.
      sql.exec("ALTER TABLE uploads ADD COLUMN complete_attempt INTEGER NOT NULL DEFAULT 0");
    },
  },
  {
    version: 3,
    name: "uploads.put_attempt and upload_parts.attempt: the number of the latest byte PUT and part PUT, which fences the earlier ones",
    up(sql) {
      // 0 for every existing row: the next begin is attempt 1.
      sql.exec("ALTER TABLE uploads ADD COLUMN put_attempt INTEGER NOT NULL DEFAULT 0");
      sql.exec("ALTER TABLE upload_parts ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0");
    },
  },
  {
    version: 4,
    name: "idempotency_keys: the Idempotency-Key records of the store's prepares and completes",
    up(sql) {
      sql.exec(`CREATE TABLE idempotency_keys (
        token_hash TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, attempt INTEGER NOT NULL,
        lease_until INTEGER NOT NULL, changed INTEGER NOT NULL DEFAULT 0, status INTEGER, headers TEXT, body TEXT,
        expires_at INTEGER NOT NULL, PRIMARY KEY (token_hash, key)) WITHOUT ROWID`);
      sql.exec("CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at)");
    },
  },
];

/**
 * Applies the migrations `storage` has not recorded yet, each in its own transaction with its record;
 * answers the versions it applied.
 */
export function migrate(storage: DurableObjectStorage, list: readonly Migration[] = migrations): number[] {
  const sql = storage.sql;
  sql.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  const done = sql.exec<{ version: number | null }>("SELECT MAX(version) AS version FROM schema_migrations").one();
  const applied: number[] = [];
  for (const migration of list) {
    if (migration.version <= (done.version ?? 0)) continue;
    storage.transactionSync(() => {
      migration.up(sql);
      sql.exec(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        migration.version,
        migration.name,
        Date.now(),
      );
    });
    applied.push(migration.version);
  }
  return applied;
}
