import { z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import type { Context, MiddlewareHandler } from "hono";
import { setting } from "../config";
import { stores } from "../db/schema";
import type { AppEnv } from "../env";
import type { GuardedEnv } from "../http/auth";
import { inBackground } from "../http/background";
import { ApiError, messages, validationError } from "../http/errors";
import { uuidParam } from "../http/params";
import { rateLimit } from "../http/rate-limit";
import { bearerErrors, bearerRoute, errorResponses, openRoute } from "../http/route";
import { createRouter } from "../http/router";
import { sha256Hex } from "../lib/crypto";
import { type CoordinatorStub, refusalError, storeCoordinator, unwrap, uploadNotFound } from "./coordinator";
import { hostUpload } from "./hosting";
import { stagedKey } from "./keys";
import { uploadMessages } from "./messages";
import { assembleParts, storePart } from "./parts";
import { maxParts, planParts } from "./parts-state";
import { countPartMiss, partLimit, putLimit } from "./put-limits";
import { isHeifMediaType, isSvgMediaType } from "./sniff";
import { publishedFile } from "./srcset";
import { storeBody } from "./staging";
import { type CompleteTicket, partEtag } from "./store-coordinator";
import type { HostedFile } from "./upload-state";
import { newUploadToken, storeOfToken } from "./upload-token";

const UploadParams = z.object({
  id: uuidParam("id", messages.invalidUploadId, "Upload id"),
});

const PartParams = UploadParams.extend({
  // Only a malformed number is a malformed path (400); a number outside 1..part_count is a 422 once the
  // upload is known, after its token was checked.
  part_number: z
    .string()
    .regex(/^[0-9]{1,9}$/, { error: uploadMessages.invalidPartNumber })
    .openapi({
      param: { name: "part_number", in: "path" },
      description: "The part's number, 1 to `multipart.part_count`",
      example: "1",
    }),
});

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

const PrepareBody = z
  .object({
    filename: z.string().min(1).max(255).openapi({ description: "Original filename including extension" }),
    content_type: z
      .string()
      .max(255)
      .regex(/^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;.*)?$/, "The content type must be a media type such as image/jpeg.")
      .openapi({ description: "Media type; the PUT must send the same value" }),
    size: z.number().int().min(1).openapi({ description: "Exact size in bytes, 1..the store upload limit" }),
    // Optional with the default applied by the handler, so the document does not call it required.
    type: z
      .enum(["image", "file"])
      .optional()
      .openapi({ description: "`image` (photo or video) or `file` (private download)", default: "image" }),
    multipart: z.boolean().optional().openapi({
      description:
        "Send the bytes in parts (resumable). A `size` above the single-PUT ceiling (`SINGLE_PUT_LIMIT_BYTES`, 100,000,000 bytes by default) is multipart whatever this says.",
      default: false,
    }),
  })
  .openapi("PrepareUpload");

const MultipartPlan = z
  .object({
    part_size: z.number().int().openapi({ description: "Bytes of every part but the last, which holds the rest" }),
    part_count: z.number().int(),
    part_url: z.string().openapi({
      description: "Where each part is PUT: absolute, with the literal `{part_number}` (1-based) to fill in",
      example: "https://checkout.example/api/v1/media-uploads/0b7c…/parts/{part_number}",
    }),
  })
  .openapi("MultipartPlan");

const Reservation = z
  .object({
    id: z.uuid(),
    expires_at: z.string(),
    upload_request: z.object({
      method: z.literal("PUT"),
      url: z.string(),
      headers: z
        .object({
          "X-Upload-Token": z.string(),
          "Content-Type": z.string(),
          "Content-Length": z.string().optional().openapi({ description: "Absent for a multipart upload" }),
        })
        .openapi({
          description:
            "Headers to copy onto the PUT; for a multipart upload onto every part PUT, whose Content-Length is the part's",
        }),
    }),
    multipart: MultipartPlan.optional().openapi({
      description: "How to send the bytes in parts; absent when they go in one PUT to `upload_request.url`",
    }),
  })
  .openapi("UploadReservation");

const HostedFileSchema = z
  .object({
    name: z.string(),
    file_url: z.string(),
    type: z.enum(["image", "video", "file"]),
    width: z.number().int().nullable().openapi({
      description: "Width in pixels of a converted image (hosted as WebP); null for every other result",
      example: 2560,
    }),
    height: z.number().int().nullable().openapi({
      description: "Height in pixels of a converted image; null for every other result",
      example: 1707,
    }),
    srcset: z.string().nullable().openapi({
      description:
        "For a converted image, an `<img srcset>` value: each configured width below the image's (`IMAGE_WIDTHS`) as `{file_url}?width=N Nw`, then `{file_url} {width}w`, joined by `, `. `{file_url}?width=N` is the image N pixels wide. Null for every other result.",
      example:
        "https://media.example.com/3f0c…/9a1e….webp?width=640 640w, https://media.example.com/3f0c…/9a1e….webp 2560w",
    }),
  })
  .openapi("HostedFile");

