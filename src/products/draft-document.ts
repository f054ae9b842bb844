import { z } from "@hono/zod-openapi";
import { CrossSellRecord } from "./cross-sells/resource";
import { CustomField, ProductAttributes, VariantAttributes } from "./resource";

/** A custom field as kept in an overlay: `order` is always present and contiguous. */
export const StoredCustomField = CustomField.required({ order: true });
export type StoredCustomField = z.infer<typeof StoredCustomField>;

export const DraftVariant = z.object({
  id: z.uuid(),
  status: z.string(),
  name: z.string(),
  attributes: VariantAttributes,
  custom_fields: z.array(StoredCustomField).nullable(),
});
export type DraftVariant = z.infer<typeof DraftVariant>;

export const Player = z.object({
  connect: z.array(z.uuid()).default([]),
  disconnect: z.array(z.uuid()).default([]),
  redirect_course_id: z.uuid().nullable().default(null),
});

/**
 * The stored overlay document. It is complete: every collection the overlay can change is present,
 * copied from the live product where the draft did not change it, so reads and publish need no fallbacks.
 */
export const DraftDocument = z.object({
  product: z.object({ name: z.string(), slug: z.string(), attributes: ProductAttributes }),
  custom_fields: z.array(StoredCustomField).nullable(),
  waitlist_custom_fields: z.array(StoredCustomField).nullable(),
  variants: z.array(DraftVariant),
  cross_sells: z.array(CrossSellRecord),
  wall_id: z.uuid().nullable(),
  footer_id: z.uuid().nullable(),
  player: Player.nullable(),
});
export type DraftDocument = z.infer<typeof DraftDocument>;
