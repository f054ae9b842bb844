import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { every } from "hono/combine";
import type { AppEnv } from "../env";
import { type GuardedEnv, type GuardOptions, guard, type StoreRule } from "./auth";
import { paramsFirst } from "./validate";

const ErrorBody = z.object({ message: z.string() }).openapi("Error");
const ValidationErrorBody = z
  .object({ message: z.string(), errors: z.record(z.string(), z.array(z.string())) })
  .openapi("ValidationError");

const errorDescriptions = {
  400: "Malformed id, store header or request",
  401: "Missing or invalid bearer token",
  403: "No access to the store, or the action is unauthorized",
  404: "Not found",
  409: "Conflict with the resource's state",
  410: "Gone",
  413: "Request body too large",
  422: "Validation failure or a state that forbids the action",
  429: "Too many requests; see Retry-After",
  502: "An upstream service is unavailable",
} as const;
type ErrorStatus = keyof typeof errorDescriptions;

/** OpenAPI response entries for the given error statuses, with the specification's bodies. */
export function errorResponses(...statuses: ErrorStatus[]) {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: errorDescriptions[status],
        content: {
          "application/json": { schema: status === 422 ? z.union([ValidationErrorBody, ErrorBody]) : ErrorBody },
        },
      },
    ]),
  );
}

/** Statuses every bearer route can answer before its own logic runs. */
export const bearerErrors = [401, 403, 429] as const;

/**
 * A documented bearer route: the guard (401 → store → ability → 429) runs first, then path ids
 * (400), then the OpenAPI validators of query and body.
 */
export function bearerRoute<const R extends RouteConfig, S extends StoreRule>(
  config: R & {
    guard: GuardOptions<S>;
    /** Route-specific checks between the guard and path ids (e.g. the store's complete limit). */
    afterGuard?: MiddlewareHandler<GuardedEnv<S>>[];
  },
) {
  const { guard: guardOptions, afterGuard = [], ...route } = config;
  // One middleware whose type carries the guard's caller, so a handler of a required store reads a string.
  const checks = every(guard(guardOptions), ...afterGuard, ...paramsMiddleware(route)) as MiddlewareHandler<
    GuardedEnv<S>
  >;
  return createRoute({ ...route, security: [{ bearerAuth: [] }], middleware: [checks] as const });
}

/** A documented route without a bearer token (the byte PUT): its own checks, then path ids. */
export function openRoute<const R extends RouteConfig>(config: R & { checks: MiddlewareHandler<AppEnv>[] }) {
  const { checks, ...route } = config;
  return createRoute({ ...route, middleware: [...checks, ...paramsMiddleware(route)] as const });
}

function paramsMiddleware(route: RouteConfig) {
  const params = route.request?.params;
  return params ? [paramsFirst(params as never)] : [];
}
