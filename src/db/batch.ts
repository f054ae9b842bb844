import { getTableColumns, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Database } from "./client";

/** D1 binds at most 100 parameters per statement. */
const maxBoundParameters = 100;

function chunk<T>(rows: T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < rows.length; i += size) chunks.push(rows.slice(i, i + size));
  return chunks;
}

function rowsPerStatement(table: SQLiteTable): number {
  return Math.max(1, Math.floor(maxBoundParameters / Object.keys(getTableColumns(table)).length));
}

/** Multi-row inserts of `rows`, split so no statement binds more parameters than D1 allows. */
export function insertStatements<T extends SQLiteTable>(db: Database, table: T, rows: T["$inferInsert"][]) {
  return chunk(rows, rowsPerStatement(table)).map((part) => db.insert(table).values(part));
}

/** Inserts that replace every column of an existing row with the same primary key. */
export function upsertStatements<T extends SQLiteTable>(
  db: Database,
  table: T,
  target: T[keyof T] &
    Parameters<ReturnType<ReturnType<Database["insert"]>["values"]>["onConflictDoUpdate"]>[0]["target"],
  rows: T["$inferInsert"][],
) {
  const columns = getTableColumns(table);
  const set = Object.fromEntries(
    Object.entries(columns).map(([key, column]) => [key, sql.raw(`excluded."${column.name}"`)]),
  );
  return chunk(rows, rowsPerStatement(table)).map((part) =>
    db
      .insert(table)
      .values(part)
      .onConflictDoUpdate({ target, set: set as never }),
  );
}

/** Runs statements as one atomic D1 batch; does nothing for an empty list. */
export async function runAtomically(db: Database, statements: BatchItem<"sqlite">[]) {
  if (statements.length === 0) return [];
  return db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
}
