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

const storeHeaderDescriptions: Record<StoreRule, string> = {
  required: "The store the call acts on; required (400 without it), 403 when the token has no access to it.",
  unambiguous:
    "The store the call acts on; required only when the token has several stores (400 without it), 403 when the token has no access to it.",
  optional:
    "Limits the call to one of the token's stores (403 when the token has no access to it); without it every store of the token is searched.",
};

/**
 * The documented `X-Service-Store` header of a route with store rule `rule`. Typed as a plain string with
 * the uuid format: the guard has already checked it (400 `Invalid store ID.`) by the time the router's header
 * validator runs, and an empty value, which the guard reads as absent, must not turn into a 422 there.
 */
function storeHeader(rule: StoreRule) {
  const header = z.string().openapi({ format: "uuid", description: storeHeaderDescriptions[rule] });
  return { "X-Service-Store": rule === "required" ? header : header.optional() };
}

/** A route's own documented headers, if any, plus `X-Service-Store`. */
function withStoreHeader(headers: unknown, rule: StoreRule) {
  return headers instanceof z.ZodObject ? headers.extend(storeHeader(rule)) : z.object(storeHeader(rule));
}

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
  return createRoute({
    ...route,
    request: { ...route.request, headers: withStoreHeader(route.request?.headers, guardOptions.store) },
    security: [{ bearerAuth: [] }],
    middleware: [checks] as const,
  });
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

type SchemaNode = { [key: string]: unknown };
const isNode = (value: unknown): value is SchemaNode => typeof value === "object" && value !== null;
const componentRef = "#/components/schemas/";

/** Names of the component schemas `value` refers to, directly or through the components it names. */
function referencedSchemas(value: unknown, components: Record<string, unknown>, found = new Set<string>()) {
  if (Array.isArray(value)) {
    for (const item of value) referencedSchemas(item, components, found);
  } else if (isNode(value)) {
    const ref = value.$ref;
    if (typeof ref === "string" && ref.startsWith(componentRef)) {
      const name = ref.slice(componentRef.length);
      if (!found.has(name)) {
        found.add(name);
        referencedSchemas(components[name], components, found);
      }
    }
    for (const child of Object.values(value)) referencedSchemas(child, components, found);
  }
  return found;
}

/** Lists every property that has a default among the required ones, in `schema` and the schemas inside it. */
function requireDefaulted(schema: unknown): void {
  if (Array.isArray(schema)) {
    for (const item of schema) requireDefaulted(item);
    return;
  }
  if (!isNode(schema)) return;
  if (isNode(schema.properties)) {
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    for (const [name, property] of Object.entries(schema.properties)) {
      if (isNode(property) && "default" in property) required.add(name);
    }
    if (required.size > 0) schema.required = [...required];
  }
  for (const key of ["properties", "items", "allOf", "anyOf", "oneOf", "additionalProperties"]) {
    const child = schema[key];
    if (key === "properties" && isNode(child)) requireDefaulted(Object.values(child));
    else requireDefaulted(child);
  }
}

/**
 * The generator documents every zod schema by what it accepts, so a field with a default is optional. A
 * response always carries such a field (the default filled in), so the schemas only responses use list it
 * as required; a client generated from the document then need not check for an absent field that never is.
 * A schema a request uses too keeps the accepting form: there the field may be left out.
 */
export function documentResponsesAsSent<D extends { paths?: unknown; components?: { schemas?: unknown } }>(
  document: D,
): D {
  const components = (document.components?.schemas ?? {}) as Record<string, unknown>;
  const requestParts: unknown[] = [];
  const responseParts: unknown[] = [];
  for (const pathItem of Object.values((document.paths ?? {}) as Record<string, Record<string, unknown>>)) {
    for (const operation of Object.values(pathItem)) {
      if (!isNode(operation)) continue;
      requestParts.push(operation.parameters, operation.requestBody);
      responseParts.push(operation.responses);
    }
  }
  const requested = referencedSchemas(requestParts, components);
  for (const name of referencedSchemas(responseParts, components)) {
    if (!requested.has(name)) requireDefaulted(components[name]);
  }
  // Schemas written inline in a response, not as components.
  requireDefaulted(
    responseParts.flatMap((responses) =>
      Object.values(isNode(responses) ? responses : {}).flatMap((response) =>
        Object.values(isNode(response) && isNode(response.content) ? response.content : {}).map((media) =>
          isNode(media) ? media.schema : undefined,
        ),
      ),
    ),
  );
  return document;
}