const UploadedPart = z
  .object({
    part_number: z.number().int(),
    size: z.number().int(),
    etag: z.string().openapi({ description: "The ETag the part PUT answered (a quoted entity tag)" }),
  })
  .openapi("UploadedPart");

const UploadStatus = z
  .object({
    id: z.uuid(),
    state: z.enum(["reserved", "stored", "completed"]),
    expires_at: z.string(),
    result: HostedFileSchema.nullable(),
    multipart: MultipartPlan.optional().openapi({ description: "A multipart upload's plan; absent for a single PUT" }),
    parts: z.array(UploadedPart).optional().openapi({
      description:
        "A multipart upload's stored parts, by part number, until it is completed; a part missing here is still to be sent. Absent for a single-PUT upload.",
    }),
  })
  .openapi("UploadStatus");

/** The store's upload size limit in bytes: its own setting, else the configured default. */
async function storeUploadLimit<E extends AppEnv>(c: Context<E>, storeId: string): Promise<number> {
  const store = await c.var.db.query.stores.findFirst({ where: eq(stores.id, storeId) });
  return store?.uploadLimitBytes ?? setting(c.env, "DEFAULT_UPLOAD_LIMIT_BYTES");
}

function mediaBaseUrl<E extends AppEnv>(c: Context<E>): string {
  return setting(c.env, "MEDIA_BASE_URL") || `${new URL(c.req.url).origin}/media`;
}

/** The upload's URL: where its single PUT goes, and the base of its parts'. */
function uploadUrl<E extends AppEnv>(c: Context<E>, apiBasePath: string, id: string): string {
  return `${new URL(c.req.url).origin}${apiBasePath}/media-uploads/${id}`;
}

const requireUploadToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!c.req.header("X-Upload-Token")) throw new ApiError(401, uploadMessages.tokenRequired);
  await next();
};

/** The store's complete limit, counted by its coordinator after the guard's general limit. */
const completeLimit = rateLimit<GuardedEnv<"required">>(
  (c) => (limit, windowSeconds) =>
    storeCoordinator(c.env, c.var.caller.storeId).consumeCompleteLimit(limit, windowSeconds),
  "COMPLETE_LIMIT_PER_MINUTE",
);

/**
 * Hosts an upload its complete has begun and records the outcome: 422 when its size is outside the
 * store's limit or its bytes cannot be hosted; a multipart upload's parts are assembled first. Any other
 * failure hands the upload back as `stored` (or, parts not assembled, `reserved` with its parts).
 */
async function hostWithinLimit<E extends AppEnv>(
  c: Context<E>,
  coordinator: CoordinatorStub,
  storeId: string,
  upload: CompleteTicket,
): Promise<HostedFile> {
  let outcome: Awaited<ReturnType<typeof hostUpload>>;
  const r2UploadId = upload.multipart?.r2UploadId ?? null;
  let assembled = r2UploadId === null;
  try {
    // The store's limit may have been lowered since prepare. Checked here, at the 422 step after the
    // 404/410/409 refusals, and not remembered as the bytes' failure: once the limit is raised again,
    // a retry hosts them.
    const limit = await storeUploadLimit(c, storeId);
    if (upload.size > limit) throw new ApiError(422, uploadMessages.sizeOverLimit(upload.size, limit));
    if (r2UploadId !== null) {
      await assembleParts(c.env.BUCKET, storeId, upload.id, r2UploadId, upload.size, upload.parts).catch((error) => {
        console.error(
          JSON.stringify({
            level: "error",
            message: "upload: assembling the parts failed",
            request_id: c.get("requestId"),
            upload_id: upload.id,
            error: String(error),
          }),
        );
        throw new ApiError(503, uploadMessages.assemblyFailed);
      });
      assembled = true;
    }
    outcome = await hostUpload(
      {
        bucket: c.env.BUCKET,
        maxImageEdge: setting(c.env, "MAX_IMAGE_EDGE"),
        mediaBaseUrl: mediaBaseUrl(c),
        origin: new URL(c.req.url).origin,
        beforeWrite: async (hostedKey) => {
          unwrap(await coordinator.recordHostedKey(upload.id, hostedKey), upload.id);
        },
      },
      storeId,
      upload,
    );
  } catch (error) {
    await coordinator.abandonComplete(upload.id, assembled);
    throw error;
  }
  const finished = unwrap(await coordinator.finishComplete(upload.id, outcome), upload.id);
  if ("unhostable" in outcome) throw new ApiError(422, outcome.unhostable);
  return finished.result as HostedFile;
}

