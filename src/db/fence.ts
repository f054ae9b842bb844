import { sql } from "drizzle-orm";
import { storeFences } from "./schema";

/**
 * A write refused because its store is fenced in that database (a move is copying its rows, or has just
 * switched them to another database; migrations/0004's triggers). Nothing of the write's batch was written.
 */
class StoreFencedError extends Error {
  constructor(cause: unknown) {
    super("the store is moving between databases: writes are held", { cause });
    this.name = "StoreFencedError";
  }
}

/** The text every fence trigger raises with (migrations/0004_store_move.sql). */
const fenceMarker = "store_fenced";

/**
 * The write failure as a {@link StoreFencedError} when a fence trigger raised it, else null. D1 tells
 * failures apart only by SQLite's text, which it puts in the error or its cause (Drizzle adds one more cause):
 * this is the one place that reads it.
 */
export function storeFenced(error: unknown): StoreFencedError | null {
  if (error instanceof StoreFencedError) return error;
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    if (current.message.includes(fenceMarker)) return new StoreFencedError(error);
    current = current.cause;
  }
  return null;
}

/** Whether the store's rows in `db` are fenced (its id in `store_fences`), as an SQL condition on `storeId`. */
export function fencedStore(storeId: unknown) {
  return sql`EXISTS (SELECT 1 FROM ${storeFences} WHERE ${storeFences.storeId} = ${storeId})`;
}

/**
 * How long an isolate keeps a token while one of its stores is moving (src/http/token-cache.ts), instead of
 * `TOKEN_CACHE_SECONDS`: a move waits this long (and a margin) after switching the store's home.
 */
export const MOVING_TOKEN_CACHE_SECONDS = 1;
