import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../env";
import { ApiError, messages } from "../http/errors";
import { bearerErrors, bearerRoute, errorResponses } from "../http/route";
import { validationHook } from "../http/validate";
import { deleteDraft } from "./drafts";
import { findProduct, readDraftProduct, readLiveProduct } from "./queries";
import { DraftProduct, Product } from "./resource";

/** Path parameters of product-scoped routes. */
export const ProductParams = z.object({
  id: z
    .uuid({ error: messages.invalidProductId })
    .openapi({ param: { name: "id", in: "path" }, description: "Product id" }),
});

const readGuard = { ability: "products:read", store: "optional" } as const;

/** Product reads: the live product and its draft overlay. */
export const productRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(
    bearerRoute({
      method: "get",
      path: "/products/{id}",
      summary: "Read a product",
      description: "The live product. Archived products and other stores' products are not found.",
      tags: ["Products"],
      guard: readGuard,
      request: { params: ProductParams },
      responses: {
        200: { description: "The Product resource", content: { "application/json": { schema: Product } } },
        ...errorResponses(400, ...bearerErrors, 404),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const product = await findProduct(c.var.db, id, c.var.caller.scope);
      if (!product) throw new ApiError(404, messages.productNotFound(id));
      return c.json(await readLiveProduct(c.var.db, product), 200);
    },
  )
  .openapi(
    bearerRoute({
      method: "get",
      path: "/products/{id}/draft",
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
      const product = await findProduct(c.var.db, id, c.var.caller.scope);
      if (!product) throw new ApiError(404, messages.productNotFound(id));
      const draft = await readDraftProduct(c.var.db, product);
      if (!draft) throw new ApiError(404, messages.productHasNoDraft(id));
      return c.json(draft, 200, { ETag: `"${draft.draft_version}"` });
    },
  )
  .openapi(
    bearerRoute({
      method: "delete",
      path: "/products/{id}/draft",
      summary: "Delete a product's draft overlay",
      description:
        "Drops the overlay, as a 409 on a live write or a stale publish suggests. Any request body is ignored.",
      tags: ["Products"],
      guard: { ability: "products:write", store: "optional" },
      request: { params: ProductParams },
      responses: {
        204: { description: "The draft is gone; has_draft is false" },
        ...errorResponses(400, ...bearerErrors, 404),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const product = await findProduct(c.var.db, id, c.var.caller.scope);
      if (!product) throw new ApiError(404, messages.productNotFound(id));
      await deleteDraft(c.var.db, product.id);
      return c.body(null, 204);
    },
  );