const mediaWrite = { ability: "media:write", store: "required" } as const;

/** The answer of a storing that failed: the body's fault (400) or the storage's (503, retry). */
function storingFailed(cause: "body" | "storage"): ApiError {
  return cause === "body"
    ? new ApiError(400, uploadMessages.bodyLength)
    : new ApiError(503, uploadMessages.storageFailed);
}

/** A 503 the client answers by trying again: what failed, and that nothing changed. */
function retryLater(description: string) {
  return { description, content: { "application/json": { schema: z.object({ message: z.string() }) } } };
}

const storageFailedResponse = retryLater(
  "Storage failed; the upload (or part) is as it was, and the PUT may be retried",
);

/**
 * Hosted media uploads: prepare, byte PUT, part PUT, complete, and the upload's state. `apiBasePath` is
 * where the app mounts them (`/api/v1`), which the upload URL of a reservation names.
 */
export function uploadRoutes(apiBasePath: string) {
  return createRouter()
    .openapi(
      bearerRoute({
        method: "post",
        path: "/media-uploads",
        operationId: "prepareMediaUpload",
        summary: "Reserve an upload",
        description:
          "Reserves an upload id for 15 minutes (`UPLOAD_TTL_SECONDS`) and answers where and how to PUT the bytes. HEIC, HEIF and AVIF are refused (convert to JPG or PNG); an SVG cannot be prepared as `image`. With `multipart` (and always above the single-PUT ceiling, `SINGLE_PUT_LIMIT_BYTES`) the bytes go in parts: `multipart` says how large each is and where to PUT it, with the headers of `upload_request`; each part stored extends the reservation by `UPLOAD_TTL_SECONDS`, up to `MULTIPART_MAX_HOURS` (24) after prepare.",
        tags: ["Media uploads"],
        guard: mediaWrite,
        request: { body: { required: true, content: { "application/json": { schema: PrepareBody } } } },
        responses: {
          201: { description: "The reservation", content: { "application/json": { schema: Reservation } } },
          ...errorResponses(400, ...bearerErrors, 413, 422),
          503: retryLater("Storage could not start a multipart upload; nothing is reserved, prepare again"),
        },
      }),
      async (c) => {
        const body = c.req.valid("json");
        const type = body.type ?? "image";
        const storeId = c.var.caller.storeId;
        if (isHeifMediaType(body.content_type)) {
          throw new ApiError(422, uploadMessages.heif, { content_type: [uploadMessages.heif] });
        }
        if (type === "image" && isSvgMediaType(body.content_type)) {
          throw validationError({ content_type: [uploadMessages.svgAsImage] });
        }
        const limit = await storeUploadLimit(c, storeId);
        if (body.size > limit) throw validationError({ size: [uploadMessages.size(limit)] });
        const ceiling = setting(c.env, "SINGLE_PUT_LIMIT_BYTES");
        const plan = body.multipart === true || body.size > ceiling ? planParts(body.size, ceiling) : null;
        if ((body.multipart === true || body.size > ceiling) && plan === null) {
          throw validationError({ size: [uploadMessages.tooManyParts(maxParts, ceiling)] });
        }

        const id = crypto.randomUUID();
        const token = newUploadToken(storeId);
        const now = Date.now();
        const ttlMs = setting(c.env, "UPLOAD_TTL_SECONDS") * 1000;
        const maxExpiresAt = plan ? now + setting(c.env, "MULTIPART_MAX_HOURS") * 3_600_000 : null;
        const expiresAt = Math.min(now + ttlMs, maxExpiresAt ?? Number.POSITIVE_INFINITY);
        // The parts stream into one R2 multipart upload at the staged key; complete assembles them there.
        const r2Upload = plan
          ? await c.env.BUCKET.createMultipartUpload(stagedKey(storeId, id), {
              httpMetadata: { contentType: body.content_type },
            }).catch((error) => {
              console.error(
                JSON.stringify({
                  level: "error",
                  message: "upload: creating the R2 multipart upload failed",
                  request_id: c.get("requestId"),
                  error: String(error),
                }),
              );
              throw new ApiError(503, uploadMessages.reserveFailed);
            })
          : null;
        try {
          await storeCoordinator(c.env, storeId).reserve(storeId, {
            id,
            tokenHash: await sha256Hex(token),
            filename: body.filename,
            contentType: body.content_type,
            size: body.size,
            type,
            expiresAt,
            multipart:
              plan && r2Upload && maxExpiresAt !== null
                ? { ...plan, r2UploadId: r2Upload.uploadId, maxExpiresAt }
                : null,
          });
        } catch (error) {
          await r2Upload?.abort().catch(() => {});
          throw error;
        }
        const url = uploadUrl(c, apiBasePath, id);
        return c.json(
          {
            id,
            expires_at: new Date(expiresAt).toISOString(),
            upload_request: {
              method: "PUT" as const,
              url,
              // Copied onto every part PUT of a multipart upload, whose Content-Length is the part's own.
              headers: {
                "X-Upload-Token": token,
                "Content-Type": body.content_type,
                ...(plan ? {} : { "Content-Length": String(body.size) }),
              },
            },
            ...(plan && {
              multipart: {
                part_size: plan.partSize,
                part_count: plan.partCount,
                part_url: `${url}/parts/{part_number}`,
              },
            }),
          },
          201,
        );
      },
    )
    .openapi(
      openRoute({
        method: "put",
        path: "/media-uploads/{id}",
        operationId: "putMediaUploadBytes",
        summary: "Upload the bytes",
        description:
          "No `Authorization`: the `X-Upload-Token` from prepare authorizes this one upload. Send the headers exactly as prepare returned them; the body is the raw file. Checks: 429 (20 PUTs per minute per client IP) → 401 no token → 400 malformed id → 404 (unknown, wrong token, expired) → 409 (already stored, being stored, or a multipart upload, whose bytes go in parts) → 422 (Content-Type or Content-Length differ). Any origin may call it from a browser.",
        tags: ["Media uploads"],
        security: [{ uploadToken: [] }],
        checks: [putLimit, requireUploadToken],
        request: { params: UploadParams, headers: PutHeaders, body: binaryBody },
        responses: {
          204: { description: "Stored" },
          ...errorResponses(400, 401, 404, 409, 422, 429),
          503: storageFailedResponse,
        },
      }),
      async (c) => {
        const { id } = c.req.valid("param");
        const token = c.req.header("X-Upload-Token") as string;
        const storeId = storeOfToken(token);
        if (!storeId) throw uploadNotFound(id);
        const coordinator = storeCoordinator(c.env, storeId);
        const upload = unwrap(
          await coordinator.beginPut(id, {
            tokenHash: await sha256Hex(token),
            contentType: c.req.header("Content-Type"),
            contentLength: declaredLength(c.req.header("Content-Length")),
          }),
          id,
        );
        const storing = storeBody(c.env, coordinator, storeId, upload, requestBody(c), c.get("requestId"));
        inBackground(c, storing); // a client gone mid-body must not leave the upload `storing`
        const result = await storing;
        if (!result.stored) throw storingFailed(result.cause);
        unwrap(result.finished, id);
        return c.body(null, 204);
      },
    )
    .openapi(
      openRoute({
        method: "put",
        path: "/media-uploads/{id}/parts/{part_number}",
        operationId: "putMediaUploadPart",
        summary: "Upload one part",
        description:
          "One part of a multipart upload, with the headers of prepare's `upload_request` and the part's own Content-Length: `part_size`, the last part the rest. Parts may come in any order and in parallel; a part sent again replaces the earlier one, so a retry is always safe. Each part stored extends the reservation. Answers the part's `ETag`. Checks: 429 (`PART_LIMIT_PER_MINUTE`, 600 part PUTs per minute per client IP; and every part PUT is refused while the IP's 20-per-minute PUT limit is spent, which a part PUT with an unknown upload or a wrong token counts toward) → 401 no token → 400 malformed id or part number → 404 (unknown, wrong token, expired) → 409 (not a multipart upload, already assembled or completed, this part being stored by another request) → 422 (part number outside 1..`part_count`, with `errors.part_number`; Content-Type or Content-Length differ). Any origin may call it from a browser.",
        tags: ["Media uploads"],
        security: [{ uploadToken: [] }],
        checks: [partLimit, requireUploadToken],
        request: { params: PartParams, headers: PutHeaders, body: binaryBody },
        responses: {
          204: {
            description: "The part is stored",
            headers: {
              ETag: {
                description: "The stored part's entity tag, as the upload's part list shows it",
                schema: { type: "string" },
              },
            },
          },
          ...errorResponses(400, 401, 404, 409, 422, 429),
          503: storageFailedResponse,
        },
      }),
      async (c) => {
        const { id, part_number: partNumber } = c.req.valid("param");
        const token = c.req.header("X-Upload-Token") as string;
        const storeId = storeOfToken(token);
        if (!storeId) {
          await countPartMiss(c);
          throw uploadNotFound(id);
        }
        const ttlMs = setting(c.env, "UPLOAD_TTL_SECONDS") * 1000;
        const coordinator = storeCoordinator(c.env, storeId);
        const begun = await coordinator.beginPart(id, {
          tokenHash: await sha256Hex(token),
          contentType: c.req.header("Content-Type"),
          contentLength: declaredLength(c.req.header("Content-Length")),
          partNumber: Number(partNumber),
        });
        if (!begun.ok) {
          if (begun.refusal.reason === "not_found") await countPartMiss(c);
          throw refusalError(begun.refusal, id);
        }
        const storing = storePart(
          c.env,
          coordinator,
          storeId,
          id,
          begun.ticket,
          requestBody(c),
          ttlMs,
          c.get("requestId"),
        );
        inBackground(c, storing); // a client gone mid-body must not leave the part leased
        const result = await storing;
        if (!result.stored) throw storingFailed(result.cause);
        unwrap(result.finished, id);
        c.header("ETag", partEtag(result.etag));
        return c.body(null, 204);
      },
    )
    .openapi(
      bearerRoute({
        method: "post",
        path: "/media-uploads/{id}/complete",
        operationId: "completeMediaUpload",
        summary: "Complete an upload",
        description:
          "Hosts the stored bytes and answers the hosted file result. A multipart upload's parts are assembled first; while any is missing the answer is 409 saying how many. The kind is sniffed from the bytes: still images prepared as `image` are converted to WebP (at most `MAX_IMAGE_EDGE` px on the long edge), animated images and videos are hosted unchanged, `file` uploads are private. Checks: 401 → store → 403 → 429 (60 completes per minute per store) → 400 → 404 → 410 → 409 → 422 (bytes cannot be hosted, or the size is outside the store's upload limit, which may have been lowered since prepare).",
        tags: ["Media uploads"],
        guard: mediaWrite,
        afterGuard: [completeLimit],
        request: { params: UploadParams },
        responses: {
          201: { description: "The hosted file result", content: { "application/json": { schema: HostedFileSchema } } },
          ...errorResponses(400, ...bearerErrors, 404, 409, 410, 422),
          503: retryLater("Storage could not assemble the parts; they are as they were, and complete may be retried"),
        },
      }),
      async (c) => {
        const { id } = c.req.valid("param");
        const storeId = c.var.caller.storeId;
        const coordinator = storeCoordinator(c.env, storeId);
        const widths = setting(c.env, "IMAGE_WIDTHS"); // read first: a malformed list changes nothing
        const upload = unwrap(await coordinator.beginComplete(id), id);
        const completing = hostWithinLimit(c, coordinator, storeId, upload);
        inBackground(c, completing); // nor a client gone mid-conversion `processing`
        return c.json(publishedFile(await completing, widths), 201);
      },
    )
    .openapi(
      bearerRoute({
        method: "get",
        path: "/media-uploads/{id}",
        operationId: "getMediaUpload",
        summary: "Read an upload's state",
        description:
          "The upload's state and, once completed, its hosted file result, so a client can recover after a lost response. For a multipart upload also its plan and the parts stored so far: a client that lost track sends only the parts missing here. Expired uploads are not found.",
        tags: ["Media uploads"],
        guard: mediaWrite,
        request: { params: UploadParams },
        responses: {
          200: { description: "The upload", content: { "application/json": { schema: UploadStatus } } },
          ...errorResponses(400, ...bearerErrors, 404),
        },
      }),
      async (c) => {
        const { id } = c.req.valid("param");
        const view = await storeCoordinator(c.env, c.var.caller.storeId).view(id);
        if (!view) throw uploadNotFound(id);
        const { multipart, parts, result, ...rest } = view;
        const single = { ...rest, result: result && publishedFile(result, setting(c.env, "IMAGE_WIDTHS")) };
        if (!multipart || !parts) return c.json(single, 200);
        const partUrl = `${uploadUrl(c, apiBasePath, id)}/parts/{part_number}`;
        return c.json({ ...single, multipart: { ...multipart, part_url: partUrl }, parts }, 200);
      },
    );
}

/** A Content-Length as a number, or undefined when absent or not a plain decimal. */
function declaredLength(header: string | undefined): number | undefined {
  return header && /^\d{1,15}$/.test(header) ? Number(header) : undefined;
}

/** The request's body; a request without one is an empty stream, which a non-zero length refuses. */
function requestBody(c: Context): ReadableStream {
  return c.req.raw.body ?? new ReadableStream({ start: (controller) => controller.close() });
}
