import { and, asc, count, desc, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/client";
import { bound, computed, ReusableQuery, readTogether } from "../db/reusable";
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

/** The column equal to the value of the placeholder `name`. */
function equals(column: SQLiteColumn, name: string, indexable: boolean): SQL {
  return sql`${term(column, indexable)} = ${bound(name, column)}`;
}

/** The range `name` of the shape: its `<name>From` and `<name>Until` placeholders, for the ends it has. */
function inRange(column: SQLiteColumn, name: RangeName, range: RangeShape | undefined, indexable: boolean): SQL[] {
  if (!range) return [];
  // A NULL time (never canceled, no period) fails both comparisons, so ranges skip those rows.
  return [
    ...(range.from ? [sql`${term(column, indexable)} >= ${bound(`${name}From`, column)}`] : []),
    ...(range.until ? [sql`${term(column, indexable)} < ${bound(`${name}Until`, column)}`] : []),
  ];
}

/** The free-text index of the search key (migrations/0001_subscriptions_search.sql); not a drizzle table. */
const searchIndex = sql.identifier("subscriptions_search");
/** The statement's list of index hits (a common table expression). */
const hitsName = "subscription_hits";
const hitsTable = sql.identifier(hitsName);

/** The trigram index finds only needles of three characters (code points) or more. */
const trigramLength = 3;

/**
 * Past this many hits in the whole index (every store's), a search walks the store's list index
 * instead of looking each hit up. In workerd's D1 a lookup by rowid costs about 4.5 µs (node:sqlite: 2
 * to 3 µs) and a step of the walk about 0.2 µs, and both statements (page and count) pay it, so over
 * 200,000 subscriptions of a store the walk wins from some 5,000 hits on (measured, `npm run
 * bench:subscriptions`). Under the bound a search costs at most ~20 ms of lookups; over it, what the
 * walk cost before the index existed, never more.
 */
const defaultMaxIndexHits = 2_000;

/**
 * Whether the trigram index can find `needle`: three characters or more, within a single name, and no
 * NUL (FTS5 reads its query as a C string, so a NUL ends it mid-phrase: "unterminated string").
 */
export function indexableNeedle(needle: string): boolean {
  return (
    !needle.includes(subscriptionSearchSeparator) && !needle.includes("\u0000") && [...needle].length >= trigramLength
  );
}

/**
 * The needle as one FTS5 phrase: quoted, so every character is literal (`%`, `_`, `*`, `-`, `"`, `:`,
 * AND/OR/NOT), with a quote doubled as FTS5 strings escape it. The trigram tokenizer turns the phrase into
 * the needle's consecutive trigrams, which occur in the key exactly where the needle does.
 */
export function searchPhrase(needle: string): string {
  return `"${needle.replaceAll('"', '""')}"`;
}

/**
 * Which of the two halves of an indexed search a condition is for: `lookup` takes the index's hits by
 * rowid, `walk` tests the store's subscriptions one by one. `few` is true when the index has at most the
 * bound of hits; each half is empty unless it is the one `few` chooses, so together they are the search.
 */
type TextHalf = { half: "lookup" | "walk"; few: SQL };

/**
 * The parts of a list request that decide its SQL; every value goes in a placeholder (see
 * {@link listValues}). A text search's shape says which of the three ways it is searched: `straddling` (the
 * needle holds the separator of the key's names: matches nothing), `indexed` (the trigram index can find it)
 * or `scanned` (too short for the index, or a NUL).
 */
type ListShape = {
  sort: SubscriptionListRequest["sort"];
  status: boolean;
  customer: boolean;
  product: boolean;
  variant: boolean;
  created?: RangeShape;
  canceled?: RangeShape;
  periodEnd?: RangeShape;
  search?: "email" | "straddling" | "indexed" | "scanned";
};
type RangeShape = { from: boolean; until: boolean };
type RangeName = "created" | "canceled" | "periodEnd";

function rangeShape(range: TimeRange | undefined): RangeShape | undefined {
  return range ? { from: Boolean(range.from), until: Boolean(range.until) } : undefined;
}

function searchShape(search: Search | undefined): ListShape["search"] {
  if (!search) return undefined;
  if (search.kind === "email") return "email";
  if (search.needle.includes(subscriptionSearchSeparator)) return "straddling";
  return indexableNeedle(search.needle) ? "indexed" : "scanned";
}

function listShape(request: SubscriptionListRequest): ListShape {
  return {
    sort: request.sort,
    status: Boolean(request.status),
    customer: Boolean(request.customerId),
    product: Boolean(request.productId),
    variant: Boolean(request.variantId),
    created: rangeShape(request.created),
    canceled: rangeShape(request.canceled),
    periodEnd: rangeShape(request.currentPeriodEnd),
    search: searchShape(request.search),
  };
}

/** The values of a list's placeholders; a value the shape has no placeholder for is not read. */
function listValues(storeId: string, request: SubscriptionListRequest, maxHits: number): Record<string, unknown> {
  const { search } = request;
  return {
    storeId,
    status: request.status,
    customerId: request.customerId,
    productId: request.productId,
    variantId: request.variantId,
    createdFrom: request.created?.from,
    createdUntil: request.created?.until,
    canceledFrom: request.canceled?.from,
    canceledUntil: request.canceled?.until,
    periodEndFrom: request.currentPeriodEnd?.from,
    periodEndUntil: request.currentPeriodEnd?.until,
    emailKey: search?.kind === "email" ? search.key : undefined,
    needle: search?.kind === "text" ? search.needle : undefined,
    phrase: search?.kind === "text" ? searchPhrase(search.needle) : undefined,
    // Past any real table size the page is empty anyway; capping keeps the bound value an exact integer.
    offset: Math.min((request.page - 1) * request.perPage, Number.MAX_SAFE_INTEGER),
    perPage: request.perPage,
    maxHits,
    maxHitsAndOne: maxHits + 1,
  };
}

function matches(search: NonNullable<ListShape["search"]>, lead: Leader | null, text: TextHalf | undefined): SQL {
  if (search === "email") return equals(subscriptions.customerEmailKey, "emailKey", lead === "email");
  // The needle would straddle two names of the key, and no single name holds the separator.
  if (search === "straddling") return sql`0`;
  // instr() compares plainly: `%` and `_` are literal, unlike LIKE, and nothing needs escaping. It decides
  // every match, also behind the index, so the index only has to find a superset (a row the index still
  // lists after an INSERT OR REPLACE, which fires no delete trigger, is never answered).
  const found = sql`instr(${subscriptions.searchText}, ${sql.placeholder("needle")}) > 0`;
  if (lead !== "text" || text?.half !== "lookup") return found;
  return sql`${subscriptions}.rowid IN (SELECT rowid FROM ${hitsTable} WHERE ${text.few}) AND ${found}`;
}

type Leader = "customer" | "email" | "variant" | "product" | "text";

/**
 * The filter whose index should drive the query: an id or e-mail names a handful to a few thousand
 * subscriptions, and its index (store, id, created_at, id) also gives the list's order. Without
 * ANALYZE statistics SQLite guesses that a two-sided date range beats an equality: for a variant and a
 * month of period ends it read every period end of the month (0.5 s over 200,000 subscriptions) instead
 * of the variant's 3,000 rows (9 ms; docs/benchmarks.md). A status is too common to lead over these.
 *
 * Free text of three characters or more comes next: the trigram index lists the matching subscriptions
 * of every store, which are looked up by rowid, checked, then sorted (past `defaultMaxIndexHits` hits
 * the store is walked as without the index, see listStatements). Behind an id it would cost as many
 * lookups as the index has hits, where the id's index bounds the work, so an id still leads. Shorter
 * text cannot be looked up: it is tested on each subscription the other filters leave.
 */
function leader(shape: ListShape): Leader | null {
  if (shape.customer) return "customer";
  if (shape.search === "email") return "email";
  if (shape.variant) return "variant";
  if (shape.product) return "product";
  if (shape.search === "indexed") return "text";
  return null;
}

/**
 * The WHERE clause of a list: the store first, so every filter shape can use one of the
 * `subscriptions_store_*` indexes. Subscriptions hidden by their customer are listed like any other.
 * An indexable text search is two conditions, one per half (`text`); without it, the walk alone.
 */
function listCondition(shape: ListShape, text?: TextHalf): SQL {
  const lead = leader(shape);
  const lookup = lead === "text" && text?.half === "lookup";
  // The walk plans as a search without the index did: the column filters choose their index.
  const free = lead === null || (lead === "text" && !lookup);
  // Behind the text index, no column index may drive: the rows come from the index's rowids.
  const listIndex = !lookup;
  const store =
    lead === "text" && text?.half === "walk"
      ? // NULL when the lookup half answers: the index search finds no store, and the walk ends at once.
        sql`${subscriptions.storeId} = (CASE WHEN ${text.few} THEN NULL ELSE ${bound("storeId", subscriptions.storeId)} END)`
      : equals(subscriptions.storeId, "storeId", listIndex);
  const conditions: SQL[] = [
    store,
    ...(shape.status ? [equals(subscriptions.status, "status", free)] : []),
    ...(shape.customer ? [equals(subscriptions.customerId, "customerId", lead === "customer")] : []),
    ...(shape.product ? [equals(subscriptions.productId, "productId", lead === "product")] : []),
    ...(shape.variant ? [equals(subscriptions.variantId, "variantId", lead === "variant")] : []),
    // Every list index holds created_at right after its leading column, so this range always helps.
    ...inRange(subscriptions.createdAt, "created", shape.created, listIndex),
    ...inRange(subscriptions.canceledAt, "canceled", shape.canceled, free),
    ...inRange(subscriptions.currentPeriodEnd, "periodEnd", shape.periodEnd, free),
    ...(shape.search ? [matches(shape.search, lead, text)] : []),
  ];
  return and(...conditions) as SQL;
}

/** Tuning of the list statements; tests lower the bound to reach the walk with a few rows. */
type ListOptions = { maxIndexHits?: number };

function listOrder(shape: ListShape) {
  const direction = shape.sort === "created_at" ? asc : desc;
  return [direction(subscriptions.createdAt), direction(subscriptions.id)];
}

/** The list of index hits of an indexed search (at most the bound plus one), and whether they are few. */
function indexHits(db: Database) {
  const hits = db.$with(hitsName).as(
    db
      .select({ rowid: sql<number>`rowid`.as("rowid") })
      .from(sql`${searchIndex}`)
      .where(sql`${searchIndex} MATCH ${sql.placeholder("phrase")}`)
      .limit(sql.placeholder("maxHitsAndOne")),
  );
  const few = sql`(SELECT count(*) FROM ${hitsTable}) <= ${sql.placeholder("maxHits")}`;
  return { hits, few };
}

/** One page of a list, by shape; built once per isolate for each shape (src/db/reusable.ts). */
const listPage = new ReusableQuery(resourceColumns, (db, columns, shape: ListShape) => {
  if (leader(shape) !== "text") {
    return db
      .select(columns)
      .from(subscriptions)
      .where(listCondition(shape))
      .orderBy(...listOrder(shape))
      .limit(sql.placeholder("perPage"))
      .offset(sql.placeholder("offset"));
  }
  const { hits, few } = indexHits(db);
  return db
    .with(hits)
    .select(columns)
    .from(subscriptions)
    .where(listCondition(shape, { half: "lookup", few }))
    .unionAll(
      db
        .select(columns)
        .from(subscriptions)
        .where(listCondition(shape, { half: "walk", few })),
    )
    .orderBy(...listOrder(shape))
    .limit(sql.placeholder("perPage"))
    .offset(sql.placeholder("offset"));
});

/** The filtered count of a list, by shape. */
const listCount = new ReusableQuery({ total: computed(count(), Number) }, (db, total, shape: ListShape) => {
  // count(*) lets SQLite answer from the narrowest index that holds the filtered columns.
  if (leader(shape) !== "text") return db.select(total).from(subscriptions).where(listCondition(shape));
  const { hits, few } = indexHits(db);
  const matching = db
    .select({ one: sql<number>`1`.as("one") })
    .from(subscriptions)
    .where(listCondition(shape, { half: "lookup", few }))
    .unionAll(
      db
        .select({ one: sql<number>`1`.as("one") })
        .from(subscriptions)
        .where(listCondition(shape, { half: "walk", few })),
    )
    .as("matching");
  return db.with(hits).select(total).from(matching);
});

/**
 * The two statements of a list: one page in a total order (creation time, then id, both in the sort's
 * direction, so equal times never make pages overlap or skip), and the filtered count.
 *
 * An indexable text search is the UNION ALL of its two halves over one list of index hits (at most the
 * bound plus one, so counting them stays cheap), which SQLite materializes once per statement. Whether
 * the index or the walk is cheaper depends on how common the needle is, which only the index knows:
 * `nie` is in every Polish "Miesięcznie", `tomasz adamczyk` in a hundred subscriptions.
 */
export function listStatements(
  db: Database,
  storeId: string,
  request: SubscriptionListRequest,
  options: ListOptions = {},
) {
  const shape = listShape(request);
  const values = listValues(storeId, request, options.maxIndexHits ?? defaultMaxIndexHits);
  return { page: listPage.bind(db, shape, values), count: listCount.bind(db, shape, values) };
}

/** One page of a store's subscriptions and the filtered total, read in one D1 round trip. */
export async function listSubscriptions(
  db: Database,
  storeId: string,
  request: SubscriptionListRequest,
  options: ListOptions = {},
): Promise<{ items: Subscription[]; total: number }> {
  const statements = listStatements(db, storeId, request, options);
  const [rows, [counted]] = await readTogether(db, [statements.page, statements.count]);
  return { items: rows.map(subscriptionView), total: counted?.total ?? 0 };
}
