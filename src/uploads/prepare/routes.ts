import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { setting } from "../../config";
import { keyClaim } from "../../http/idempotency";
import { bearerErrors, bearerRoute, errorResponses } from "../../http/route";
import { createRouter } from "../../http/router";
import { sha256Hex } from "../../lib/crypto";
import { jsonAnswer } from "../../lib/idempotency";
import { MultipartPlan, mediaWrite, partUrl, retryLater, uploadUrl } from "../api-schemas";
import { coordinatorKeys, storeCoordinator } from "../coordinator/client";
import { storeUploadLimit } from "../store-limit";
import { newUploadToken } from "../upload-token";
import { type PartPlan, planUpload, refuseDeclaredType, reservationEnd, reserveUpload } from "./reserve";

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

const prepareRoute = bearerRoute({
  method: "post",
  path: "/media-uploads",
  operationId: "prepareMediaUpload",
  summary: "Reserve an upload",
  description:
    "Reserves an upload id for 15 minutes (`UPLOAD_TTL_SECONDS`) and answers where and how to PUT the bytes. HEIC, HEIF and AVIF are refused (convert to JPG or PNG); an SVG cannot be prepared as `image`. With `multipart` (and always above the single-PUT ceiling, `SINGLE_PUT_LIMIT_BYTES`) the bytes go in parts: `multipart` says how large each is and where to PUT it, with the headers of `upload_request`; each part stored extends the reservation by `UPLOAD_TTL_SECONDS`, up to `MULTIPART_MAX_HOURS` (24) after prepare.",
  tags: ["Media uploads"],
  guard: mediaWrite,
  keys: coordinatorKeys,
  request: { body: { required: true, content: { "application/json": { schema: PrepareBody } } } },
  responses: {
    201: { description: "The reservation", content: { "application/json": { schema: Reservation } } },
    ...errorResponses(400, ...bearerErrors, 413, 422),
    503: retryLater("Storage could not start a multipart upload; nothing is reserved, prepare again"),
  },
});

type Reserved = { id: string; token: string; expiresAt: number; contentType: string; size: number; plan: PartPlan };

/** The reservation as prepare answers it: where the bytes go, the headers to send them with, and how they are cut. */
function reservationAnswer(c: Context, apiBasePath: string, reserved: Reserved) {
  const { id, plan } = reserved;
  return {
    id,
    expires_at: new Date(reserved.expiresAt).toISOString(),
    upload_request: {
      method: "PUT" as const,
      url: uploadUrl(c.req.url, apiBasePath, id),
      // Copied onto every part PUT of a multipart upload, whose Content-Length is the part's own.
      headers: {
        "X-Upload-Token": reserved.token,
        "Content-Type": reserved.contentType,
        ...(plan ? {} : { "Content-Length": String(reserved.size) }),
      },
    },
    ...(plan && {
      multipart: {
        part_size: plan.partSize,
        part_count: plan.partCount,
        part_url: partUrl(c.req.url, apiBasePath, id),
      },
    }),
  };
}

/** Prepare: the declared upload checked, cut into parts or not, and reserved with the store's coordinator. */
export function prepareRoutes(apiBasePath: string) {
  return createRouter().openapi(prepareRoute, async (c) => {
    const body = c.req.valid("json");
    const type = body.type ?? "image";
    const storeId = c.var.caller.storeId;
    refuseDeclaredType(body.content_type, type);
    // The key's claim beside the limit's read: one round trip of latency for both.
    const [limit, claim] = await Promise.all([
      storeUploadLimit(c.var.db, storeId, () => setting(c.env, "DEFAULT_UPLOAD_LIMIT_BYTES")),
      keyClaim(c),
    ]);
    const single = () => setting(c.env, "SINGLE_PUT_LIMIT_BYTES");
    const plan = planUpload(body.size, limit, single, body.multipart === true);
    const ttlMs = setting(c.env, "UPLOAD_TTL_SECONDS") * 1000;
    const end = reservationEnd(plan, Date.now(), ttlMs, () => setting(c.env, "MULTIPART_MAX_HOURS") * 3_600_000);
    const id = crypto.randomUUID();
    const token = newUploadToken(storeId);
    const reservation = { id, filename: body.filename, contentType: body.content_type, size: body.size, type };
    const answer = reservationAnswer(c, apiBasePath, { ...reservation, token, expiresAt: end.expiresAt, plan });
    await reserveUpload(
      c.env.BUCKET,
      storeCoordinator(c.env, storeId),
      storeId,
      {
        ...reservation,
        tokenHash: await sha256Hex(token),
        expiresAt: end.expiresAt,
        plan,
        maxExpiresAt: end.maxExpiresAt,
      },
      c.get("requestId"),
      // Kept with the reservation: the answer holds the upload token, which a retry needs as much as the id.
      claim.ref && { ref: claim.ref, answer: jsonAnswer(201, answer) },
    );
    return c.json(answer, 201);
  });
}
