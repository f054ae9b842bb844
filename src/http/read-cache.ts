import type { MiddlewareHandler } from "hono";
import { setting } from "../config";
import { bookmarkHeader, mayWrite, sessionConstraint } from "../db/session";
import type { AppEnv } from "../env";
import { Lru } from "../lib/lru";

/**
 * The isolate's copy of the read answers it gave last (docs/latency.md, "Read answers kept for a second"):
 * a product read or a cross-sell list asked again within `READ_CACHE_MS` is answered from memory, without
 * its D1 trip. Such a read is as fresh as D1 promises a read without a bookmark to be (any replica, which
 * may lag the primary), plus at most that time:
 * - a write through this isolate forgets its stores' answers before it answers (the guard, auth.ts), so a
 *   client whose calls reach this isolate reads its own writes;
 * - a request carrying a bookmark is never answered from here: it reads at least the writes it names;
 * - an answer is kept only when no write ran in this isolate while it was read, so a read that raced a
 *   write is never kept past that write.
 * Only 200 answers are kept, keyed by everything the answer depends on: the URL (path and query as sent,
 * origin included: private links are signed for it) and the stores the caller's token may see there.
 */

/** How a kept read is described to API users (the OpenAPI descriptions of the routes that keep theirs). */
export const keptReads =
  "An edge isolate may give the same answer again for up to `READ_CACHE_MS` (1,000 by default) without reading the database, unless the request carries an `X-D1-Bookmark` (it then reads at least the writes that bookmark names); a write through the same isolate is seen at once.";

/** Bytes of answers kept per isolate (counted as two bytes a character); part of the isolate's memory plan. */
const READ_CACHE_BYTES = 1024 * 1024;
/** An answer larger than this is not kept (a full page of 100 cross-sells is ~40 KB of JSON). */
const READ_CACHE_ENTRY_BYTES = 64 * 1024;

type Answer = {
  body: string;
  contentType: string;
  /** The bookmark the first answer carried: the data is as of that bookmark. */
  bookmark: string | undefined;
  /** The stores a write to any of which makes the answer stale. */
  stores: readonly string[];
  expiresAt: number;
  bytes: number;
};

/** A read's place in the isolate's writes, taken when it starts: its answer is kept only if no write came since. */
type ReadTicket = { readonly writes: number };

/** Read answers per isolate: bounded by bytes, least recently used first out, each for a bounded time. */
export class ReadCache {
  private readonly answers: Lru<string, Answer>;
  private readonly maxEntryBytes: number;
  private writes = 0;

  constructor(private readonly options: { now?: () => number; maxBytes?: number; maxEntryBytes?: number } = {}) {
    this.answers = new Lru(options.maxBytes ?? READ_CACHE_BYTES, (answer) => answer.bytes);
    this.maxEntryBytes = options.maxEntryBytes ?? READ_CACHE_ENTRY_BYTES;
  }

  /** Bytes held now. */
  get size(): number {
    return this.answers.weight;
  }

  /** The answer of `key` while it is fresh. */
  get(key: string): Answer | undefined {
    const answer = this.answers.get(key);
    if (answer && this.now() >= answer.expiresAt) {
      this.answers.delete(key);
      return undefined;
    }
    return answer;
  }

  /** Taken before a read goes to D1. */
  ticket(): ReadTicket {
    return { writes: this.writes };
  }

  /** Keeps `answer` for `ttlMs` from the read's start, unless a write ran since `ticket` or it is too large. */
  keep(
    key: string,
    ticket: ReadTicket,
    startedAt: number,
    ttlMs: number,
    answer: Pick<Answer, "body" | "contentType" | "bookmark" | "stores">,
  ): void {
    const bytes = (answer.body.length + key.length) * 2;
    if (ticket.writes !== this.writes || !(ttlMs > 0) || bytes > this.maxEntryBytes) return;
    this.answers.set(key, { ...answer, expiresAt: startedAt + ttlMs, bytes });
  }

  /** A write to `stores` (every store when null) is under way or done: their answers go, and no read in flight is kept. */
  forget(stores: readonly string[] | null): void {
    this.writes++;
    if (stores === null) this.answers.clear();
    else this.answers.deleteWhere((answer) => answer.stores.some((store) => stores.includes(store)));
  }

  now(): number {
    return this.options.now?.() ?? Date.now();
  }
}

/** This isolate's read answers. */
export const readCache = new ReadCache();

/**
 * A bearer read route's answers kept in {@link readCache}: placed after the guard, so every request is
 * authenticated, scoped and counted against its limit before an answer is given from memory.
 */
export const cachedRead: MiddlewareHandler<AppEnv> = async (c, next) => {
  const ttlMs = setting(c.env, "READ_CACHE_MS");
  const withBookmark = sessionConstraint(c.req.method, c.req.header(bookmarkHeader)) !== "first-unconstrained";
  if (c.req.method !== "GET" || withBookmark || ttlMs === 0) return next();

  const stores = c.var.caller.scope;
  const key = `${c.req.url}\n${stores.join(",")}`;
  const kept = readCache.get(key);
  if (kept) {
    if (kept.bookmark) c.header(bookmarkHeader, kept.bookmark);
    return c.body(kept.body, 200, { "Content-Type": kept.contentType });
  }

  const ticket = readCache.ticket();
  const startedAt = readCache.now();
  await next();
  if (c.res.status !== 200 || c.error) return;
  readCache.keep(key, ticket, startedAt, ttlMs, {
    body: await c.res.clone().text(),
    contentType: c.res.headers.get("Content-Type") ?? "application/json",
    bookmark: c.var.home ? c.var.databases.bookmark(c.var.home) : undefined,
    stores,
  });
};

/**
 * The routes that write stores of no caller (the development fixtures, a store's move) forget every answer
 * once a write of theirs is done; a bearer route's writes forget their caller's stores in the guard (auth.ts).
 * Placed after the route's gate, never before it: a refused request wrote nothing, and if it forgot, anyone
 * could keep every isolate's answers forgotten and send every read to D1.
 */
export const forgetEveryRead: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!mayWrite(c.req.method)) return next();
  try {
    await next();
  } finally {
    readCache.forget(null);
  }
};
