import { and, asc, count, desc, eq, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/client";
import { subscriptions } from "../db/schema";
import type { Search, SubscriptionListRequest, TimeRange } from "./filters";
import { type Subscription, subscriptionSearchSeparator, subscriptionView } from "./resource";

/** The columns of the Subscription resource; the page never reads the search key or the customer columns. */
const resourceColumns = {
  id: subscriptions.id,
  remoteId: subscriptions.remoteId,
  provider: subscriptions.provider,
  status: subscriptions.status,
  variantName: subscriptions.variantName,
  productName: subscriptions.productName,
  recurringAmount: subscriptions.recurringAmount,
  currency: subscriptions.currency,
  interval: subscriptions.interval,
  intervalCount: subscriptions.intervalCount,
  quantity: subscriptions.quantity,
  customerEmail: subscriptions.customerEmail,
  currentPeriodEnd: subscriptions.currentPeriodEnd,
  cancelAt: subscriptions.cancelAt,
  canceledAt: subscriptions.canceledAt,
  createdAt: subscriptions.createdAt,
};

/**
 * A column as a filter term refers to it: plainly when its index may drive the query, behind a unary
 * `+` when it must not (SQLite's documented way to keep a term from choosing the index; the term
 * still filters the rows another index found).
 */
function term(column: SQLiteColumn, indexable: boolean): SQL {
  return indexable ? sql`${column}` : sql`+${column}`;
}

function equals(column: SQLiteColumn, value: string, indexable: boolean): SQL {
  return sql`${term(column, indexable)} = ${sql.param(value, column)}`;
}

function inRange(column: SQLiteColumn, range: TimeRange | undefined, indexable: boolean): SQL[] {
  if (!range) return [];
  // A NULL time (never canceled, no period) fails both comparisons, so ranges skip those rows.
  return [
    ...(range.from ? [sql`${term(column, indexable)} >= ${sql.param(range.from, column)}`] : []),
    ...(range.until ? [sql`${term(column, indexable)} < ${sql.param(range.until, column)}`] : []),
  ];
}

function matches(search: Search, indexable: boolean): SQL {
  if (search.kind === "email") return equals(subscriptions.customerEmailKey, search.key, indexable);
  // The needle would straddle two names of the key, and no single name holds the separator.
  if (search.needle.includes(subscriptionSearchSeparator)) return sql`0`;
  // instr() compares plainly: `%` and `_` are literal, unlike LIKE, and nothing needs escaping.
  return sql`instr(${subscriptions.searchText}, ${search.needle}) > 0`;
}

type Leader = "customer" | "email" | "variant" | "product";

/**
 * The filter whose index should drive the query: an id or e-mail names a handful to a few thousand
 * subscriptions, and its index (store, id, created_at, id) also gives the list's order. Without
 * ANALYZE statistics SQLite guesses that a two-sided date range beats an equality: for a variant and a
 * month of period ends it read every period end of the month (0.5 s over 200,000 subscriptions) instead
 * of the variant's 3,000 rows (9 ms; docs/benchmarks.md). A status is too common to lead over these.
 */
function leader(request: SubscriptionListRequest): Leader | null {
  if (request.customerId) return "customer";
  if (request.search?.kind === "email") return "email";
  if (request.variantId) return "variant";
  if (request.productId) return "product";
  return null;
}

/**
 * The WHERE clause of a list: the store first, so every filter shape can use one of the
 * `subscriptions_store_*` indexes. Subscriptions hidden by their customer are listed like any other.
 */
export function listCondition(storeId: string, request: SubscriptionListRequest): SQL {
  const lead = leader(request);
  const free = lead === null;
  const conditions: SQL[] = [
    eq(subscriptions.storeId, storeId),
    ...(request.status ? [equals(subscriptions.status, request.status, free)] : []),
    ...(request.customerId ? [equals(subscriptions.customerId, request.customerId, lead === "customer")] : []),
    ...(request.productId ? [equals(subscriptions.productId, request.productId, lead === "product")] : []),
    ...(request.variantId ? [equals(subscriptions.variantId, request.variantId, lead === "variant")] : []),
    // Every list index holds created_at right after its leading column, so this range always helps.
    ...inRange(subscriptions.createdAt, request.created, true),
    ...inRange(subscriptions.canceledAt, request.canceled, free),
    ...inRange(subscriptions.currentPeriodEnd, request.currentPeriodEnd, free),
    ...(request.search ? [matches(request.search, lead === "email")] : []),
  ];
  return and(...conditions) as SQL;
}

/**
 * The two statements of a list: one page in a total order (creation time, then id, both in the sort's
 * direction, so equal times never make pages overlap or skip), and the filtered count.
 */
export function listStatements(db: Database, storeId: string, request: SubscriptionListRequest) {
  const where = listCondition(storeId, request);
  const direction = request.sort === "created_at" ? asc : desc;
  // Past any real table size the page is empty anyway; capping keeps the bound value an exact integer.
  const offset = Math.min((request.page - 1) * request.perPage, Number.MAX_SAFE_INTEGER);
  return {
    page: db
      .select(resourceColumns)
      .from(subscriptions)
      .where(where)
      .orderBy(direction(subscriptions.createdAt), direction(subscriptions.id))
      .limit(request.perPage)
      .offset(offset),
    // count(*) lets SQLite answer from the narrowest index that holds the filtered columns.
    count: db.select({ total: count() }).from(subscriptions).where(where),
  };
}

/** One page of a store's subscriptions and the filtered total, read in one D1 round trip. */
export async function listSubscriptions(
  db: Database,
  storeId: string,
  request: SubscriptionListRequest,
): Promise<{ items: Subscription[]; total: number }> {
  const statements = listStatements(db, storeId, request);
  const [rows, [counted]] = await db.batch([statements.page, statements.count]);
  return { items: rows.map(subscriptionView), total: counted?.total ?? 0 };
}
