import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { optionalSetting } from "../config";
import type { AppEnv } from "../env";
import { enqueueInBackground } from "../events/dispatch";
import { eventBody, eventTarget } from "../events/records";
import { ApiError, messages } from "../http/errors";
import { keyClaim } from "../http/idempotency";
import { uuidParam } from "../http/params";
import { keptReads } from "../http/read-cache";
import { bearerErrors, bearerRoute, errorResponses } from "../http/route";
import { createRouter } from "../http/router";
import { projectPlatform } from "../platform/select";
import { type SigningScope, withSignedDownloads } from "./downloads";
import { deleteDraft } from "./drafts";
import { publishProduct } from "./publish";
import { type ProductRow, readDraftProduct, readLiveProduct, requireProduct } from "./queries";
import { DraftProduct, Product } from "./resource";

/** Path parameters of product-scoped routes. */
const ProductParams = z.object({
  id: uuidParam("id", messages.invalidProductId, "Product id"),
});

/** Reads sign only locators this origin issued for the product's own store. */
function signingScope(c: Context<AppEnv>, product: ProductRow): SigningScope {
  return {
    secret: optionalSetting(c.env, "FILE_SIGNING_SECRET"),
    origin: new URL(c.req.url).origin,
    storeId: product.storeId,
  };
}

/** The path's `id` is the product's: a token of several stores acts on that product's own store. */
const byProduct = { kind: "product", param: "id" } as const;
const readGuard = { ability: "products:read", store: "optional", owner: byProduct } as const;

/** Product reads: the live product and its draft overlay. */
export const productRoutes = createRouter()
  .openapi(
    bearerRoute({
      method: "get",
      path: "/products/{id}",
      operationId: "getProduct",
      summary: "Read a product",
      description: `The live product. Archived products and other stores' products are not found. ${keptReads}`,
      tags: ["Products"],
      guard: readGuard,
      cachedRead: true,
      request: { params: ProductParams },
      responses: {
        200: { description: "The Product resource", content: { "application/json": { schema: Product } } },
        ...errorResponses(400, ...bearerErrors, 404),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const { product, resource } = await readLiveProduct(c.var.db, id, c.var.caller.scope);
      return c.json(await withSignedDownloads(resource, signingScope(c, product)), 200);
    },
  )
  .openapi(
    bearerRoute({
      method: "get",
      path: "/products/{id}/draft",
      operationId: "getProductDraft",
      summary: "Read a product's draft overlay",
      description: "The overlay in the Product shape plus `draft_version`, which the `ETag` header carries too.",
      tags: ["Products"],
      guard: readGuard,
      request: { params: ProductParams },
      responses: {
        200: {
          description: "The draft overlay",
          headers: { ETag: { schema: { type: "string" }, description: "The quoted draft_version" } },
          content: { "application/json": { schema: DraftProduct } },
        },
        ...errorResponses(400, ...bearerErrors, 404),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const { product, resource: draft } = await readDraftProduct(c.var.db, id, c.var.caller.scope);
      if (!draft) throw new ApiError(404, messages.productHasNoDraft(id));
      return c.json(await withSignedDownloads(draft, signingScope(c, product)), 200, {
        ETag: `"${draft.draft_version}"`,
      });
    },
  )
  .openapi(
    bearerRoute({
      method: "delete",
      path: "/products/{id}/draft",
      operationId: "deleteProductDraft",
      summary: "Delete a product's draft overlay",
      description:
        "Drops the overlay, as a 409 on a live write or a stale publish suggests. Any request body is ignored.",
      tags: ["Products"],
      guard: { ability: "products:write", store: "optional", owner: byProduct },
      request: { params: ProductParams },
      responses: {
        204: { description: "The draft is gone; has_draft is false" },
        ...errorResponses(400, ...bearerErrors, 404),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const [product, { ref }] = await Promise.all([requireProduct(c.var.db, id, c.var.caller.scope), keyClaim(c)]);
      await deleteDraft(c.var.db, product.id, ref);
      return c.body(null, 204);
    },
  )
  .openapi(
    bearerRoute({
      method: "post",
      path: "/products/{id}/publish",
      operationId: "publishProduct",
      summary: "Publish a product",
      description:
        "Persists the draft overlay as the live product (or publishes / re-saves the live product when there is none) and answers the live product. Checks in order: 404 → 422 no active plan → 409 stale overlay → project platform (422 account not connected, 422 errors.wall_id / errors.footer_id) → course connects and disconnects (502 when the platform is unavailable; retrying is safe) → persist. A draft slug taken meanwhile is stored as `<slug>-2`, `-3`, …",
      tags: ["Products"],
      guard: { ability: "products:publish", store: "optional", owner: byProduct },
      request: { params: ProductParams },
      responses: {
        200: { description: "The published live product", content: { "application/json": { schema: Product } } },
        ...errorResponses(400, ...bearerErrors, 404, 409, 422, 502),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const [product, claim] = await Promise.all([requireProduct(c.var.db, id, c.var.caller.scope), keyClaim(c)]);
      // A publish whose request died after its batch and before its answer was made: it is only answered.
      const event = claim.recovering
        ? null
        : await publishProduct(
            {
              db: c.var.db,
              platform: projectPlatform(c.env, c.var.databases.global()),
              webhookTarget: (webhookUrl) => eventTarget(c.env, webhookUrl),
              key: claim.ref,
            },
            product,
          );
      const { product: published, resource } = await readLiveProduct(c.var.db, id, c.var.caller.scope);
      const body = await withSignedDownloads(resource, signingScope(c, published));
      if (event) {
        const data = { store_id: published.storeId, product: body };
        enqueueInBackground(c, event.id, eventBody(event.type, event.createdAt, data));
      }
      return c.json(body, 200);
    },
  );
