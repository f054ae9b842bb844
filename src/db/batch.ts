import { getTableColumns, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteTable, SQLiteUpdateSetSource } from "drizzle-orm/sqlite-core";
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
  // Every column set from the row that conflicted (a record of the table's own keys, built at run time).
  const set = Object.fromEntries(
    Object.entries(columns).map(([key, column]) => [key, sql.raw(`excluded."${column.name}"`)]),
  ) as SQLiteUpdateSetSource<T>;
  return chunk(rows, rowsPerStatement(table)).map((part) =>
    db.insert(table).values(part).onConflictDoUpdate({ target, set }),
  );
}

/** A batch that one of its {@link abortUnless} guards refused: nothing of it was written. */
export class GuardFailedError extends Error {
  constructor(cause: unknown) {
    super("batch aborted: a guard did not hold", { cause });
    this.name = "GuardFailedError";
  }
}

/** The guard statements {@link abortUnless} made, so a failed batch knows whether it held one. */
const guards = new WeakSet<object>();

/**
 * Runs statements as one atomic D1 batch; does nothing for an empty list. A batch refused by one of its
 * guards throws {@link GuardFailedError}; any other failure is thrown as D1 threw it.
 */
export async function runAtomically(db: Database, statements: BatchItem<"sqlite">[]) {
  if (statements.length === 0) return [];
  try {
    return await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  } catch (error) {
    // D1 tells failures apart only by SQLite's text. A guard fails as json() of a text that is not JSON, and
    // no other statement of a guarded batch calls json(): that error in a batch with a guard is the guard's.
    if (statements.some((statement) => guards.has(statement)) && /malformed JSON/i.test(failureText(error))) {
      throw new GuardFailedError(error);
    }
    throw error;
  }
}

/**
 * A statement that aborts its batch, rolling back every statement in it, unless `condition` holds; the
 * batch then throws {@link GuardFailedError}. SQLite has no RAISE outside triggers, so the guard makes
 * json() fail on purpose.
 */
export function abortUnless(db: Database, condition: SQL) {
  // Selected from a one-row subquery so the guard is evaluated whatever the tables hold.
  const guard = db
    .select({ guard: sql`json(CASE WHEN ${condition} THEN '1' ELSE 'batch aborted: guard failed' END)` })
    .from(sql`(SELECT 1)`);
  guards.add(guard);
  return guard;
}

/** The text of a D1 failure; D1 puts SQLite's own message in the cause. */
function failureText(error: unknown): string {
  return error instanceof Error ? `${error.message} ${String(error.cause ?? "")}` : String(error);
}

/** Whether a batch failed because an {@link abortUnless} guard did not hold. */
export function isGuardAbort(error: unknown): error is GuardFailedError {
  return error instanceof GuardFailedError;
}

/** Whether a write failed on the unique index over `columns` (as SQLite names them, e.g. "products.slug"). */
export function isUniqueViolation(error: unknown, columns?: string): boolean {
  const text = failureText(error);
  return columns ? text.includes(`UNIQUE constraint failed: ${columns}`) : /constraint failed/i.test(text);
}
