import { type RouteConfig, z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { inBackground } from "../http/background";
import { ApiError } from "../http/errors";
import { errorResponses, openRoute } from "../http/route";
import { log } from "../lib/log";
import { retryLater } from "./api-schemas";
import { uploadMessages } from "./messages";

/**
 * What the two byte PUTs share, the single PUT (put/) and the part PUT (parts/): their headers and body as
 * documented, reading them, and streaming the body into R2.
 */

/**
 * The headers of both PUTs. Content-Type and Content-Length are optional to the validator, which runs
 * before the upload is looked up: a missing one is the 422 of a mismatch, after 404 and 409.
 */
const PutHeaders = z.object({
  "X-Upload-Token": z.string().openapi({ description: "The upload token from prepare's `upload_request.headers`" }),
  "Content-Type": z
    .string()
    .optional()
    .openapi({ param: { required: true }, description: "The media type prepared (type/subtype; parameters ignored)" }),
  "Content-Length": z
    .string()
    .optional()
    .openapi({
      param: { required: true },
      description: "The body's exact length in bytes: `size` for the single PUT, the part's length for a part",
    }),
});

const binary = { schema: { type: "string", format: "binary" } } as const;
/** The raw bytes of an upload or of one part, under the media type prepared. */
const binaryBody = {
  required: true,
  content: { "application/octet-stream": binary, "image/*": binary, "video/*": binary, "*/*": binary },
};

const storageFailedResponse = retryLater(
  "Storage failed; the upload (or part) is as it was, and the PUT may be retried",
);

/**
 * A byte PUT's documented route: authorized by the upload token alone, with the headers and raw body above,
 * its own `checks` first, and the refusals and the 503 both PUTs answer after its own `success`.
 */
export function bytePutRoute<
  const Path extends string,
  Params extends z.ZodObject,
  Success extends RouteConfig["responses"],
>(
  config: Pick<RouteConfig, "operationId" | "summary" | "description"> & {
    path: Path;
    params: Params;
    checks: MiddlewareHandler<AppEnv>[];
    success: Success;
  },
) {
  const { path, params, checks, success, ...documented } = config;
  return openRoute({
    method: "put",
    path,
    ...documented,
    tags: ["Media uploads"],
    security: [{ uploadToken: [] }],
    checks,
    request: { params, headers: PutHeaders, body: binaryBody },
    responses: { ...success, ...errorResponses(400, 401, 404, 409, 422, 429), 503: storageFailedResponse },
  });
}

export const requireUploadToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!c.req.header("X-Upload-Token")) throw new ApiError(401, uploadMessages.tokenRequired);
  await next();
};

/** What a PUT sent, as the coordinator checks it against the reservation. */
export function putAttempt(c: Context, tokenHash: string) {
  return {
    tokenHash,
    contentType: c.req.header("Content-Type"),
    contentLength: declaredLength(c.req.header("Content-Length")),
  };
}

/** A Content-Length as a number, or undefined when absent or not a plain decimal. */
function declaredLength(header: string | undefined): number | undefined {
  return header && /^\d{1,15}$/.test(header) ? Number(header) : undefined;
}

/** The request's body; a request without one is an empty stream, which a non-zero length refuses. */
export function requestBody(c: Context): ReadableStream {
  return c.req.raw.body ?? new ReadableStream({ start: (controller) => controller.close() });
}

/**
 * Whether storing failed because of the body rather than the storage: it was not Content-Length bytes
 * long (the FixedLengthStream's own errors), or the client went away mid-body. workerd (2026-11-02)
 * reports a client gone mid-body to the R2 put as `TypeError: Can't read from request stream because
 * client disconnected.` once it has noticed, or as `Error: Network connection lost.` when the body's
 * connection breaks under a read in progress (the same error a caller's aborted or failed body stream
 * gives a Worker it calls). Telling them apart by the error keeps the body on workerd's native pipe: a JS
 * byte counter in the stream doubled the PUT's memory growth and halved its throughput
 * (docs/benchmarks.md, part 3).
 */
function isBodyFailure(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /FixedLengthStream|client disconnected|Network connection lost/i.test(message);
}

/** What a storing answered (R2's result), or why it failed: the body's fault or the storage's. */
export type Streamed<T> = { stored: true; value: T } | { stored: false; cause: "body" | "storage" };

/**
 * Streams exactly `size` bytes of `body` to R2 through `write`, without holding them in memory. A storage
 * failure is logged as `failure` with `fields`; a body that was not `size` bytes long, or whose client went
 * away, is the body's failure and is not.
 */
export async function streamToR2<T>(
  body: ReadableStream,
  size: number,
  write: (stream: ReadableStream) => Promise<T>,
  failure: { message: string; fields: Record<string, unknown> },
): Promise<Streamed<T>> {
  try {
    return { stored: true, value: await write(body.pipeThrough(new FixedLengthStream(size))) };
  } catch (error) {
    const cause = isBodyFailure(error) ? "body" : "storage";
    if (cause === "storage") log.error(failure.message, { ...failure.fields, error: String(error) });
    return { stored: false, cause };
  }
}

/**
 * Awaits a storing that goes on without the client: one gone mid-body must not leave the upload `storing`
 * or its part leased. Answers what was stored, or throws the body's fault (400) or the storage's (503, retry).
 */
export async function storedOrRefused<T>(c: Context, storing: Promise<Streamed<T>>): Promise<T> {
  inBackground(c, storing);
  const result = await storing;
  if (!result.stored) {
    throw result.cause === "body"
      ? new ApiError(400, uploadMessages.bodyLength)
      : new ApiError(503, uploadMessages.storageFailed);
  }
  return result.value;
}
