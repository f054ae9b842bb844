import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { legacyHome, RequestDatabases } from "./shards";

/** The header that carries a D1 session bookmark to the client and back, so it reads its own writes. */
export const bookmarkHeader = "X-D1-Bookmark";

/**
 * Bookmarks are opaque, but D1 refuses malformed ones with an error; what a client may send back is
 * bounded to the characters and length bookmarks have, anything else is ignored (as if absent).
 */
const bookmarkShape = /^[0-9a-f]+(-[0-9a-f]+){1,7}$/i;
const maxBookmarkLength = 256;

/** Whether a request may write: every method but GET and HEAD (its session starts at the primary; kept reads go). */
export function mayWrite(method: string): boolean {
  return method !== "GET" && method !== "HEAD";
}

/** The session constraint of a request: reads go to the nearest replica at least as new as the client's bookmark. */
export function sessionConstraint(method: string, bookmark: string | undefined): string {
  if (mayWrite(method)) return "first-primary";
  const sent = bookmark?.trim();
  return sent && sent.length <= maxBookmarkLength && bookmarkShape.test(sent) ? sent : "first-unconstrained";
}

/**
 * Gives every request its databases (shards.ts), each a D1 session (Sessions API) opened on first use: read
 * routes may be served by a read replica near the Worker, writes go to the primary. The auth guard sets `db`
 * to the store's home once it knows the store; a warm read never opens the global database (its token is
 * cached), so it is opened only by what asks for it (`databases.global()`). The response carries the
 * bookmark of the store's home, tagged with it, for the next call (a replayed answer the one it was kept with).
 */
export const d1Session: MiddlewareHandler<AppEnv> = async (c, next) => {
  const databases = new RequestDatabases(c.env, sessionConstraint(c.req.method, c.req.header(bookmarkHeader)));
  c.set("databases", databases);
  await next();
  const bookmark = databases.bookmark(c.var.home ?? legacyHome);
  // A replayed answer (http/idempotency.ts) carries the bookmark of the request that made it.
  if (bookmark && !c.res.headers.has(bookmarkHeader)) c.header(bookmarkHeader, bookmark);
};
