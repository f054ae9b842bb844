import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../env";
import { enqueueInBackground } from "../events/dispatch";
import { eventTarget, newEvent } from "../events/records";
import type { PathOwner } from "../http/auth";
import { ApiError, messages } from "../http/errors";
import { keyClaim } from "../http/idempotency";
import { uuidParam } from "../http/params";
import { bearerErrors, bearerRoute, errorResponses } from "../http/route";
import { createRouter } from "../http/router";
import { type DraftFieldOwner, deleteDraftCustomField, deleteLiveCustomField } from "./custom-fields";
import { DraftVersionBody, draftMessages, readDraftVersion } from "./drafts";
import { findDraft, findVariant, type ProductRow, requireProduct } from "./queries";

const productId = uuidParam("productId", messages.invalidProductId, "Product id");
const variantId = uuidParam("id", messages.invalidVariantId, "Variant id");
const name = z
  .string()
  .openapi({ param: { name: "name", in: "path" }, description: "The field's identity slug (percent-decoded once)" });

/**
 * The guard of a route whose path names its store's resource by `owner` (a token of several stores without
 * `X-Service-Store` acts on that resource's own store): the product's `productId`, or the live variant's `id`.
 */
const writeGuard = (owner: PathOwner) => ({ ability: "products:write", store: "optional", owner }) as const;
const byProduct: PathOwner = { kind: "product", param: "productId" };
const deleted = { 204: { description: "Deleted; the remaining fields are renumbered 0..n-1" } };

// Documented from the handler's own zod schema, but not validated by the router: the handler reads the
// body after the product and draft lookups. `$schema` is dropped: the document's dialect already says it.
const { $schema: _dialect, ...draftVersionSchema }: Record<string, unknown> = z.toJSONSchema(DraftVersionBody, {
  io: "input",
});
const draftVersionBody = { required: true, content: { "application/json": { schema: draftVersionSchema } } };

function liveRoute<P extends z.ZodObject>(
  operationId: string,
  path: string,
  summary: string,
  params: P,
  owner: PathOwner = byProduct,
) {
  return bearerRoute({
    method: "delete",
    path,
    operationId,
    summary,
    description:
      "Deletes a live custom field by name. 409 while the product has a draft: delete the field on the draft instead, or publish or delete the draft first.",
    tags: ["Custom fields"],
    guard: writeGuard(owner),
    request: { params },
    responses: { ...deleted, ...errorResponses(400, ...bearerErrors, 404, 409) },
  });
}

function draftRoute<P extends z.ZodObject>(operationId: string, path: string, summary: string, params: P) {
  return bearerRoute({
    method: "delete",
    path,
    operationId,
    summary,
    description:
      "Deletes a custom field of the product's draft overlay. The body carries the current `draft_version`; a stale one answers 409 and a success bumps it by one.",
    tags: ["Custom fields"],
    guard: writeGuard(byProduct),
    request: { params, body: draftVersionBody },
    responses: { ...deleted, ...errorResponses(400, ...bearerErrors, 404, 409, 422) },
  });
}

/**
 * Deletes a live field with its `product.custom_field.deleted` event (when the product has a webhook
 * target) in one batch, then hands the event to the queue without waiting for it.
 */
async function deleteLiveField(
  c: Context<AppEnv>,
  product: ProductRow,
  owner: { kind: "product" | "waitlist" } | { kind: "variant"; variantId: string },
  fieldName: string,
) {
  const now = new Date();
  const url = eventTarget(c.env, product.attributes.webhook_url);
  const event = url
    ? newEvent(
        product,
        "product.custom_field.deleted",
        url,
        {
          store_id: product.storeId,
          product_id: product.id,
          variant_id: owner.kind === "variant" ? owner.variantId : null,
          list: owner.kind === "waitlist" ? "waitlist_custom_fields" : "custom_fields",
          name: fieldName,
        },
        now,
      )
    : null;
  const ownerId = owner.kind === "variant" ? owner.variantId : product.id;
  const { ref } = await keyClaim(c); // already claimed beside the product's read
  await deleteLiveCustomField(
    c.var.db,
    { productId: product.id, kind: owner.kind, ownerId },
    fieldName,
    now,
    event,
    ref,
  );
  if (event) enqueueInBackground(c, event.id);
  return c.body(null, 204);
}

