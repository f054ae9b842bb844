import { Column, type DriverValueEncoder, fillPlaceholders, is, type Query, type SQL, sql } from "drizzle-orm";
import type { Database } from "./client";

/*
 * Statements whose SQL is built once per isolate and only bound per request. Building a statement in Drizzle
 * (the builder's tree, then its SQL text and parameter list) was a fifth of a warm read's CPU in `wrangler dev`
 * (docs/benchmarks.md, section 1), and a read builds the same text every time: only the values change.
 *
 * Only Drizzle's public API is used: a statement is built with placeholders (`bound(name, column)`,
 * `sql.placeholder(name)`) and turned into its SQL text and parameters once (`toSQL()`); each request fills
 * the placeholders (`fillPlaceholders`, what Drizzle's own prepared statements do) and sends the text to its
 * D1 session (`db.$client`) through D1's own API, alone or several in one `batch` (one round trip). The rows
 * come back as arrays in the selection's order and are decoded by each selected column's own
 * `mapFromDriverValue`, or by the decoder a computed field declares: the objects Drizzle would have made.
 *
 * Drizzle's prepared statements (`.prepare()`) are not used because they are bound to the session they were
 * prepared on, while every request has its own D1 session (its bookmark), and Drizzle's `db.batch` sends a
 * prepared statement's placeholders unfilled.
 *
 * The rule that keeps a cached statement right: the builder sees only the shape, never the values, and the
 * cache is keyed by the whole shape. A value that changed the SQL would have to be in the shape to reach
 * the builder at all.
 */

/**
 * A selected SQL expression and how D1's value becomes the row's: Drizzle keeps an expression's `mapWith` to
 * itself, so a reusable statement states it.
 */
export type Computed<T> = { readonly expression: SQL<T>; readonly decode: (raw: unknown) => T };

/** {@link Computed}: `expression`, its D1 value decoded by `decode`. */
export function computed<T>(expression: SQL<T>, decode: (raw: unknown) => T): Computed<T> {
  return { expression, decode };
}

type Field = Column | Computed<unknown>;
/** What a reusable statement selects: each key a column or a computed expression, in the order selected. */
export type Fields = Readonly<Record<string, Field>>;
/** The same fields as Drizzle's `select()` takes them. */
type Selection<F extends Fields> = { [K in keyof F]: F[K] extends Computed<infer T> ? SQL<T> : F[K] };

/** What a builder may return: any Drizzle select (or set operation, or `with`) that can show its SQL. */
type Buildable = PromiseLike<readonly unknown[]> & { toSQL(): Query };
/** A row of what the builder's statement answers. */
type RowOf<Q extends Buildable> = Awaited<Q>[number];

type Decoder = (raw: unknown) => unknown;

/** The statement of one shape: its SQL text with placeholders, and how a row of it is decoded. */
class Built<Row> {
  private readonly keys: readonly string[];
  private readonly decoders: readonly Decoder[];

  constructor(
    readonly query: Query,
    fields: Fields,
  ) {
    this.keys = Object.keys(fields);
    this.decoders = Object.values(fields).map((field) =>
      is(field, Column) ? (raw: unknown) => field.mapFromDriverValue(raw) : field.decode,
    );
  }

  /** A row from D1's array of column values; NULL stays null, as Drizzle maps it. */
  decode(values: readonly unknown[]): Row {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < this.keys.length; i++) {
      const raw = values[i];
      row[this.keys[i] as string] = raw === null || raw === undefined ? null : (this.decoders[i] as Decoder)(raw);
    }
    return row as Row;
  }
}

/** A statement bound to one request's database and values: run alone ({@link all}) or in {@link readTogether}. */
class BoundRead<Row> {
  constructor(
    private readonly db: Database,
    private readonly built: Built<Row>,
    private readonly values: Readonly<Record<string, unknown>>,
  ) {}

  /** The SQL and bound values this request sends, as the builder's `toSQL()` gives them. */
  toSQL(): Query {
    const { sql: text, params } = this.built.query;
    return { sql: text, params: fillPlaceholders(params, this.values) };
  }

  /** The statement on the request's D1 session, its values bound. */
  statement(): D1PreparedStatement {
    const { sql: text, params } = this.toSQL();
    return this.db.$client.prepare(text).bind(...params);
  }

  /** Runs the statement alone (one round trip) and answers its rows. */
  async all(): Promise<Row[]> {
    const rows = await this.statement().raw();
    return rows.map((values) => this.built.decode(values));
  }

  /** The rows of this statement's result in a D1 batch (objects keyed by column, in the selection's order). */
  rowsOf(result: D1Result): Row[] {
    return result.results.map((row) => this.built.decode(Object.values(row as object)));
  }
}

/** The rows each read of a {@link readTogether} answers, in order. */
type RowsOf<Reads extends readonly BoundRead<unknown>[]> = {
  [K in keyof Reads]: Reads[K] extends BoundRead<infer Row> ? Row[] : never;
};

/** Runs `reads` in one D1 batch (one round trip, one snapshot) and answers each one's rows. */
export async function readTogether<const Reads extends readonly BoundRead<unknown>[]>(
  db: Database,
  reads: Reads,
): Promise<RowsOf<Reads>> {
  const results = await db.$client.batch(reads.map((read) => read.statement()));
  return reads.map((read, i) => read.rowsOf(results[i] as D1Result)) as RowsOf<Reads>;
}

/**
 * A placeholder for the value `name` compared with `column`: the value goes through the column's encoder when
 * it is filled in, as a literal compared with the column would (a Date of a timestamp column, for instance).
 */
export function bound(name: string, column: DriverValueEncoder<never, unknown>): SQL {
  return sql`${sql.param(sql.placeholder(name), column as DriverValueEncoder<unknown, unknown>)}`;
}

/** `(a, b, …)`: a list of {@link bound} values for `inArray`, which takes a list as SQL. */
export function boundList(values: readonly SQL[]): SQL {
  return sql`(${sql.join([...values], sql`, `)})`;
}

/** Shapes kept per statement; a shape past them is built again when it comes back. */
const defaultMaxShapes = 256;

/**
 * A statement built once per isolate for each shape (`build(db, selection, shape)`; JSON data, the cache's
 * key) that selects `fields`, and bound per request to the values of its placeholders.
 */
export class ReusableQuery<Shape, F extends Fields, Q extends Buildable> {
  private readonly built = new Map<string, Built<RowOf<Q>>>();
  private readonly selection: Selection<F>;
  /** How many times a shape was built: the cache saved every other {@link ReusableQuery.bind}. */
  builds = 0;

  constructor(
    private readonly fields: F,
    private readonly build: (db: Database, selection: Selection<F>, shape: Shape) => Q,
    private readonly maxShapes = defaultMaxShapes,
  ) {
    this.selection = Object.fromEntries(
      Object.entries(fields).map(([key, field]) => [key, is(field, Column) ? field : field.expression]),
    ) as Selection<F>;
  }

  /** The statement of `shape` on `db`, its placeholders filled from `values`. */
  bind(db: Database, shape: Shape, values: Readonly<Record<string, unknown>>): BoundRead<RowOf<Q>> {
    const key = JSON.stringify(shape) ?? "";
    let built = this.built.get(key);
    if (!built) {
      built = new Built(this.build(db, this.selection, shape).toSQL(), this.fields);
      this.built.set(key, built);
      this.builds++;
      while (this.built.size > this.maxShapes) {
        const oldest = this.built.keys().next().value;
        if (oldest === undefined) break;
        this.built.delete(oldest);
      }
    }
    return new BoundRead(db, built, values);
  }
}
