import type { RequestIdVariables } from "hono/request-id";
import type { Database } from "./db/client";
import type { Caller } from "./http/auth";

/** Hono environment of every route: generated bindings plus per-request variables. */
export type AppEnv = {
  Bindings: Env;
  Variables: RequestIdVariables & {
    db: Database;
    /** Set by the auth guard on bearer routes. */
    caller: Caller;
  };
};
