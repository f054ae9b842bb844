import { and, eq, inArray, sql } from "drizzle-orm";
import type { MiddlewareHandler } from "hono";
import { z } from "zod";
import { setting } from "../config";
import { createDb, type Database } from "../db/client";
import { storeFenced } from "../db/fence";
import { apiTokens, products, storeDirectory, variants } from "../db/schema";
import { mayWrite } from "../db/session";
import { type Homes, legacyHome } from "../db/shards";
import type { AppEnv, Caller } from "../env";
import { constantTimeEqual, sha256Hex } from "../lib/crypto";
import { Lru } from "../lib/lru";
import { ApiError, messages } from "./errors";
import { announceLimit, takeGeneralLimit, tooManyRequests } from "./rate-limit";
import { readCache } from "./read-cache";
import { TokenCache, type VerifiedToken } from "./token-cache";

export const abilities = [
  "media:write",
  "products:read",
  "products:write",
  "products:publish",
  "subscriptions:read",
  "webhooks:manage",
] as const;
type Ability = (typeof abilities)[number];

/**
 * How a route treats `X-Service-Store`: `required` (prepare, complete), `unambiguous` (required only
 * when the token has several stores: the subscription list), `optional` (product-scoped calls).
 */
export type StoreRule = "required" | "unambiguous" | "optional";

/**
 * The path parameter whose id decides the store of a route of the `optional` rule when a token of several
 * stores sends no `X-Service-Store`, and what kind of id it is: the store is the one that owns that product,
 * or the product of that variant. Named by each route: the same parameter name carries a product id on one
 * route and a variant id on another.
 */
export type PathOwner = { kind: "product" | "variant"; param: string };

/** A guard's options; a route of the `optional` rule must say which path id names its store's resource. */
export type GuardOptions<S extends StoreRule = StoreRule> = { ability: Ability; store: S } & (S extends "optional"
  ? { owner: PathOwner }
  : { owner?: never });

/** The caller a route of store rule `S` sees: under `required` and `unambiguous` the store is always known. */
type ScopedCaller<S extends StoreRule> = S extends "optional" ? Caller : Caller & { storeId: string };

/** The environment of a route behind the guard of store rule `S`. */
export type GuardedEnv<S extends StoreRule> = AppEnv & { Variables: { caller: ScopedCaller<S> } };

const storeIdSchema = z.uuid();

/** This isolate's verified tokens (see token-cache.ts): a warm request reads no D1. */
export const tokenCache = new TokenCache();

/** The token of hash `wanted` and the directory entries of its stores, in one statement: one trip, however many stores. */
async function readToken(db: Database, wanted: string): Promise<VerifiedToken | null> {
  const [token] = await db
    .select({
      tokenHash: apiTokens.tokenHash,
      storeIds: apiTokens.storeIds,
      abilities: apiTokens.abilities,
      homes: sql<
        string | null
      >`(SELECT json_group_object(${storeDirectory.storeId}, ${storeDirectory.shard}) FROM ${storeDirectory} WHERE ${storeDirectory.storeId} IN (SELECT value FROM json_each(${apiTokens.storeIds})))`,
      // Whether one of the stores is being moved (src/db/move.ts): the entry is then kept for a second only.
      moving: sql<
        number | null
      >`(SELECT max(${storeDirectory.moving}) FROM ${storeDirectory} WHERE ${storeDirectory.storeId} IN (SELECT value FROM json_each(${apiTokens.storeIds})))`,
    })
    .from(apiTokens)
    .where(eq(apiTokens.tokenHash, wanted))
    .limit(1);
  // The lookup is by hash, so timing reveals nothing of the secret; compare again without early exit anyway.
  if (!token || !constantTimeEqual(token.tokenHash, wanted)) return null;
  const homes = JSON.parse(token.homes ?? "{}") as Record<string, string>;
  return {
    tokenHash: token.tokenHash,
    storeIds: token.storeIds,
    abilities: token.abilities,
    homes,
    ...(token.moving ? { moving: true } : {}),
  };
}

/**
 * Finds the token behind an `Authorization` header value; null for anything not a known bearer token.
 * A token read from D1 is trusted for `cacheSeconds` in this isolate, so revoking one takes that long.
 * A token one of whose stores is moving is read again from `primary`: a read replica behind the move's switch
 * would name the home the store is leaving (src/db/move.ts); only tokens of moving stores pay that trip.
 * Both databases are opened only when the token is not cached.
 */
async function authenticate(
  db: () => Database,
  primary: () => Database,
  authorization: string | undefined,
  cacheSeconds: number,
): Promise<VerifiedToken | null> {
  const match = /^Bearer +([\x21-\x7e]{1,512})$/i.exec(authorization?.trim() ?? "");
  if (!match?.[1]) return null;
  const hash = await sha256Hex(match[1]);
  return tokenCache.resolve(hash, cacheSeconds, async (wanted) => {
    const token = await readToken(db(), wanted);
    return token?.moving ? readToken(primary(), wanted) : token;
  });
}

/** The home database of each store of `scope`, by the token's cached directory entries. */
function homesOf(token: VerifiedToken, scope: readonly string[]): Map<string, string[]> {
  const homes = new Map<string, string[]>();
  for (const storeId of scope) {
    const home = token.homes?.[storeId] ?? legacyHome;
    homes.set(home, [...(homes.get(home) ?? []), storeId]);
  }
  return homes;
}

/**
 * Product or variant id (keyed `product:<id>`, `variant:<id>`) → its store, as found by {@link locateOwner},
 * for the last 10,000; a product never changes store, nor a variant product.
 */
