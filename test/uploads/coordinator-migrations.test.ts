import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type Migration, migrate, migrations } from "../../src/uploads/coordinator/migrations";
import { uuid } from "../support/factories";

const coordinatorOf = (storeId: string) => env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));

const columnsOf = (sql: SqlStorage, table: string) =>
  sql
    .exec<{ name: string }>(`PRAGMA table_info(${table})`)
    .toArray()
    .map((column) => column.name);

const recorded = (sql: SqlStorage) =>
  sql
    .exec<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version")
    .toArray()
    .map((row) => row.version);

/** Today's columns of `uploads`, in the order a new object has them. */
const uploadColumns = [
  "id",
  "store_id",
  "token_hash",
  "filename",
  "content_type",
  "size",
  "type",
  "state",
  "expires_at",
  "lease_until",
  "result",
  "failure",
  "part_size",
  "part_count",
  "r2_upload_id",
  "max_expires_at",
  "hosted_key",
  "complete_attempt",
  "put_attempt",
];

/** The columns of the Idempotency-Key records (migration 4). */
const keyColumns = [
  "token_hash",
  "key",
  "fingerprint",
  "attempt",
  "lease_until",
  "changed",
  "status",
  "headers",
  "body",
  "expires_at",
];

/** Lays down a store's storage as the code before numbered migrations left it, then drops today's. */
function layDownUnnumbered(sql: SqlStorage, withColumns: string[]) {
  sql.exec("DROP TABLE schema_migrations");
  sql.exec("DROP TABLE idempotency_keys");
  sql.exec("DROP TABLE upload_parts");
  sql.exec("DROP TABLE uploads");
  sql.exec(`CREATE TABLE uploads (
    id TEXT PRIMARY KEY, store_id TEXT NOT NULL, token_hash TEXT NOT NULL, filename TEXT NOT NULL,
    content_type TEXT NOT NULL, size INTEGER NOT NULL, type TEXT NOT NULL, state TEXT NOT NULL,
    expires_at INTEGER NOT NULL, lease_until INTEGER, result TEXT, failure TEXT)`);
  for (const column of withColumns) {
    sql.exec(
      `ALTER TABLE uploads ADD COLUMN ${column} ${column === "r2_upload_id" || column === "hosted_key" ? "TEXT" : "INTEGER"}`,
    );
  }
  sql.exec(
    "INSERT INTO uploads (id, store_id, token_hash, filename, content_type, size, type, state, expires_at) VALUES ('u1', 's', 'h', 'a.jpg', 'image/jpeg', 3, 'image', 'stored', 1)",
  );
}

describe("the store coordinator's storage migrations: numbering and today's tables", () => {
  it("are numbered 1, 2, 3… in order, each with a name", () => {
    expect(migrations.map((migration) => migration.version)).toEqual(migrations.map((_migration, index) => index + 1));
    for (const migration of migrations) expect(migration.name).not.toBe("");
  });

  it("a new object has every migration applied once, recorded, and today's tables", async () => {
    const result = await runInDurableObject(coordinatorOf(uuid()), (_instance, state) => ({
      recorded: recorded(state.storage.sql),
      again: migrate(state.storage),
      uploads: columnsOf(state.storage.sql, "uploads"),
      parts: columnsOf(state.storage.sql, "upload_parts"),
      keys: columnsOf(state.storage.sql, "idempotency_keys"),
    }));
    expect(result.recorded).toEqual(migrations.map((migration) => migration.version));
    expect(result.again).toEqual([]);
    expect(result.uploads).toEqual(uploadColumns);
    expect(result.parts).toEqual(["upload_id", "part_number", "size", "etag", "lease_until", "attempt"]);
    expect(result.keys).toEqual(keyColumns);
  });

  for (const [name, columns] of [
    ["before parts", []],
    ["before hosted keys", ["part_size", "part_count", "r2_upload_id", "max_expires_at"]],
    ["with today's tables", ["part_size", "part_count", "r2_upload_id", "max_expires_at", "hosted_key"]],
  ] as const) {
    it(`an object from before numbered migrations (${name}) starts from its own schema and keeps its rows`, async () => {
      const result = await runInDurableObject(coordinatorOf(uuid()), (_instance, state) => {
        const sql = state.storage.sql;
        layDownUnnumbered(sql, [...columns]);
        const applied = migrate(state.storage);
        return {
          applied,
          recorded: recorded(sql),
          uploads: columnsOf(sql, "uploads"),
          parts: columnsOf(sql, "upload_parts"),
          keys: columnsOf(sql, "idempotency_keys"),
          row: sql
            .exec("SELECT id, state, part_size, hosted_key, complete_attempt, put_attempt FROM uploads")
            .toArray(),
        };
      });
      expect(result.applied).toEqual(migrations.map((migration) => migration.version));
      expect(result.recorded).toEqual(result.applied);
      expect([...result.uploads].sort()).toEqual([...uploadColumns].sort());
      expect(result.parts).toEqual(["upload_id", "part_number", "size", "etag", "lease_until", "attempt"]);
      expect(result.keys).toEqual(keyColumns);
      expect(result.row).toEqual([
        { id: "u1", state: "stored", part_size: null, hosted_key: null, complete_attempt: 0, put_attempt: 0 },
      ]);
    });
  }
});

describe("the store coordinator's storage migrations: applying and failing", () => {
  it("applies only the migrations not recorded yet, each with its record, and none again", async () => {
    const calls: number[] = [];
    const later: Migration[] = [
      ...migrations,
      {
        version: migrations.length + 1,
        name: "a later one",
        up: (sql) => {
          calls.push(1);
          sql.exec("CREATE TABLE later_table (id TEXT PRIMARY KEY)");
        },
      },
    ];
    const result = await runInDurableObject(coordinatorOf(uuid()), (_instance, state) => ({
      first: migrate(state.storage, later),
      second: migrate(state.storage, later),
      recorded: recorded(state.storage.sql),
    }));
    expect(result.first).toEqual([migrations.length + 1]);
    expect(result.second).toEqual([]);
    expect(calls).toEqual([1]);
    expect(result.recorded).toEqual(later.map((migration) => migration.version));
  });

  it("a migration that fails leaves neither its changes nor its record, and the next start tries it again", async () => {
    const failing: Migration[] = [
      ...migrations,
      {
        version: migrations.length + 1,
        name: "fails halfway",
        up: (sql) => {
          sql.exec("CREATE TABLE half_done (id TEXT PRIMARY KEY)");
          throw new Error("stopped");
        },
      },
    ];
    const result = await runInDurableObject(coordinatorOf(uuid()), (_instance, state) => {
      let failure = "";
      try {
        migrate(state.storage, failing);
      } catch (error) {
        failure = String(error);
      }
      return {
        failure,
        tables: state.storage.sql
          .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'half_done'")
          .toArray(),
        recorded: recorded(state.storage.sql),
      };
    });
    expect(result.failure).toContain("stopped");
    expect(result.tables).toEqual([]);
    expect(result.recorded).toEqual(migrations.map((migration) => migration.version));
  });
});
