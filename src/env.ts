import type { RequestIdVariables } from "hono/request-id";
import type { Database } from "./db/client";
import type { RequestDatabases } from "./db/shards";
import type { KeyClaim, RouteKeyClaim } from "./lib/idempotency";

/** Who is calling and which stores this request may touch. */
export type Caller = {
  tokenHash: string;
  abilities: readonly string[];
  /** Every store the token may act on. */
  tokenStoreIds: readonly string[];
  /** The stores this request is scoped to: the requested store, or all of the token's when none was named. */
  scope: readonly string[];
  /** The one store of the request when it is known (header, or a single-store token). */
  storeId: string | null;
};

/** Hono environment of every route: generated bindings plus per-request variables. */
export type AppEnv = {
  Bindings: Env;
  Variables: RequestIdVariables & {
    /** The store's home database, set by the auth guard once it knows the store (bearer routes only). */
    db: Database;
    /** The request's databases: the global one and each store home it opens. */
    databases: RequestDatabases;
    /** The name of the store's home (its D1 binding), set by the auth guard with `db`. */
    home?: string;
    /** Set by the auth guard on bearer routes. */
    caller: Caller;
    /** A write's claim of its `Idempotency-Key`, set when it sent one (http/idempotency.ts); awaited before its change. */
    keyClaim?: Promise<KeyClaim>;
    /** The same claim when the route makes it in its own call of the store (http/idempotency.ts `routeClaim`). */
    keyRequest?: RouteKeyClaim;
    /** Set when a route's own CORS policy answered the request (http/cors.ts `routeCors`). */
    corsAnswered?: boolean;
  };
};
