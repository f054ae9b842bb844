import { z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import type { Context, MiddlewareHandler } from "hono";
import { setting } from "../config";
import { stores } from "../db/schema";
import type { AppEnv } from "../env";
import { type GuardedEnv, sha256Hex } from "../http/auth";
import { inBackground } from "../http/background";
import { ApiError, messages, validationError } from "../http/errors";
import { uuidParam } from "../http/params";
import { limiterObject, rateLimit } from "../http/rate-limit";
import { bearerErrors, bearerRoute, errorResponses, openRoute } from "../http/route";
import { createRouter } from "../http/router";
import { type CoordinatorStub, storeCoordinator, unwrap, uploadNotFound } from "./coordinator";
import { hostUpload } from "./hosting";
import { uploadMessages } from "./messages";
import { isHeifMediaType, isSvgMediaType } from "./sniff";
import { storeBody } from "./staging";
import type { HostedFile, UploadRecord } from "./upload-state";
import { newUploadToken, storeOfToken } from "./upload-token";

const UploadParams = z.object({
  id: uuidParam("id", messages.invalidUploadId, "Upload id"),
});

const PrepareBody = z
  .object({
    filename: z.string().min(1).max(255).openapi({ description: "Original filename including extension" }),
    content_type: z
      .string()
      .max(255)
      .regex(/^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;.*)?$/, "The content type must be a media type such as image/jpeg.")
      .openapi({ description: "Media type; the PUT must send the same value" }),
    size: z.number().int().min(1).openapi({ description: "Exact size in bytes, 1..the store upload limit" }),
    type: z
      .enum(["image", "file"])
      .default("image")
      .openapi({ description: "`image` (photo or video) or `file` (private download)" }),
  })
  .openapi("PrepareUpload");

const Reservation = z
  .object({
    id: z.uuid(),
    expires_at: z.string(),
    upload_request: z.object({
      method: z.literal("PUT"),
      url: z.string(),
      headers: z.object({ "X-Upload-Token": z.string(), "Content-Type": z.string(), "Content-Length": z.string() }),
    }),
  })
  .openapi("UploadReservation");

const HostedFileSchema = z
  .object({ name: z.string(), file_url: z.string(), type: z.enum(["image", "video", "file"]) })
  .openapi("HostedFile");

