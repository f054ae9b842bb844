import { z } from "@hono/zod-openapi";

/** The Cross-sell resource as listed. */
export const CrossSell = z
  .object({
    id: z.uuid(),
    product_id: z.uuid(),
    variant_id: z.uuid(),
    parent_id: z.uuid().nullable(),
    title: z.string(),
    main_description: z.unknown().nullable(),
    description: z.unknown().nullable(),
    button_text: z.string().nullable(),
    amount: z.number().int(),
    currency: z.string(),
    discount: z.unknown().nullable(),
    validity_minutes: z.number().int(),
    one_purchase: z.boolean(),
    send_offer: z.boolean(),
    active: z.boolean(),
  })
  .openapi("CrossSell");
export type CrossSell = z.infer<typeof CrossSell>;

/**
 * A cross-sell as stored (live rows, draft overlays, fixtures): any of the fields a buyer needs may be
 * missing, which makes it incomplete and keeps it out of lists.
 */
export const CrossSellRecord = z.object({
  id: z.uuid(),
  product_id: z.uuid().nullable().default(null),
  variant_id: z.uuid().nullable().default(null),
  parent_id: z.uuid().nullable().default(null),
  title: z.string().nullable().default(null),
  main_description: z.unknown().nullable().default(null),
  description: z.unknown().nullable().default(null),
  button_text: z.string().nullable().default(null),
  amount: z.number().int().min(0).nullable().default(null),
  currency: z
    .string()
    .regex(/^[a-z]{3}$/)
    .nullable()
    .default(null),
  discount: z.unknown().nullable().default(null),
  validity_minutes: z.number().int().min(0).nullable().default(null),
  one_purchase: z.boolean().default(false),
  send_offer: z.boolean().default(false),
  active: z.boolean().default(true),
});
export type CrossSellRecord = z.infer<typeof CrossSellRecord>;

/** The fields whose absence makes a cross-sell incomplete (docs/api.md, "List cross-sells", rule 3). */
const requiredCrossSellFields = [
  "product_id",
  "variant_id",
  "title",
  "amount",
  "currency",
  "validity_minutes",
] as const satisfies readonly (keyof CrossSellRecord)[];

/** A complete cross-sell narrowed to the listed shape; null when a required field is missing. */
export function completeCrossSell(record: CrossSellRecord): CrossSell | null {
  return requiredCrossSellFields.every((field) => record[field] !== null) ? (record as CrossSell) : null;
}
