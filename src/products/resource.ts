import { z } from "@hono/zod-openapi";

/*
 * The Product, Variant and custom-field resources of the specification, as zod schemas. The same
 * schemas validate fixture documents (with their defaults filling omitted fields), shape the stored
 * `attributes`, and document the responses in OpenAPI.
 */

const timestamp = z.iso.datetime({ offset: true });
const nullableUnknown = z.unknown().nullable().default(null);

/**
 * A file attached to a product or variant; `download_url` is a signed, expiring link for the store's own
 * private uploads (null when the deployment has no signing secret).
 */
export const FileObject = z
  .object({ name: z.string(), url: z.string(), download_url: z.string().nullable() })
  .openapi("File");

/** A custom checkout field; definition keys beyond name, enabled and order are kept as given. */
export const CustomField = z
  .looseObject({
    name: z.string().min(1).max(200),
    enabled: z.boolean().default(true),
    order: z.number().int().min(0).optional(),
  })
  .openapi("CustomField");
export type CustomField = z.infer<typeof CustomField>;

/** Fields of the specification whose type is "not shown": they appear with the value null. */
const nullOnlyFieldNames = [
  "delegation_label",
  "delivery_service",
  "delivery_options",
  "phone_tooltip",
  "mandatory_consent",
  "optional_consent",
  "digital_consent",
  "newsletter_consent",
  "newsletter_discount",
  "invoice_remarks",
  "vat_rate",
  "gtu_code",
  "flat_rate",
  "exempt_tax_kind",
  "tax_category",
  "dashboard_header",
  "long_description",
  "cta_text",
  "cta_url",
  "contact_phone",
  "contact_website_url",
  "contact_additional_info",
  "qr_code_info",
  "credits",
] as const;
const productOnlyNullFieldNames = ["styles", "settings", "media"] as const;

function nullOnlyFields<const K extends readonly string[]>(names: K) {
  return Object.fromEntries(names.map((name) => [name, nullableUnknown])) as {
    [P in K[number]]: typeof nullableUnknown;
  };
}

const sharedCheckoutFlags = {
  has_shipping: z.boolean().default(false),
  delivery_enabled: z.boolean().default(false),
  delivery_address_optional: z.boolean().default(true),
  shipping_phone_required: z.boolean().default(false),
  newsletter_consent_required: z.boolean().default(false),
};

/** Product resource fields kept in `products.attributes` (everything but the columns). */
export const ProductAttributes = z.object({
  description: z.string().nullable().default(null),
  image_url: z.string().nullable().default(null),
  checkout_url: z.string().nullable().default(null),
  currency: z
    .string()
    .regex(/^[a-z]{3}$/)
    .default("pln"),
  file: FileObject.nullable().default(null),
  files: z.array(FileObject).default([]),
  active_from: timestamp.nullable().default(null),
  active_until: timestamp.nullable().default(null),
  show_active_until_counter: z.boolean().default(false),
  redirect_url: z.string().nullable().default(null),
  redirect_time: z.number().int().nullable().default(null),
  add_redirect_params: z.boolean().default(false),
  webhook_url: z.string().nullable().default(null),
  terms_url: z.string().nullable().default(null),
  policy_url: z.string().nullable().default(null),
  contact_email: z.string().nullable().default(null),
  refund_days: z.number().int().nullable().default(null),
  delegable: z.boolean().default(false),
  show_discount_field: z.boolean().default(false),
  hide_tax_id_field: z.boolean().default(false),
  require_tax_id: z.boolean().default(false),
  photo_zoomable: z.boolean().default(false),
  show_confetti: z.boolean().default(false),
  generate_qr_code: z.boolean().default(false),
  show_delegation: z.boolean().default(false),
  delegable_if_multiple: z.boolean().default(false),
  ...sharedCheckoutFlags,
  footer_text: z.string().default(""),
  waitlist_enabled: z.boolean().default(false),
  waitlist_require_first_name: z.boolean().default(false),
  waitlist_require_last_name: z.boolean().default(false),
  reset_credits: z.boolean().default(false),
  ...nullOnlyFields(nullOnlyFieldNames),
  ...nullOnlyFields(productOnlyNullFieldNames),
});
export type ProductAttributes = z.infer<typeof ProductAttributes>;

const RecurringOptions = z.object({
  interval: z.enum(["day", "week", "month", "year"]),
  interval_count: z.number().int().min(1),
});

/** Variant resource fields kept in `variants.attributes`. */
export const VariantAttributes = z.object({
  type: z.enum(["one_time", "recurring"]).default("one_time"),
  recurring_options: RecurringOptions.nullable().default(null),
  amount: z.number().int().min(0),
  currency: z.string().regex(/^[a-z]{3}$/),
  checkout_url: z.string().nullable().default(null),
  custom_id: z.string().nullable().default(null),
  is_hidden: z.boolean().default(false),
  trial_period_days: z.number().int().nullable().default(null),
  active_cycles: z.number().int().nullable().default(null),
  active_days: z.number().int().nullable().default(null),
  quantity: z.number().int().nullable().default(null),
  cancel_early: z.boolean().default(false),
  keep_access_after_expiring: z.boolean().default(false),
  allow_multiple_subscriptions: z.boolean().default(false),
  has_quantity: z.boolean().default(false),
  show_net_price: z.boolean().default(false),
  old_price: z.number().nullable().default(null),
  active_from: timestamp.nullable().default(null),
  active_until: timestamp.nullable().default(null),
  access_until: nullableUnknown,
  show_active_until_counter: z.boolean().nullable().default(null),
  tax_behavior: z.string().default("exclusive"),
  refund_days: z.number().int().nullable().default(null),
  redirect_time: z.number().int().nullable().default(null),
  redirect_url: z.string().nullable().default(null),
  file: FileObject.nullable().default(null),
  files: z.array(FileObject).default([]),
  ...sharedCheckoutFlags,
  ...nullOnlyFields(nullOnlyFieldNames),
  pay_what_you_want: nullableUnknown,
  purchase_button_text: nullableUnknown,
  upsells: z.array(z.unknown()).default([]),
});
export type VariantAttributes = z.infer<typeof VariantAttributes>;

/** The Variant resource as returned. */
export const Variant = z
  .object({
    id: z.uuid(),
    status: z.string(),
    name: z.string(),
    ...VariantAttributes.shape,
    custom_fields: z.array(CustomField).nullable(),
  })
  .openapi("Variant");
export type Variant = z.infer<typeof Variant>;

/** The Product resource as returned. */
export const Product = z
  .object({
    id: z.uuid(),
    status: z.enum(["draft", "published"]),
    name: z.string(),
    slug: z.string(),
    ...ProductAttributes.shape,
    custom_fields: z.array(CustomField).nullable(),
    waitlist_custom_fields: z.array(CustomField).nullable(),
    variants: z.array(Variant),
    has_draft: z.boolean(),
  })
  .openapi("Product");
export type Product = z.infer<typeof Product>;

/** A draft read: the overlay in the Product shape plus its version. */
export const DraftProduct = Product.extend({ draft_version: z.number().int().min(1) }).openapi("DraftProduct");
export type DraftProduct = z.infer<typeof DraftProduct>;