/** 404 product → 409 has draft → 404 field. */
async function deleteOnLiveProduct(c: Context<AppEnv>, id: string, kind: "product" | "waitlist", fieldName: string) {
  // The request's Idempotency-Key claim beside the product's read: one round trip for both.
  const [product] = await Promise.all([requireProduct(c.var.db, id, c.var.caller.scope), keyClaim(c)]);
  return deleteLiveField(c, product, { kind }, fieldName);
}

/** 404 no draft → variant of the overlay → 422 version → 409 stale → 404 field. */
async function deleteOnDraft(c: Context<AppEnv>, id: string, owner: DraftFieldOwner, fieldName: string) {
  const [product, { ref }] = await Promise.all([requireProduct(c.var.db, id, c.var.caller.scope), keyClaim(c)]);
  const draft = await findDraft(c.var.db, product.id);
  if (!draft) throw new ApiError(404, messages.productHasNoDraft(product.id));
  if (owner.kind === "variant" && !draft.document.variants.some((variant) => variant.id === owner.variantId)) {
    throw new ApiError(404, messages.variantNotFound(owner.variantId));
  }
  const version = await readDraftVersion(c);
  if (version !== draft.draftVersion) throw new ApiError(409, draftMessages.stale);
  await deleteDraftCustomField(c.var.db, product.id, owner, fieldName, version, draft.document, ref);
  return c.body(null, 204);
}

/** The six custom-field deletes: product, waitlist and variant fields, live and on the draft overlay. */
export const customFieldRoutes = createRouter()
  .openapi(
    liveRoute(
      "deleteProductCustomField",
      "/products/{productId}/custom-fields/{name}",
      "Delete a product custom field",
      z.object({ productId, name }),
    ),
    (c) => {
      const params = c.req.valid("param");
      return deleteOnLiveProduct(c, params.productId, "product", params.name);
    },
  )
  .openapi(
    liveRoute(
      "deleteWaitlistCustomField",
      "/products/{productId}/waitlist-custom-fields/{name}",
      "Delete a waitlist custom field",
      z.object({ productId, name }),
    ),
    (c) => {
      const params = c.req.valid("param");
      return deleteOnLiveProduct(c, params.productId, "waitlist", params.name);
    },
  )
  .openapi(
    liveRoute(
      "deleteVariantCustomField",
      "/product-variants/{id}/custom-fields/{name}",
      "Delete a variant custom field",
      z.object({ id: variantId, name }),
      { kind: "variant", param: "id" },
    ),
    async (c) => {
      const params = c.req.valid("param");
      const [found] = await Promise.all([findVariant(c.var.db, params.id, c.var.caller.scope), keyClaim(c)]);
      if (!found) throw new ApiError(404, messages.variantNotFound(params.id));
      return deleteLiveField(c, found.product, { kind: "variant", variantId: found.variant.id }, params.name);
    },
  )
  .openapi(
    draftRoute(
      "deleteDraftProductCustomField",
      "/products/{productId}/draft/custom-fields/{name}",
      "Delete a product custom field on the draft",
      z.object({ productId, name }),
    ),
    (c) => {
      const params = c.req.valid("param");
      return deleteOnDraft(c, params.productId, { kind: "product" }, params.name);
    },
  )
  .openapi(
    draftRoute(
      "deleteDraftWaitlistCustomField",
      "/products/{productId}/draft/waitlist-custom-fields/{name}",
      "Delete a waitlist custom field on the draft",
      z.object({ productId, name }),
    ),
    (c) => {
      const params = c.req.valid("param");
      return deleteOnDraft(c, params.productId, { kind: "waitlist" }, params.name);
    },
  )
  .openapi(
    draftRoute(
      "deleteDraftVariantCustomField",
      "/products/{productId}/draft/variants/{id}/custom-fields/{name}",
      "Delete a variant custom field on the draft",
      z.object({ productId, id: variantId, name }),
    ),
    (c) => {
      const params = c.req.valid("param");
      return deleteOnDraft(c, params.productId, { kind: "variant", variantId: params.id }, params.name);
    },
  );
