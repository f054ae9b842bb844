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

/** Reads a numeric configuration variable, falling back to its documented default. */
export function numberVar(value: string | undefined, fallback: number): number {
  const parsed = Number(value);
  return value !== undefined && value !== "" && Number.isFinite(parsed) && parsed > 0 ? parsed : fallback;
}

/** Reads a numeric configuration variable where 0 is meaningful (e.g. "cache nothing"). */
export function nonNegativeVar(value: string | undefined, fallback: number): number {
  const parsed = Number(value);
  return value !== undefined && value !== "" && Number.isFinite(parsed) && parsed >= 0 ? parsed : fallback;
}
