import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { storeFenced } from "../db/fence";
import { log } from "../lib/log";

/** Field name → messages, as in the specification's validation bodies. */
export type FieldErrors = Record<string, string[]>;

/**
 * The one error type of the API: thrown anywhere, rendered by {@link renderError} into exactly
 * the specification's bodies, `{message}` or `{message, errors}`.
 */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    readonly errors?: FieldErrors,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const messages = {
  notFound: "Not found.",
  methodNotAllowed: "Method not allowed.",
  malformedJson: "Malformed JSON body.",
  invalidData: "The given data was invalid.",
  unauthenticated: "Unauthenticated.",
  unauthorized: "This action is unauthorized.",
  noStoreAccess: "No API access to the requested store.",
  storeHeaderRequired: "The X-Service-Store header is required.",
  invalidStoreId: "Invalid store ID.",
  invalidProductId: "Invalid product ID.",
  invalidVariantId: "Invalid variant ID.",
  invalidUploadId: "Invalid upload ID.",
  serverError: "Server error.",
  payloadTooLarge: "Request body too large.",
  unsupportedMediaType: "Unsupported media type.",
  productNotFound: (id: string) => `Product with ID ${id} not found`,
  variantNotFound: (id: string) => `Variant with ID ${id} not found`,
  productHasNoDraft: (id: string) => `Product with ID ${id} has no draft.`,
  tooManyRequests: (seconds: number) => `Too many requests, retry after ${seconds} seconds.`,
  storeMoving: (seconds: number) =>
    `The store is being moved between databases and takes no changes for a moment, retry after ${seconds} seconds.`,
} as const;

/** A 422 validation failure with per-field messages. */
export function validationError(errors: FieldErrors): ApiError {
  return new ApiError(422, messages.invalidData, errors);
}

/** Renders a client-facing error body; never leaks a stack or an empty object. */
function errorResponse(c: Context, error: ApiError): Response {
  const body = error.errors ? { message: error.message, errors: error.errors } : { message: error.message };
  return c.json(body, error.status, error.headers);
}

/** The command that creates the tables of a local database (`--remote` for a deployed one). */
export const migrateCommand = "npx wrangler d1 migrations apply DB --local";

let reportedMissingTables = false;

/** Whether a database error says the tables do not exist, wherever it sits in the error's cause chain. */
function isMissingTable(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    if (/no such table/i.test(current.message)) return true;
    current = current.cause;
  }
  return false;
}

/**
 * How long a client is asked to wait when its store's writes are held by a move: the switch reaches every
 * isolate within about two seconds (src/db/move.ts), the copy of a store of 10,000 subscriptions takes a few.
 */
const storeMovingRetrySeconds = 2;

/**
 * The app's `onError`: known errors keep their status; a write refused by a move's fence (src/db/fence.ts)
 * answers 503 with `Retry-After`; a database without its tables answers 503 naming
 * the command to run (plain `wrangler dev` on a fresh clone); anything else is a logged 500.
 */
export function renderError(error: Error, c: Context): Response {
  if (error instanceof ApiError) return errorResponse(c, error);
  if (error instanceof HTTPException) return errorResponse(c, fromHttpException(error));
  if (storeFenced(error)) {
    return errorResponse(
      c,
      new ApiError(503, messages.storeMoving(storeMovingRetrySeconds), undefined, {
        "Retry-After": String(storeMovingRetrySeconds),
      }),
    );
  }
  if (isMissingTable(error)) {
    if (!reportedMissingTables) {
      reportedMissingTables = true;
      log.error(`database not migrated: run ${migrateCommand}`);
    }
    return errorResponse(
      c,
      new ApiError(
        503,
        `The database has no tables yet: apply the migrations with \`${migrateCommand}\` (\`--remote\` for a deployed database), then retry.`,
      ),
    );
  }
  log.error("unhandled error", {
    request_id: c.get("requestId"),
    method: c.req.method,
    path: c.req.path,
    error: error?.message ?? String(error),
    stack: error?.stack,
  });
  return c.json({ message: messages.serverError }, 500);
}

function fromHttpException(error: HTTPException): ApiError {
  switch (error.status) {
    case 400:
      // Hono's own body parsers throw 400 for unreadable JSON.
      return new ApiError(400, messages.malformedJson);
    case 413:
      return new ApiError(413, messages.payloadTooLarge);
    case 415:
      return new ApiError(415, messages.unsupportedMediaType);
    default:
      return new ApiError(error.status as ContentfulStatusCode, error.message || messages.serverError);
  }
}
