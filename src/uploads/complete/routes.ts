import { setting } from "../../config";
import { askConverter, ConverterUnavailableError, converterRetryAfterSeconds } from "../../converter/client";
import type { ConvertJob } from "../../converter/contract";
import type { GuardedEnv } from "../../http/auth";
import { inBackground } from "../../http/background";
import { ApiError } from "../../http/errors";
import { rateLimit } from "../../http/rate-limit";
import { bearerErrors, bearerRoute, errorResponses } from "../../http/route";
import { createRouter } from "../../http/router";
import { HostedFileSchema, mediaWrite, retryLater, UploadParams } from "../api-schemas";
import { storeCoordinator, unwrap } from "../coordinator/client";
import { uploadMessages } from "../messages";
import { publishedFile } from "../srcset";
import { storeUploadLimit } from "../store-limit";
import { assembleParts, checkWithinLimit, completeUpload } from "./complete";
import { hostUpload } from "./hosting";

/** The store's complete limit, counted by its coordinator after the guard's general limit. */
const completeLimit = rateLimit<GuardedEnv<"required">>(
  (c) => (limit, windowSeconds) =>
    storeCoordinator(c.env, c.var.caller.storeId).consumeCompleteLimit(limit, windowSeconds),
  "COMPLETE_LIMIT_PER_MINUTE",
);

/** Base of public media URLs: `MEDIA_BASE_URL`, else this Worker's own /media. */
function mediaBaseUrl(env: Env, requestUrl: string): string {
  return setting(env, "MEDIA_BASE_URL") || `${new URL(requestUrl).origin}/media`;
}

const completeRoute = bearerRoute({
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
    503: retryLater(
      "Storage could not assemble the parts, or the image converter is unavailable (the message names the cause); the upload is as it was, and complete may be retried after `Retry-After` seconds",
    ),
  },
});

/** Complete: the coordinator's begin and finish around the limit check, the assembly and the hosting. */
export const completeRoutes = createRouter().openapi(completeRoute, async (c) => {
  const { id } = c.req.valid("param");
  const storeId = c.var.caller.storeId;
  const bucket = c.env.BUCKET;
  const coordinator = storeCoordinator(c.env, storeId);
  const widths = setting(c.env, "IMAGE_WIDTHS"); // read first: a malformed list changes nothing
  // The limit's D1 read goes beside the coordinator's begin (one round trip of latency, not two); it is
  // looked at only at its step, after begin's 404/410/409.
  const limit = storeUploadLimit(c.var.db, storeId, () => setting(c.env, "DEFAULT_UPLOAD_LIMIT_BYTES"));
  limit.catch(() => {}); // awaited at its step, unless begin refuses first
  const upload = unwrap(await coordinator.beginComplete(id), id);
  const completing = completeUpload(coordinator, upload, {
    checkLimit: async () => checkWithinLimit(upload.size, await limit),
    assemble: (r2UploadId) => assembleParts(bucket, storeId, upload, r2UploadId, c.get("requestId")),
    host: (beforeWrite) => {
      const maxImageEdge = setting(c.env, "MAX_IMAGE_EDGE");
      const origin = new URL(c.req.url).origin;
      const convert = (job: ConvertJob) =>
        askConverter(c.env, { request_id: c.get("requestId"), upload_id: id }, (converter) =>
          converter.convert(job),
        ).catch((error) => {
          if (!(error instanceof ConverterUnavailableError)) throw error;
          throw new ApiError(503, uploadMessages.converterUnavailable(error.reason), undefined, {
            "Retry-After": String(converterRetryAfterSeconds),
          });
        });
      return hostUpload(
        { bucket, convert, maxImageEdge, mediaBaseUrl: mediaBaseUrl(c.env, c.req.url), origin, beforeWrite },
        storeId,
        upload,
      );
    },
  });
  inBackground(c, completing); // nor a client gone mid-conversion `processing`
  return c.json(publishedFile(await completing, widths), 201);
});
