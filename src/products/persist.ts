import { eq, inArray, or } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { insertStatements } from "../db/batch";
import type { Database } from "../db/client";
import { crossSells, customFields, variants } from "../db/schema";
import type { CrossSellRecord } from "./cross-sells/resource";
import type { DraftVariant, StoredCustomField } from "./draft-document";

/** The collections of a product that a fixture or a publish replaces as a whole. */
type ProductContent = {
  customFields: StoredCustomField[] | null;
  waitlistCustomFields: StoredCustomField[] | null;
  variants: DraftVariant[];
  crossSells: CrossSellRecord[];
};

function fieldRows(
  productId: string,
  ownerKind: "product" | "waitlist" | "variant",
  ownerId: string,
  fields: StoredCustomField[],
) {
  return fields.map(({ name, enabled, order, ...extra }) => ({
    productId,
    ownerKind,
    ownerId,
    name,
    enabled,
    position: order,
    extra,
  }));
}

/**
 * Statements that replace a product's custom fields, variants and cross-sells with `content`, for
 * one atomic batch. Variant ids are taken over even if another product held them.
 */
export function replaceProductContent(db: Database, productId: string, content: ProductContent): BatchItem<"sqlite">[] {
  const variantIds = content.variants.map((variant) => variant.id);
  return [
    db.delete(customFields).where(eq(customFields.productId, productId)),
    db
      .delete(variants)
      .where(
        variantIds.length > 0
          ? or(eq(variants.productId, productId), inArray(variants.id, variantIds))
          : eq(variants.productId, productId),
      ),
    db.delete(crossSells).where(eq(crossSells.ownerProductId, productId)),
    ...insertStatements(
      db,
      variants,
      content.variants.map((variant, position) => ({
        id: variant.id,
        productId,
        position,
        status: variant.status,
        name: variant.name,
        attributes: variant.attributes,
        customFieldsDefined: variant.custom_fields !== null,
      })),
    ),
    ...insertStatements(db, customFields, [
      ...fieldRows(productId, "product", productId, content.customFields ?? []),
      ...fieldRows(productId, "waitlist", productId, content.waitlistCustomFields ?? []),
      ...content.variants.flatMap((variant) =>
        fieldRows(productId, "variant", variant.id, variant.custom_fields ?? []),
      ),
    ]),
    ...insertStatements(
      db,
      crossSells,
      content.crossSells.map((crossSell, position) => ({
        id: crossSell.id,
        ownerProductId: productId,
        position,
        productId: crossSell.product_id,
        variantId: crossSell.variant_id,
        parentId: crossSell.parent_id,
        title: crossSell.title,
        mainDescription: crossSell.main_description,
        description: crossSell.description,
        buttonText: crossSell.button_text,
        amount: crossSell.amount,
        currency: crossSell.currency,
        discount: crossSell.discount,
        validityMinutes: crossSell.validity_minutes,
        onePurchase: crossSell.one_purchase,
        sendOffer: crossSell.send_offer,
        active: crossSell.active,
      })),
    ),
  ];
}
