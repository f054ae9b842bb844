import { inBackground } from "../../http/background";
import { errorResponses, openRoute } from "../../http/route";
import { createRouter } from "../../http/router";
import { sha256Hex } from "../../lib/crypto";
import { UploadParams } from "../api-schemas";
import {
  binaryBody,
  PutHeaders,
  putAttempt,
  requestBody,
  requireUploadToken,
  storageFailedResponse,
  storingFailed,
} from "../byte-put";
import { storeCoordinator, unwrap, uploadNotFound } from "../coordinator/client";
import { putLimit } from "../put-limits";
import { storeOfToken } from "../upload-token";
import { storeBytes } from "./store-bytes";

export const putBytesRoute = openRoute({
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
});

/** The byte PUT of a single-PUT upload; its upload token names the store, whose coordinator checks it. */
export const putBytesRoutes = createRouter().openapi(putBytesRoute, async (c) => {
  const { id } = c.req.valid("param");
  const token = c.req.header("X-Upload-Token") as string;
  const storeId = storeOfToken(token);
  if (!storeId) throw uploadNotFound(id);
  const coordinator = storeCoordinator(c.env, storeId);
  const upload = unwrap(await coordinator.beginPut(id, putAttempt(c, await sha256Hex(token))), id);
  const storing = storeBytes(c.env.BUCKET, coordinator, storeId, upload, requestBody(c), c.get("requestId"));
  inBackground(c, storing); // a client gone mid-body must not leave the upload `storing`
  const result = await storing;
  if (!result.stored) throw storingFailed(result.cause);
  unwrap(result.value, id);
  return c.body(null, 204);
});
