import { setting } from "../../config";
import type { GuardedEnv } from "../../http/auth";
import { inBackground } from "../../http/background";
import { routeClaim } from "../../http/idempotency";
import { rateLimit } from "../../http/rate-limit";
import { bearerErrors, bearerRoute, errorResponses } from "../../http/route";
import { createRouter } from "../../http/router";
import { jsonAnswer } from "../../lib/idempotency";
import { HostedFileSchema, mediaWrite, retryLater, UploadParams } from "../api-schemas";
import { completeKeys, storeCoordinator } from "../coordinator/client";
import { publishedFile } from "../srcset";
import { completeUpload } from "./complete";

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
    "Hosts the stored bytes and answers the hosted file result. A multipart upload's parts are assembled first; while any is missing the answer is 409 saying how many. The kind is sniffed from the bytes: still images prepared as `image` are converted to WebP (scaled down to `MAX_IMAGE_EDGE` on the long edge), animated images and videos are hosted unchanged, `file` uploads are private. Checks: 401 → store → 403 → 429 (`COMPLETE_LIMIT_PER_MINUTE` per store) → 400 → 404 → 410 → 409 → 422 (bytes cannot be hosted, or the size is outside the store's upload limit, which may have been lowered since prepare). The limits' values: docs/limits.md in the service's repository.",
  tags: ["Media uploads"],
  guard: mediaWrite,
  afterGuard: [completeLimit],
  keys: completeKeys,
  request: { params: UploadParams },
  responses: {
    201: { description: "The hosted file result", content: { "application/json": { schema: HostedFileSchema } } },
    ...errorResponses(400, ...bearerErrors, 404, 409, 410, 422),
    503: retryLater(
      "Storage could not assemble the parts, or the image converter is unavailable (the message names the cause); the upload is as it was, and complete may be retried after `Retry-After` seconds",
    ),
  },
});

/** Complete: validated here, run by `completeUpload` (complete.ts), answered with the result's srcset. */
export const completeRoutes = createRouter().openapi(completeRoute, async (c) => {
  const { id } = c.req.valid("param");
  const storeId = c.var.caller.storeId;
  const widths = setting(c.env, "IMAGE_WIDTHS"); // read first: a malformed list changes nothing
  // The Idempotency-Key is claimed in the begin's own coordinator call (docs/latency.md).
  const claim = routeClaim(c);
  const completing = completeUpload(
    {
      coordinator: storeCoordinator(c.env, storeId),
      bucket: c.env.BUCKET,
      db: c.var.db,
      converter: c.env.CONVERTER,
      requestId: c.get("requestId"),
      urls: { mediaBaseUrl: mediaBaseUrl(c.env, c.req.url), origin: new URL(c.req.url).origin },
      settings: {
        defaultUploadLimit: () => setting(c.env, "DEFAULT_UPLOAD_LIMIT_BYTES"),
        maxImageEdge: () => setting(c.env, "MAX_IMAGE_EDGE"),
      },
      // The answers the route gives (renderError's body for the 422), kept with the outcome.
      key: claim && {
        ...claim,
        answerOf: (outcome) =>
          "hosted" in outcome
            ? jsonAnswer(201, publishedFile(outcome.hosted, widths))
            : jsonAnswer(422, { message: outcome.unhostable }),
      },
    },
    storeId,
    id,
  );
  inBackground(c, completing); // nor a client gone mid-conversion `processing`
  return c.json(publishedFile(await completing, widths), 201);
});
