import { z } from "@hono/zod-openapi";
import { setting } from "../../config";
import { createRouter } from "../../http/router";
import { sha256Hex } from "../../lib/crypto";
import { UploadParams } from "../api-schemas";
import { bytePutRoute, putAttempt, requestBody, requireUploadToken, storedOrRefused } from "../byte-put";
import { refusalError, storeCoordinator, unwrap, uploadNotFound } from "../coordinator/client";
import { uploadMessages } from "../messages";
import { partEtag } from "../parts-state";
import { countPartMiss, partLimit } from "../put-limits";
import { storeOfToken } from "../upload-token";
import { storePart } from "./store-part";

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

export const putPartRoute = bytePutRoute({
  path: "/media-uploads/{id}/parts/{part_number}",
  operationId: "putMediaUploadPart",
  summary: "Upload one part",
  description:
    "One part of a multipart upload, with the headers of prepare's `upload_request` and the part's own Content-Length: `part_size`, the last part the rest. Parts may come in any order and in parallel; a part sent again replaces the earlier one, so a retry is always safe. Each part stored extends the reservation. Answers the part's `ETag`. Checks: 429 (`PART_LIMIT_PER_MINUTE`, 600 part PUTs per minute per client IP; and every part PUT is refused while the IP's 20-per-minute PUT limit is spent, which a part PUT with an unknown upload or a wrong token counts toward) → 401 no token → 400 malformed id or part number → 404 (unknown, wrong token, expired) → 409 (not a multipart upload, already assembled or completed, this part being stored by another request) → 422 (part number outside 1..`part_count`, with `errors.part_number`; Content-Type or Content-Length differ). Any origin may call it from a browser.",
  checks: [partLimit, requireUploadToken],
  params: PartParams,
  success: {
    204: {
      description: "The part is stored",
      headers: {
        ETag: {
          description: "The stored part's entity tag, as the upload's part list shows it",
          schema: { type: "string" },
        },
      },
    },
  },
});

/** The part PUT of a multipart upload (docs/uploads.md): any order, in parallel, each part retried safely. */
export const putPartRoutes = createRouter().openapi(putPartRoute, async (c) => {
  const { id, part_number: partNumber } = c.req.valid("param");
  const token = c.req.header("X-Upload-Token") as string;
  const storeId = storeOfToken(token);
  if (!storeId) {
    await countPartMiss(c);
    throw uploadNotFound(id);
  }
  const ttlMs = setting(c.env, "UPLOAD_TTL_SECONDS") * 1000; // read first: a malformed value leases no part
  const coordinator = storeCoordinator(c.env, storeId);
  const begun = await coordinator.beginPart(id, {
    ...putAttempt(c, await sha256Hex(token)),
    partNumber: Number(partNumber),
  });
  if (!begun.ok) {
    if (begun.refusal.reason === "not_found") await countPartMiss(c);
    throw refusalError(begun.refusal, id);
  }
  const at = { storeId, uploadId: id, ttlMs, requestId: c.get("requestId") };
  const stored = await storedOrRefused(c, storePart(c.env.BUCKET, coordinator, at, begun.ticket, requestBody(c)));
  unwrap(stored.finished, id);
  c.header("ETag", partEtag(stored.etag));
  return c.body(null, 204);
});
