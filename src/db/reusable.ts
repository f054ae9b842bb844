import {
  Column,
  type DriverValueEncoder,
  entityKind,
  fillPlaceholders,
  is,
  type Placeholder,
  type Query,
  QueryPromise,
  SQL,
  Subquery,
  sql,
} from "drizzle-orm";
import type { RunnableQuery } from "drizzle-orm/runnable-query";
import {
  type PreparedQueryConfig,
  type SelectedFieldsOrdered,
  type SQLiteExecuteMethod,
  SQLitePreparedQuery,
  SQLiteSession,
} from "drizzle-orm/sqlite-core";
import {
  type Database,
  type DatabaseSession,
  databaseOn,
  dialect,
  type Relations,
  type Schema,
  sessionOf,
} from "./client";

/*
 * Statements whose SQL is built once per isolate and only bound per request. Building a statement in Drizzle
 * (the builder's tree, then its SQL text and parameter list) was a fifth of a warm read's CPU in `wrangler dev`
 * (docs/benchmarks.md, section 1), and a read builds the same text every time: only the values change.
 *
 * A statement is built with placeholders (`bound(name, column)`, `sql.placeholder(name)`) and prepared once
 * on a session that records what Drizzle asks of it: the SQL text, the placeholders, the selected fields
 * that map the rows back. Each request replays that on its own D1 session through the same session call
 * Drizzle makes (`prepareOneTimeQuery`), with the placeholders filled: the request gets the statement the
 * builder would have given it, usable alone or in `db.batch`, its rows mapped to the objects Drizzle makes.
 *
 * The rule that keeps a cached statement right: the builder sees only the shape, never the values, and the
 * cache is keyed by the whole shape. A value that changed the SQL would have to be in the shape to reach
 * the builder at all.
 */

/** What a Drizzle query builder asks of its session when prepared: replayed per request. */
type PrepareArguments = Parameters<DatabaseSession["prepareQuery"]>;

type AsyncPrepared = SQLitePreparedQuery<PreparedQueryConfig & { type: "async" }>;

type RowMapper = NonNullable<PrepareArguments[4]>;
type Decoder = { mapFromDriverValue(value: unknown): unknown };

/** An SQL expression's decoder (`mapWith`), which Drizzle keeps internal. */
const decoderOfSql = (expression: SQL): Decoder => (expression as unknown as { decoder: Decoder }).decoder;

/** The decoder Drizzle's row mapping (`mapResultRow`) uses for a selected field. */
function decoderOf(field: unknown): Decoder {
  if (is(field, Column)) return field;
  if (is(field, SQL)) return decoderOfSql(field);
  if (is(field, Subquery)) return decoderOfSql(field._.sql as SQL);
  return decoderOfSql((field as SQL.Aliased).sql);
}

/**
 * Drizzle's row mapping of a flat selection (every field a top-level key, no joined table) with each field's
 * decoder found once: Drizzle looks each one up again on every row, which was most of the mapping's CPU.
 * The same object as Drizzle's: the fields' keys in their order, NULL as null, every other value decoded.
 * Undefined for any other selection, which Drizzle then maps itself.
 */
function flatRowMapper(fields: SelectedFieldsOrdered | undefined): RowMapper | undefined {
  if (!fields?.every(({ path }) => path.length === 1)) return undefined;
  const keys = fields.map(({ path }) => path[0] as string);
  const decoders = fields.map(({ field }) => decoderOf(field));
  return (rows) =>
    rows.map((row) => {
      const result: Record<string, unknown> = {};
      for (let i = 0; i < keys.length; i++) {
        const raw = row[i];
        result[keys[i] as string] = raw === null ? null : (decoders[i] as Decoder).mapFromDriverValue(raw);
      }
      return result;
    });
}

/** A statement as Drizzle prepared it on the recording session: the arguments of the call, nothing run. */
class Recording extends SQLitePreparedQuery<PreparedQueryConfig & { type: "async" }> {
  static override readonly [entityKind]: string = "ReusableRecording";
  /** Set by the select builder after preparing (how rows of outer joins map to null): replayed with the rest. */
  joinsNotNullableMap?: Record<string, boolean>;
  /** The rows' mapping per request: Drizzle's own mapper if it gave one, else the flat one when it applies. */
  readonly mapRows: RowMapper | undefined;

  constructor(readonly call: PrepareArguments) {
    super("async", call[2], call[0]);
    const [, fields, method, , mapper] = call;
    // Only a statement answering all its rows: a custom mapper replaces Drizzle's mapping of every method.
    this.mapRows = mapper ?? (method === "all" ? flatRowMapper(fields) : undefined);
  }

