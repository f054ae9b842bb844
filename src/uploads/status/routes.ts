import { z } from "@hono/zod-openapi";
import { setting } from "../../config";
import { bearerErrors, bearerRoute, errorResponses } from "../../http/route";
import { createRouter } from "../../http/router";
import { HostedFileSchema, MultipartPlan, mediaWrite, partUrl, UploadParams } from "../api-schemas";
import { storeCoordinator, uploadNotFound } from "../coordinator/client";
import { uploadStatusAnswer } from "./answer";

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

const statusRoute = bearerRoute({
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
});

/** The upload's state, for a client that lost a response or its place among the parts. */
export function statusRoutes(apiBasePath: string) {
  return createRouter().openapi(statusRoute, async (c) => {
    const { id } = c.req.valid("param");
    const data = await storeCoordinator(c.env, c.var.caller.storeId).status(id);
    if (!data) throw uploadNotFound(id);
    const widths = () => setting(c.env, "IMAGE_WIDTHS");
    return c.json(uploadStatusAnswer(data, widths, partUrl(c.req.url, apiBasePath, id)), 200);
  });
}
