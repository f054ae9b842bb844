import { z } from "@hono/zod-openapi";
import { readTogether } from "../../db/reusable";
import { ApiError, messages } from "../../http/errors";
import { integerQuery, Pagination, pagination } from "../../http/pagination";
import { uuidParam } from "../../http/params";
import { keptReads } from "../../http/read-cache";
import { bearerErrors, bearerRoute, errorResponses } from "../../http/route";
import { createRouter } from "../../http/router";
import { foundProduct, productInScope, readProductAndDraft } from "../queries";
import { draftCrossSellPage, liveCrossSellPage, liveCrossSellQueries } from "./queries";
import { CrossSell } from "./resource";

const Params = z.object({
  productId: uuidParam("productId", messages.invalidProductId, "Owner product id"),
});
const Query = z.object({
  page: integerQuery({ name: "page", min: 1, fallback: 1 }).openapi({ param: { name: "page", in: "query" } }),
  per_page: integerQuery({ name: "per page", min: 1, max: 100, fallback: 25 }).openapi({
    param: { name: "per_page", in: "query" },
  }),
});
const CrossSellList = z.object({ items: z.array(CrossSell), pagination: Pagination }).openapi("CrossSellList");

function listRoute(
  operationId: string,
  path: string,
  summary: string,
  description: string,
  options: { cachedRead?: true } = {},
) {
  return bearerRoute({
    method: "get",
    path,
    operationId,
    summary,
    description,
    tags: ["Cross-sells"],
    guard: { ability: "products:read", store: "optional", owner: { kind: "product", param: "productId" } },
    ...options,
    request: { params: Params, query: Query },
    responses: {
      200: { description: "A page of cross-sells", content: { "application/json": { schema: CrossSellList } } },
      ...errorResponses(400, ...bearerErrors, 404, 422),
    },
  });
}

const listRules =
  "Inactive cross-sells are included; incomplete ones are omitted and not counted. Items are in display order; a page past the last returns empty items.";

/** Cross-sell lists of a product, live and on its draft overlay. */
export const crossSellRoutes = createRouter()
  .openapi(
    listRoute(
      "listProductCrossSells",
      "/products/{productId}/cross-sells",
      "List a product's cross-sells",
      `${listRules} ${keptReads}`,
      { cachedRead: true },
    ),
    async (c) => {
      const { productId } = c.req.valid("param");
      const { page, per_page: perPage } = c.req.valid("query");
      const db = c.var.db;
      const [productRows, rows, counted] = await readTogether(db, [
        productInScope(db, productId, c.var.caller.scope),
        ...liveCrossSellQueries(db, productId, page, perPage),
      ]);
      foundProduct(productRows, productId);
      const { items, total } = liveCrossSellPage(rows, counted);
      return c.json({ items, pagination: pagination(page, perPage, total, 1) }, 200);
    },
  )
  .openapi(
    listRoute(
      "listProductDraftCrossSells",
      "/products/{productId}/draft/cross-sells",
      "List the cross-sells of a product's draft",
      listRules,
    ),
    async (c) => {
      const { productId } = c.req.valid("param");
      const { page, per_page: perPage } = c.req.valid("query");
      const { product, draft } = await readProductAndDraft(c.var.db, productId, c.var.caller.scope);
      if (!draft) throw new ApiError(404, messages.productHasNoDraft(product.id));
      const { items, total } = draftCrossSellPage(draft.document.cross_sells, page, perPage);
      return c.json({ items, pagination: pagination(page, perPage, total, 1) }, 200);
    },
  );
