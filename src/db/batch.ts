import { getTableColumns, type SQL, sql } from "drizzle-orm";
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

const abortMarker = "batch aborted: guard failed";

/**
 * A statement that aborts its batch, rolling back every statement in it, unless `condition` holds.
 * SQLite has no RAISE outside triggers, so the guard makes json() fail on purpose.
 */
export function abortUnless(db: Database, condition: SQL) {
  // Selected from a one-row subquery so the guard is evaluated whatever the tables hold.
  return db.select({ guard: sql`json(CASE WHEN ${condition} THEN '1' ELSE ${abortMarker} END)` }).from(sql`(SELECT 1)`);
}

/** The text of a D1 failure; D1 puts SQLite's own message in the cause. */
function failureText(error: unknown): string {
  return error instanceof Error ? `${error.message} ${String(error.cause ?? "")}` : String(error);
}

/** Whether a batch failed because an {@link abortUnless} guard did not hold. */
export function isGuardAbort(error: unknown): boolean {
  return /malformed JSON/i.test(failureText(error));
}

/** Whether a write failed on the unique index over `columns` (as SQLite names them, e.g. "products.slug"). */
export function isUniqueViolation(error: unknown, columns?: string): boolean {
  const text = failureText(error);
  return columns ? text.includes(`UNIQUE constraint failed: ${columns}`) : /constraint failed/i.test(text);
}
