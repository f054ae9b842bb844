import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { every } from "hono/combine";
import type { AppEnv } from "../env";
import { type GuardedEnv, type GuardOptions, guard, type StoreRule } from "./auth";
import { homeDatabaseKeys, idempotency, idempotencyHeader, type KeyStorageOf, replayedHeader } from "./idempotency";
import { cachedRead } from "./read-cache";
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
  415: "The body is not of the documented media type",
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
    /** A read whose 200 answers the isolate may give again for `READ_CACHE_MS` (read-cache.ts). */
    cachedRead?: true;
    /** Where a write keeps its `Idempotency-Key` records (idempotency.ts): the store's home database unless told. */
    keys?: KeyStorageOf;
  },
) {
  const { guard: guardOptions, afterGuard = [], cachedRead: cached, keys = homeDatabaseKeys, ...route } = config;
  // A misspelt owner would send a token of several stores to its first store's home, to a 404 (auth.ts).
  const owner = guardOptions.owner;
  if (owner && !route.path.includes(`{${owner.param}}`)) {
    throw new Error(`${route.path}: the guard's owner names {${owner.param}}, which the path lacks`);
  }
  const refusedBodies = bodyRefusals(route);
  const keyed = isWrite(route);
  // One middleware whose type carries the guard's caller, so a handler of a required store reads a string.
  const checks = every(
    guard(guardOptions),
    ...afterGuard,
    ...paramsMiddleware(route),
    ...(keyed ? [idempotency(keys, owner)] : []),
    ...(cached ? [cachedRead] : []),
  ) as MiddlewareHandler<GuardedEnv<S>>;
  const headers = withStoreHeader(route.request?.headers, guardOptions.store);
  return createRoute({
    ...route,
    request: { ...route.request, headers: keyed ? headers.extend(keyHeader) : headers },
    // Typed as the route's own: a handler never returns the refusals, they are thrown before it runs.
    responses: (keyed
      ? keyedResponses({ ...refusedBodies, ...route.responses })
      : { ...refusedBodies, ...route.responses }) as R["responses"],
    security: [{ bearerAuth: [] }],
    middleware: [checks] as const,
  });
}

/** Whether a route writes, and so takes `Idempotency-Key`: every POST and DELETE (the byte PUTs are open routes). */
const isWrite = (route: RouteConfig) => route.method === "post" || route.method === "delete";

const keyHeader = {
  [idempotencyHeader]: z.string().optional().openapi({
    description:
      "1 to 255 printable ASCII characters (400 otherwise), unique per request the client means once. The first request with a key runs; a retry with the same key, token and store and the same method, path, query and body gets the first answer again, byte for byte, with `Idempotent-Replayed: true`, and nothing runs twice. The answer is kept for `IDEMPOTENCY_TTL_SECONDS` (a day by default) once it is a 2xx or a 4xx other than 401, 403 and 429; a 5xx is not kept, so a retry runs anew. The same key for another request answers 422; while the first request still runs, 409 with `Retry-After: 1`.",
    example: "9f6c2a8e-checkout-publish-1",
  }),
};

const keyNotes: Partial<Record<ErrorStatus, string>> = {
  400: "; or a malformed Idempotency-Key",
  409: "; or a request with the same Idempotency-Key still runs (Retry-After: 1)",
  422: "; or the Idempotency-Key was used for a different request",
};

/**
 * A write's responses with what its `Idempotency-Key` adds: the refusals of a key (400, 409, 422, each noted
 * on the route's own entry if it has one) and the `Idempotent-Replayed` header of a kept answer given again.
 */
function keyedResponses(responses: RouteConfig["responses"]): RouteConfig["responses"] {
  const result: RouteConfig["responses"] = { ...errorResponses(400, 409, 422) };
  for (const [status, response] of Object.entries({ ...result, ...responses })) {
    if (!isNode(response)) continue;
    const note = keyNotes[Number(status) as ErrorStatus];
    const replayed = Number(status) < 300 || note !== undefined;
    result[status] = {
      ...response,
      description: note ? `${response.description}${note}` : response.description,
      ...(replayed
        ? {
            headers: {
              ...(isNode(response.headers) ? response.headers : {}),
              [replayedHeader]: {
                schema: { type: "string", enum: ["true"] },
                description: "Present when this is a kept answer given again for an Idempotency-Key",
              },
            },
          }
        : {}),
    } as RouteConfig["responses"][string];
  }
  return result;
}

/** A documented route without a bearer token (the byte PUT): its own checks, then path ids. */
export function openRoute<const R extends RouteConfig>(config: R & { checks: MiddlewareHandler<AppEnv>[] }) {
  const { checks, ...route } = config;
  return createRoute({
    ...route,
    responses: { ...bodyRefusals(route), ...route.responses } as R["responses"],
    middleware: [...checks, ...paramsMiddleware(route)] as const,
  });
}

/**
 * The refusals that come before a route's own code, documented on every route they can reach: app.ts refuses a
 * JSON body over its limit (413) on the methods that carry one, the byte PUTs apart; the router refuses a body
 * that is not of the media type of a validated JSON body (415).
 */
function bodyRefusals(route: RouteConfig) {
  const statuses: ErrorStatus[] = [];
  if (route.method === "post" || route.method === "delete" || route.method === "patch") statuses.push(413);
  const content = route.request?.body?.content ?? {};
  if (Object.entries(content).some(([type, media]) => /json/i.test(type) && isValidated(media))) {
    statuses.push(415);
  }
  return errorResponses(...statuses);
}

/** A body media type the router validates: its schema is zod (a plain JSON schema is only documented). */
function isValidated(media: unknown): boolean {
  return isNode(media) && media.schema instanceof z.ZodType;
}

function paramsMiddleware(route: RouteConfig) {
  const params = route.request?.params;
  return params ? [paramsFirst(params)] : [];
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
function documentResponsesAsSent(document: { paths?: unknown; components?: { schemas?: unknown } }): void {
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
}

/**
 * The generator writes a nullable component (`HostedFile.nullable()`) as `allOf: [HostedFile, {type: [object,
 * null]}]`, which no null satisfies (it must match HostedFile too) and which client generators read as "never
 * null". Such a pair becomes what was meant: `anyOf: [HostedFile, {type: null}]`.
 */
function repairNullableRefs(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) repairNullableRefs(item);
    return;
  }
  if (!isNode(value)) return;
  const parts = value.allOf;
  if (Array.isArray(parts) && parts.length === 2) {
    const [ref, nullable] = parts as unknown[];
    const types = isNode(nullable) ? nullable.type : undefined;
    if (
      isNode(ref) &&
      typeof ref.$ref === "string" &&
      isNode(nullable) &&
      Object.keys(nullable).length === 1 &&
      Array.isArray(types) &&
      types.includes("null")
    ) {
      delete value.allOf;
      value.anyOf = [ref, { type: "null" }];
    }
  }
  for (const child of Object.values(value)) repairNullableRefs(child);
}

/** The generated document made exact where the generator is not (see the two functions above). */
export function finishDocument<D extends { paths?: unknown; components?: { schemas?: unknown } }>(document: D): D {
  repairNullableRefs(document);
  documentResponsesAsSent(document);
  return document;
}
