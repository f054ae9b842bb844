import { createRouter } from "../../http/router";
import { sha256Hex } from "../../lib/crypto";
import { UploadParams } from "../api-schemas";
import { bytePutRoute, putAttempt, requestBody, requireUploadToken, storedOrRefused } from "../byte-put";
import { storeCoordinator, unwrap, uploadNotFound } from "../coordinator/client";
import { putLimit } from "../put-limits";
import { storeOfToken } from "../upload-token";
import { storeBytes } from "./store-bytes";

export const putBytesRoute = bytePutRoute({
  path: "/media-uploads/{id}",
  operationId: "putMediaUploadBytes",
  summary: "Upload the bytes",
  description:
    "No `Authorization`: the `X-Upload-Token` from prepare authorizes this one upload. Send the headers exactly as prepare returned them; the body is the raw file. Checks: 429 (20 PUTs per minute per client IP) → 401 no token → 400 malformed id → 404 (unknown, wrong token, expired) → 409 (already stored, being stored, or a multipart upload, whose bytes go in parts) → 422 (Content-Type or Content-Length differ). Any origin may call it from a browser.",
  checks: [putLimit, requireUploadToken],
  params: UploadParams,
  success: { 204: { description: "Stored" } },
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
  unwrap(await storedOrRefused(c, storing), id);
  return c.body(null, 204);
});
