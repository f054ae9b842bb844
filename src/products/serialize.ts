import type { customFields, products, variants } from "../db/schema";
import type { DraftDocument, StoredCustomField } from "./draft-document";
import { type DraftProduct, type Product, ProductAttributes, type Variant, VariantAttributes } from "./resource";

type ProductRow = typeof products.$inferSelect;
type VariantRow = typeof variants.$inferSelect;
type CustomFieldRow = typeof customFields.$inferSelect;

/** A custom-field row as the `{name, enabled, order, ...definition}` object of reads. */
function customFieldView(row: CustomFieldRow): StoredCustomField {
  return { name: row.name, enabled: row.enabled, order: row.position, ...row.extra };
}

/** Sorted field objects of one owner, or null when the owner has no array of its own. */
export function ownerFields(
  rows: CustomFieldRow[],
  kind: CustomFieldRow["ownerKind"],
  ownerId: string,
  defined: boolean,
) {
  if (!defined) return null;
  return rows
    .filter((row) => row.ownerKind === kind && row.ownerId === ownerId)
    .sort((a, b) => a.position - b.position)
    .map(customFieldView);
}

type ProductParts = {
  id: string;
  status: string;
  name: string;
  slug: string;
  attributes: Record<string, unknown>;
  customFields: StoredCustomField[] | null;
  waitlistCustomFields: StoredCustomField[] | null;
  variants: Variant[];
  hasDraft: boolean;
};

function productResource(parts: ProductParts): Product {
  return {
    id: parts.id,
    // Archived products are never served, so a served product is draft or published.
    status: parts.status as Product["status"],
    name: parts.name,
    slug: parts.slug,
    ...ProductAttributes.parse(parts.attributes),
    custom_fields: parts.customFields,
    waitlist_custom_fields: parts.waitlistCustomFields,
    variants: parts.variants,
    has_draft: parts.hasDraft,
  };
}

function variantResource(variant: {
  id: string;
  status: string;
  name: string;
  attributes: unknown;
  custom_fields: StoredCustomField[] | null;
}): Variant {
  return {
    id: variant.id,
    status: variant.status,
    name: variant.name,
    ...VariantAttributes.parse(variant.attributes),
    custom_fields: variant.custom_fields,
  };
}

/** The Product resource of a live product. */
export function liveProductView(
  product: ProductRow,
  variantRows: VariantRow[],
  fieldRows: CustomFieldRow[],
  hasDraft: boolean,
): Product {
  return productResource({
    ...product,
    customFields: ownerFields(fieldRows, "product", product.id, product.customFieldsDefined),
    waitlistCustomFields: ownerFields(fieldRows, "waitlist", product.id, product.waitlistCustomFieldsDefined),
    variants: [...variantRows]
      .sort((a, b) => a.position - b.position)
      .map((variant) =>
        variantResource({
          ...variant,
          custom_fields: ownerFields(fieldRows, "variant", variant.id, variant.customFieldsDefined),
        }),
      ),
    hasDraft,
  });
}

/** The draft read: the overlay in the Product shape plus `draft_version`. */
export function draftProductView(product: ProductRow, document: DraftDocument, draftVersion: number): DraftProduct {
  return {
    ...productResource({
      id: product.id,
      status: product.status,
      name: document.product.name,
      slug: document.product.slug,
      attributes: document.product.attributes,
      customFields: document.custom_fields,
      waitlistCustomFields: document.waitlist_custom_fields,
      variants: document.variants.map(variantResource),
      hasDraft: true,
    }),
    draft_version: draftVersion,
  };
}