  run(): never {
    throw new Error("a recorded statement is never run; bind it to a database");
  }
  all(): never {
    return this.run();
  }
  get(): never {
    return this.run();
  }
  values(): never {
    return this.run();
  }
}

/** The session the statements are built on once per isolate: it records the preparation and runs nothing. */
class RecordingSession extends SQLiteSession<"async", D1Result, Schema, Relations> {
  static override readonly [entityKind]: string = "ReusableRecordingSession";

  prepareQuery(...call: PrepareArguments): Recording {
    return new Recording(call);
  }

  transaction(): never {
    throw new Error("statements are only built on the recording session");
  }
}

/** Its database: what the builders build on (it has no D1 client; nothing it builds is run through it). */
const recordingDb = databaseOn(new RecordingSession(dialect));

/**
 * A placeholder for the value `name` compared with `column`: the value goes through the column's encoder when
 * it is filled in, as a literal compared with the column would (a Date of a timestamp column, for instance).
 */
export function bound(name: string, column: DriverValueEncoder<never, unknown>): Placeholder {
  // Typed as the placeholder it stands for, which is what Drizzle's operators accept in a value's place.
  return sql.param(sql.placeholder(name), column as DriverValueEncoder<unknown, unknown>) as unknown as Placeholder;
}

/** A statement built for one request: prepared on the request's session when it runs or joins a batch. */
class BoundQuery<T> extends QueryPromise<T> implements RunnableQuery<T, "sqlite"> {
  static override readonly [entityKind]: string = "BoundQuery";
  declare readonly _: { readonly dialect: "sqlite"; readonly result: T };
  private prepared: AsyncPrepared | undefined;

  constructor(
    private readonly db: Database,
    private readonly recording: Recording,
    private readonly values: Readonly<Record<string, unknown>>,
  ) {
    super();
  }

  /** The SQL and bound values this request sends, as the builder's `toSQL()` gives them. */
  toSQL(): Query {
    const { sql: text, params } = this.recording.getQuery();
    return { sql: text, params: fillPlaceholders(params, this.values) };
  }

  /** What `db.batch` and `execute` call: the statement prepared on the request's own session. */
  _prepare(): AsyncPrepared {
    if (this.prepared) return this.prepared;
    const [, fields, method, arrayMode, , metadata, cacheConfig] = this.recording.call;
    const prepared = sessionOf(this.db).prepareOneTimeQuery(
      this.toSQL(),
      fields as SelectedFieldsOrdered | undefined,
      method as SQLiteExecuteMethod,
      arrayMode,
      this.recording.mapRows,
      metadata,
      cacheConfig,
    );
    // Drizzle's select sets this internal field on its prepared statement the same way, after preparing it.
    Object.assign(prepared, { joinsNotNullableMap: this.recording.joinsNotNullableMap });
    this.prepared = prepared;
    return prepared;
  }

  override execute(): Promise<T> {
    return this._prepare().execute() as Promise<T>;
  }
}

/** What a builder may return: any Drizzle statement that can be prepared (select, set operation, with). */
type Preparable = RunnableQuery<unknown, "sqlite"> & { prepare(): unknown };

/** Shapes kept per statement; a shape past them is built again when it comes back. */
const defaultMaxShapes = 256;

/**
 * A statement built once per isolate for each shape (`build(db, shape)`; JSON data, the cache's key) and
 * bound per request to the values of its placeholders.
 */
export class ReusableQuery<Shape, Q extends Preparable> {
  private readonly recordings = new Map<string, Recording>();
  /** How many times a shape was built: the cache saved every other {@link ReusableQuery.bind}. */
  builds = 0;

  constructor(
    private readonly build: (db: Database, shape: Shape) => Q,
    private readonly maxShapes = defaultMaxShapes,
  ) {}

  /** The statement of `shape` on `db`, its placeholders filled from `values`. */
  bind(db: Database, shape: Shape, values: Readonly<Record<string, unknown>>): BoundQuery<Q["_"]["result"]> {
    const key = JSON.stringify(shape) ?? "";
    let recording = this.recordings.get(key);
    if (!recording) {
      recording = this.record(shape);
      this.recordings.set(key, recording);
      this.builds++;
      while (this.recordings.size > this.maxShapes) {
        const oldest = this.recordings.keys().next().value;
        if (oldest === undefined) break;
        this.recordings.delete(oldest);
      }
    }
    return new BoundQuery(db, recording, values);
  }

  private record(shape: Shape): Recording {
    const recording = this.build(recordingDb, shape).prepare();
    if (!(recording instanceof Recording)) throw new Error("the statement was not prepared on the recording session");
    return recording;
  }
}