const UploadStatus = z
  .object({
    id: z.uuid(),
    state: z.enum(["reserved", "stored", "completed"]),
    expires_at: z.string(),
    result: HostedFileSchema.nullable(),
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

/** The byte PUT's own limit: every attempt of a client IP counts, so tokens cannot be guessed fast. */
const putLimit = rateLimit(
  (c) => limiterObject(c.env.RATE_LIMITER, `put:${c.req.header("CF-Connecting-IP") ?? "unknown"}`),
  "PUT_LIMIT_PER_MINUTE",
);

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
 * store's limit or its bytes cannot be hosted; any other failure hands the upload back as `stored`.
 */
async function hostWithinLimit<E extends AppEnv>(
  c: Context<E>,
  coordinator: CoordinatorStub,
  storeId: string,
  upload: UploadRecord,
): Promise<HostedFile> {
  let outcome: Awaited<ReturnType<typeof hostUpload>>;
  try {
    // The store's limit may have been lowered since prepare. Checked here, at the 422 step after the
    // 404/410/409 refusals, and not remembered as the bytes' failure: once the limit is raised again,
    // a retry hosts them.
    const limit = await storeUploadLimit(c, storeId);
    if (upload.size > limit) throw new ApiError(422, uploadMessages.sizeOverLimit(upload.size, limit));
    outcome = await hostUpload(
      {
        bucket: c.env.BUCKET,
        maxImageEdge: setting(c.env, "MAX_IMAGE_EDGE"),
        mediaBaseUrl: mediaBaseUrl(c),
        origin: new URL(c.req.url).origin,
      },
      storeId,
      upload,
    );
  } catch (error) {
    await coordinator.abandonComplete(upload.id);
    throw error;
  }
  const finished = unwrap(await coordinator.finishComplete(upload.id, outcome), upload.id);
  if ("unhostable" in outcome) throw new ApiError(422, outcome.unhostable);
  return finished.result as HostedFile;
}

const mediaWrite = { ability: "media:write", store: "required" } as const;

/**
 * Hosted media uploads: prepare, byte PUT, complete, and the upload's state. `apiBasePath` is where the
 * app mounts them (`/api/v1`), which the upload URL of a reservation names.
 */
export function uploadRoutes(apiBasePath: string) {
  return createRouter()
    .openapi(
      bearerRoute({
        method: "post",
        path: "/media-uploads",
        summary: "Reserve an upload",
        description:
          "Reserves an upload id for 15 minutes (`UPLOAD_TTL_SECONDS`) and answers where and how to PUT the bytes. HEIC, HEIF and AVIF are refused (convert to JPG or PNG); an SVG cannot be prepared as `image`.",
        tags: ["Media uploads"],
        guard: mediaWrite,
        request: { body: { required: true, content: { "application/json": { schema: PrepareBody } } } },
        responses: {
          201: { description: "The reservation", content: { "application/json": { schema: Reservation } } },
          ...errorResponses(400, ...bearerErrors, 413, 422),
        },
      }),
      async (c) => {
        const body = c.req.valid("json");
        const storeId = c.var.caller.storeId;
        if (isHeifMediaType(body.content_type)) {
          throw new ApiError(422, uploadMessages.heif, { content_type: [uploadMessages.heif] });
        }
        if (body.type === "image" && isSvgMediaType(body.content_type)) {
          throw validationError({ content_type: [uploadMessages.svgAsImage] });
        }
        const limit = await storeUploadLimit(c, storeId);
        if (body.size > limit) throw validationError({ size: [uploadMessages.size(limit)] });

        const id = crypto.randomUUID();
        const token = newUploadToken(storeId);
        const expiresAt = Date.now() + setting(c.env, "UPLOAD_TTL_SECONDS") * 1000;
        await storeCoordinator(c.env, storeId).reserve(storeId, {
          id,
          tokenHash: await sha256Hex(token),
          filename: body.filename,
          contentType: body.content_type,
          size: body.size,
          type: body.type,
          expiresAt,
        });
        return c.json(
          {
            id,
            expires_at: new Date(expiresAt).toISOString(),
            upload_request: {
              method: "PUT" as const,
              url: `${new URL(c.req.url).origin}${apiBasePath}/media-uploads/${id}`,
              headers: {
                "X-Upload-Token": token,
                "Content-Type": body.content_type,
                "Content-Length": String(body.size),
              },
            },
          },
          201,
        );
      },
    )
    .openapi(
      openRoute({
        method: "put",
        path: "/media-uploads/{id}",
        summary: "Upload the bytes",
        description:
          "No `Authorization`: the `X-Upload-Token` from prepare authorizes this one upload. Send the headers exactly as prepare returned them; the body is the raw file. Checks: 429 (20 PUTs per minute per client IP) → 401 no token → 400 malformed id → 404 (unknown, wrong token, expired) → 409 (already stored, or being stored) → 422 (Content-Type or Content-Length differ). Any origin may call it from a browser.",
        tags: ["Media uploads"],
        checks: [putLimit, requireUploadToken],
        request: {
          params: UploadParams,
          body: {
            required: true,
            content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
          },
        },
        parameters: [
          { name: "X-Upload-Token", in: "header", required: true, schema: { type: "string" } },
          { name: "Content-Type", in: "header", required: true, schema: { type: "string" } },
          { name: "Content-Length", in: "header", required: true, schema: { type: "string" } },
        ],
        responses: {
          204: { description: "Stored" },
          ...errorResponses(400, 401, 404, 409, 422, 429),
          503: {
            description: "Storage failed; the upload is still reserved",
            content: { "application/json": { schema: z.object({ message: z.string() }) } },
          },
        },
      }),
      async (c) => {
        const { id } = c.req.valid("param");
        const token = c.req.header("X-Upload-Token") as string;
        const storeId = storeOfToken(token);
        if (!storeId) throw uploadNotFound(id);
        const coordinator = storeCoordinator(c.env, storeId);
        const lengthHeader = c.req.header("Content-Length");
        const upload = unwrap(
          await coordinator.beginPut(id, {
            tokenHash: await sha256Hex(token),
            contentType: c.req.header("Content-Type"),
            contentLength: lengthHeader && /^\d{1,15}$/.test(lengthHeader) ? Number(lengthHeader) : undefined,
          }),
          id,
        );
        const body = c.req.raw.body ?? new ReadableStream({ start: (controller) => controller.close() });
        const storing = storeBody(c.env, coordinator, storeId, upload, body, c.get("requestId"));
        inBackground(c, storing); // a client gone mid-body must not leave the upload `storing`
        const result = await storing;
        if (!result.stored) {
          if (result.cause === "body") throw new ApiError(400, uploadMessages.bodyLength);
          throw new ApiError(503, uploadMessages.storageFailed);
        }
        unwrap(result.finished, id);
        return c.body(null, 204);
      },
    )
    .openapi(
      bearerRoute({
        method: "post",
        path: "/media-uploads/{id}/complete",
        summary: "Complete an upload",
        description:
          "Hosts the stored bytes and answers the hosted file result. The kind is sniffed from the bytes: still images prepared as `image` are converted to WebP (at most `MAX_IMAGE_EDGE` px on the long edge), animated images and videos are hosted unchanged, `file` uploads are private. Checks: 401 → store → 403 → 429 (60 completes per minute per store) → 400 → 404 → 410 → 409 → 422 (bytes cannot be hosted, or the size is outside the store's upload limit, which may have been lowered since prepare).",
        tags: ["Media uploads"],
        guard: mediaWrite,
        afterGuard: [completeLimit],
        request: { params: UploadParams },
        responses: {
          201: { description: "The hosted file result", content: { "application/json": { schema: HostedFileSchema } } },
          ...errorResponses(400, ...bearerErrors, 404, 409, 410, 422),
        },
      }),
      async (c) => {
        const { id } = c.req.valid("param");
        const storeId = c.var.caller.storeId;
        const coordinator = storeCoordinator(c.env, storeId);
        const upload = unwrap(await coordinator.beginComplete(id), id);
        const completing = hostWithinLimit(c, coordinator, storeId, upload);
        inBackground(c, completing); // nor a client gone mid-conversion `processing`
        return c.json(await completing, 201);
      },
    )
    .openapi(
      bearerRoute({
        method: "get",
        path: "/media-uploads/{id}",
        summary: "Read an upload's state",
        description:
          "The upload's state and, once completed, its hosted file result, so a client can recover after a lost response. Expired uploads are not found.",
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
        return c.json(view, 200);
      },
    );
}
