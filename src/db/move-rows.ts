import { getTableColumns, getTableName } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import {
  crossSells,
  customFields,
  drafts,
  idempotencyKeys,
  productCourses,
  products,
  stores,
  subscriptions,
  variants,
  webhookEvents,
  webhookSecrets,
} from "./schema";

/**
 * The rows of one store in one database, table by table (docs/scaling.md "Moving a store"): what a move
 * copies, verifies and deletes. Plain D1 statements over SQLite's own values, so a copied row is the same
 * bytes, not a row parsed into JavaScript and written back.
 */
type StoreTable = {
  name: string;
  /** The columns copied and compared, as SQLite names them. */
  columns: string[];
  /** The primary key: the order of the copy and of the checksum. */
  key: string;
  /** The rows of the store `?` in this table. */
  where: string;
  /**
   * A column the target numbers itself (`custom_fields.id`, an AUTOINCREMENT that is only an internal key):
   * ids of another store may already hold the same numbers there. Copied in key order, the rows keep their
   * order; the checksum leaves the column out.
   */
  renumbered?: string;
};

const ownProducts = "IN (SELECT `id` FROM `products` WHERE `store_id` = ?)";

function spec(table: SQLiteTable, key: string, where: string, renumbered?: string): StoreTable {
  const columns = Object.values(getTableColumns(table)).map((column) => column.name);
  return { name: getTableName(table), columns, key, where, ...(renumbered ? { renumbered } : {}) };
}

/** Every table that holds a store's rows in its home, parents before children (the foreign keys' order). */
export const storeTables: readonly StoreTable[] = [
  spec(stores, "`id`", "`id` = ?"),
  spec(products, "`id`", "`store_id` = ?"),
  spec(variants, "`id`", `\`product_id\` ${ownProducts}`),
  spec(customFields, "`id`", `\`product_id\` ${ownProducts}`, "id"),
  spec(crossSells, "`id`", `\`owner_product_id\` ${ownProducts}`),
  spec(productCourses, "`product_id`, `course_id`", `\`product_id\` ${ownProducts}`),
  spec(drafts, "`product_id`", `\`product_id\` ${ownProducts}`),
  spec(subscriptions, "`id`", "`store_id` = ?"),
  spec(webhookSecrets, "`store_id`", "`store_id` = ?"),
  spec(webhookEvents, "`id`", "`store_id` = ?"),
  spec(idempotencyKeys, "`store_id`, `token_hash`, `key`", "`store_id` = ?"),
];

/** Rows read per statement while copying and checking. */
const pageRows = 500;
/** D1 binds at most 100 parameters per statement. */
const maxBoundParameters = 100;
/** Rows deleted per statement. */
const deleteRows = 500;

const quoted = (columns: readonly string[]) => columns.map((column) => `\`${column}\``).join(", ");

/** The rows of `table` for `storeId`, `pageRows` at a time in key order, as SQLite's values. */
async function* pages(db: D1Database, table: StoreTable, storeId: string, columns: readonly string[]) {
  for (let offset = 0; ; offset += pageRows) {
    const rows = await db
      .prepare(
        `SELECT ${quoted(columns)} FROM \`${table.name}\` WHERE ${table.where} ORDER BY ${table.key} LIMIT ? OFFSET ?`,
      )
      .bind(storeId, pageRows, offset)
      .raw();
    if (rows.length > 0) yield rows;
    if (rows.length < pageRows) return;
  }
}

/**
 * Copies the store's rows of `table` from `source` into `target`, in key order: one D1 batch per page,
 * each statement binding at most 100 parameters. Answers the number of rows copied.
 */
export async function copyTable(source: D1Database, target: D1Database, table: StoreTable, storeId: string) {
  const columns = table.columns.filter((column) => column !== table.renumbered);
  const perStatement = Math.max(1, Math.floor(maxBoundParameters / columns.length));
  const placeholders = `(${columns.map(() => "?").join(", ")})`;
  let copied = 0;
  for await (const rows of pages(source, table, storeId, columns)) {
    const statements: D1PreparedStatement[] = [];
    for (let start = 0; start < rows.length; start += perStatement) {
      const part = rows.slice(start, start + perStatement);
      statements.push(
        target
          .prepare(
            `INSERT INTO \`${table.name}\` (${quoted(columns)}) VALUES ${part.map(() => placeholders).join(", ")}`,
          )
          .bind(...part.flat()),
      );
    }
    await target.batch(statements);
    copied += rows.length;
  }
  return copied;
}

/** A table's rows of one store in one database: how many, and a SHA-256 chained over them in key order. */
export type TableSum = { table: string; rows: number; checksum: string };

/** The count and checksum of the store's rows of `table` in `db` (the renumbered column left out). */
export async function sumTable(db: D1Database, table: StoreTable, storeId: string): Promise<TableSum> {
  const columns = table.columns.filter((column) => column !== table.renumbered);
  const encoder = new TextEncoder();
  let checksum = "";
  let rows = 0;
  for await (const page of pages(db, table, storeId, columns)) {
    const digest = await crypto.subtle.digest("SHA-256", encoder.encode(checksum + JSON.stringify(page)));
    checksum = [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
    rows += page.length;
  }
  return { table: table.name, rows, checksum };
}

/**
 * Deletes the store's rows in `db`, children first, `deleteRows` a statement. Each batch lifts the store's
 * fence (migrations/0004) for its own statements and, when `fence` is given, puts it back before it ends:
 * the batch is atomic, so no other write of the store passes in between. `keepStoreRow`: the store's row
 * in `stores` stays (`DB`'s is the global one).
 */
export async function deleteStoreRows(
  db: D1Database,
  storeId: string,
  options: { keepStoreRow: boolean; fence?: { state: "outgoing" | "incoming"; since: number } },
) {
  const tables = [...storeTables].reverse().filter((table) => !(options.keepStoreRow && table.name === "stores"));
  for (const table of tables) {
    for (;;) {
      const statements = [
        db.prepare("DELETE FROM `store_fences` WHERE `store_id` = ?").bind(storeId),
        db
          .prepare(
            `DELETE FROM \`${table.name}\` WHERE rowid IN (SELECT rowid FROM \`${table.name}\` WHERE ${table.where} LIMIT ?)`,
          )
          .bind(storeId, deleteRows),
      ];
      if (options.fence) statements.push(fenceStatement(db, storeId, options.fence));
      const results = await db.batch(statements);
      if ((results[1]?.meta.changes ?? 0) < deleteRows) break;
    }
  }
}

/** The statement that fences the store in `db` (replacing a fence it had). */
export function fenceStatement(
  db: D1Database,
  storeId: string,
  fence: { state: "outgoing" | "incoming"; since: number },
) {
  return db
    .prepare("INSERT OR REPLACE INTO `store_fences` (`store_id`, `state`, `since`) VALUES (?, ?, ?)")
    .bind(storeId, fence.state, fence.since);
}

/** The statement that lifts the store's fence in `db`. */
export function unfenceStatement(db: D1Database, storeId: string) {
  return db.prepare("DELETE FROM `store_fences` WHERE `store_id` = ?").bind(storeId);
}