const ownerStores = new Lru<string, string>(10_000);

/** The statement that finds which of `storeIds` holds the product or variant `id` (a variant by its product). */
function ownerQuery(db: Database, kind: PathOwner["kind"], id: string, storeIds: string[]) {
  if (kind === "variant") {
    return db
      .select({ storeId: products.storeId })
      .from(variants)
      .innerJoin(products, eq(products.id, variants.productId))
      .where(and(eq(variants.id, id), inArray(products.storeId, storeIds)))
      .limit(1);
  }
  return db
    .select({ storeId: products.storeId })
    .from(products)
    .where(and(eq(products.id, id), inArray(products.storeId, storeIds)))
    .limit(1);
}

/**
 * The home of the product or variant a route names when the request's stores live in several homes (a token
 * of several stores, no `X-Service-Store`): every home is asked at once which of its stores has it (one trip
 * of latency), and the answer is kept for the isolate. An unknown id goes to the first home, whose query then
 * answers its 404.
 */
async function locateOwner(
  databases: Homes,
  kind: PathOwner["kind"],
  routeId: string | undefined,
  homes: Map<string, string[]>,
): Promise<string> {
  const [first] = homes.keys();
  const id = routeId?.toLowerCase();
  if (!id || !storeIdSchema.safeParse(id).success) return first ?? legacyHome;
  const key = `${kind}:${id}`;
  const known = ownerStores.get(key);
  if (known) {
    for (const [home, storeIds] of homes) if (storeIds.includes(known)) return home;
  }
  const found = await Promise.all(
    [...homes].map(async ([home, storeIds]) => {
      const [row] = await ownerQuery(databases.home(home), kind, id, storeIds);
      return row ? { home, storeId: row.storeId } : null;
    }),
  );
  const hit = found.find((entry) => entry !== null);
  if (!hit) return first ?? legacyHome;
  ownerStores.set(key, hit.storeId);
  return hit.home;
}

/** Resolves the request's store from `X-Service-Store` and the token, in the order docs/api.md gives ("Authentication, stores, abilities"). */
export function resolveStore(
  header: string | undefined,
  tokenStoreIds: readonly string[],
  rule: StoreRule,
): { scope: readonly string[]; storeId: string | null } {
  const requested = header?.trim();
  if (requested) {
    if (!storeIdSchema.safeParse(requested).success) throw new ApiError(400, messages.invalidStoreId);
    const storeId = requested.toLowerCase();
    if (!tokenStoreIds.includes(storeId)) throw new ApiError(403, messages.noStoreAccess);
    return { scope: [storeId], storeId };
  }
  if (rule === "required") throw new ApiError(400, messages.storeHeaderRequired);
  if (tokenStoreIds.length === 1) return { scope: tokenStoreIds, storeId: tokenStoreIds[0] ?? null };
  if (rule === "unambiguous") throw new ApiError(400, messages.storeHeaderRequired);
  return { scope: tokenStoreIds, storeId: null };
}

/**
 * The bearer-route guard: 401 → store header (400 / 403) → ability (403) → general rate limit (429).
 * Every authenticated call counts toward its token's limit, even one refused by a later check.
 */
export function guard<S extends StoreRule>(options: GuardOptions<S>): MiddlewareHandler<GuardedEnv<S>> {
  return async (c, next) => {
    const cacheSeconds = setting(c.env, "TOKEN_CACHE_SECONDS");
    const token = await authenticate(
      () => c.var.databases.global(),
      () => createDb(c.env.DB),
      c.req.header("Authorization"),
      cacheSeconds,
    );
    if (!token) throw new ApiError(401, messages.unauthenticated);

    // Spent from this isolate's leased slice; the token's limiter is asked only when the slice runs low.
    const verdict = await takeGeneralLimit(c, `api:${token.tokenHash}`, setting(c.env, "API_LIMIT_PER_MINUTE"));
    // Announced now, refused only after the store and ability checks (their 400/403 carry the headers too).
    announceLimit(c, verdict);

    const { scope, storeId } = resolveStore(c.req.header("X-Service-Store"), token.storeIds, options.store);
    if (!token.abilities.includes("*") && !token.abilities.includes(options.ability)) {
      throw new ApiError(403, messages.unauthorized);
    }
    if (!verdict.allowed) throw tooManyRequests(verdict);

    const caller: Caller = {
      tokenHash: token.tokenHash,
      abilities: token.abilities,
      tokenStoreIds: token.storeIds,
      scope,
      storeId,
    };
    // The store's rows live in its home database (docs/scaling.md): every query of the route goes there.
    const homes = homesOf(token, scope);
    const [firstHome = legacyHome] = homes.keys();
    // Several homes only under the optional rule without the header: the route's path id decides.
    const owner = options.owner;
    const home =
      homes.size > 1 && owner
        ? await locateOwner(c.var.databases, owner.kind, c.req.param(owner.param), homes)
        : firstHome;
    c.set("home", home);
    c.set("db", c.var.databases.home(home));
    // resolveStore answered 400 above when a required or unambiguous store is not known.
    c.set("caller", caller as ScopedCaller<S>);
    try {
      await next();
    } finally {
      // A write of the route, done or not, before its answer leaves: the isolate's kept reads of the stores it may
      // have written go (read-cache.ts). A request refused above wrote nothing and forgets nothing.
      if (mayWrite(c.req.method)) readCache.forget(scope);
    }
    // A write its home refused because the store is moving (src/db/fence.ts): this isolate's entry of the
    // token may name the home the store is leaving, so the next request reads the directory again.
    if (storeFenced(c.error)) tokenCache.drop(token.tokenHash);
  };
}
