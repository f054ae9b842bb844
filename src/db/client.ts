import {
  createTableRelationsHelpers,
  type ExtractTablesWithRelations,
  extractTablesRelationalConfig,
} from "drizzle-orm";
import { DrizzleD1Database, SQLiteD1Session } from "drizzle-orm/d1";
import { SQLiteAsyncDialect, type SQLiteSession } from "drizzle-orm/sqlite-core";
import * as schema from "./schema";

export type Schema = typeof schema;
export type Relations = ExtractTablesWithRelations<Schema>;

/** Drizzle over a D1 binding or session, with the schema for typed and relational queries. */
export type Database = DrizzleD1Database<Schema> & { $client: D1Database };

/** A session Drizzle can run a {@link Database} on. */
export type DatabaseSession = SQLiteSession<"async", D1Result, Schema, Relations>;

/**
 * What `drizzle(d1, { schema })` derives from the schema on every call: the relational configuration of every
 * table. A request opens a database per D1 session, and deriving it again each time was a twentieth of a warm
 * read's CPU (docs/benchmarks.md, section 1); it is the same for every database, so it is derived once.
 */
const tablesConfig = extractTablesRelationalConfig<Relations>(schema, createTableRelationsHelpers);
const relationalSchema = { fullSchema: schema, schema: tablesConfig.tables, tableNamesMap: tablesConfig.tableNamesMap };

/** The SQL dialect; it keeps no state of a database (no casing is configured), so every database shares it. */
export const dialect = new SQLiteAsyncDialect();

/** Each database's D1 session, on which reusable statements are prepared per request (reusable.ts). */
const sessions = new WeakMap<Database, SQLiteD1Session<Schema, Relations>>();

/** A database over `session`, as drizzle() builds it but from the configuration derived once. */
export function databaseOn(session: DatabaseSession): Database {
  return new DrizzleD1Database<Schema>("async", dialect, session, relationalSchema) as Database;
}

/** Drizzle over the D1 binding (or a D1 session), with the schema for typed queries. */
export function createDb(d1: D1Database): Database {
  const session = new SQLiteD1Session<Schema, Relations>(d1, dialect, relationalSchema, {});
  const db = databaseOn(session);
  db.$client = d1;
  sessions.set(db, session);
  return db;
}

/** The D1 session of a database {@link createDb} made. */
export function sessionOf(db: Database): SQLiteD1Session<Schema, Relations> {
  const session = sessions.get(db);
  if (!session) throw new Error("not a database of createDb: it has no D1 session");
  return session;
}
