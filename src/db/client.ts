import {
  createTableRelationsHelpers,
  type ExtractTablesWithRelations,
  extractTablesRelationalConfig,
} from "drizzle-orm";
import { DrizzleD1Database, SQLiteD1Session } from "drizzle-orm/d1";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import * as schema from "./schema";

export type Schema = typeof schema;
type Relations = ExtractTablesWithRelations<Schema>;

/** Drizzle over a D1 binding or session, with the schema for typed and relational queries. */
export type Database = DrizzleD1Database<Schema> & { $client: D1Database };

/**
 * What `drizzle(d1, { schema })` derives from the schema on every call: the relational configuration of every
 * table. A request opens a database per D1 session, and deriving it again each time was a twentieth of a warm
 * read's CPU (docs/benchmarks.md, section 1); it is the same for every database, so it is derived once.
 */
const tablesConfig = extractTablesRelationalConfig<Relations>(schema, createTableRelationsHelpers);
const relationalSchema = { fullSchema: schema, schema: tablesConfig.tables, tableNamesMap: tablesConfig.tableNamesMap };

/** The SQL dialect; it keeps no state of a database (no casing is configured), so every database shares it. */
export const dialect = new SQLiteAsyncDialect();

/** Drizzle over the D1 binding (or a D1 session), with the schema for typed queries. */
export function createDb(d1: D1Database): Database {
  const session = new SQLiteD1Session<Schema, Relations>(d1, dialect, relationalSchema, {});
  // What drizzle() builds, but from the configuration derived once.
  const db = new DrizzleD1Database<Schema>("async", dialect, session, relationalSchema) as Database;
  // Reusable statements (reusable.ts) send their SQL to the request's D1 session through Drizzle's `$client`.
  db.$client = d1;
  return db;
}
