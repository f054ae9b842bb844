import { z } from "zod";
import { webhookEventStatuses, webhookEventTypes } from "../db/schema";
import { isWebhookSecret } from "../events/signing";
import { abilities } from "../http/auth";
import { uuidSource } from "../lib/ids";
import { CrossSellRecord } from "../products/cross-sells/resource";
import { Player } from "../products/draft-document";
import { CustomField, ProductAttributes, VariantAttributes } from "../products/resource";
import { subscriptionStatuses } from "../subscriptions/resource";

/* The fixture document of docs/development.md, "POST /api/v1/_dev/fixtures". Unknown keys are ignored. */

const id = z.uuid().transform((value) => value.toLowerCase());
const time = z.iso.datetime({ offset: true });

const CustomFieldList = z.array(CustomField).superRefine((fields, ctx) => {
  const seen = new Set<string>();
  fields.forEach((field, index) => {
    if (seen.has(field.name))
      ctx.addIssue({ code: "custom", message: "Custom field names must be unique.", path: [index, "name"] });
    seen.add(field.name);
  });
});

const SectionTimes = z.object({
  fields: time.optional(),
  settings: time.optional(),
  styles: time.optional(),
  media: time.optional(),
});

const FixtureStore = z.object({
  id,
  name: z.string().min(1),
  plan_active: z.boolean().default(true),
  upload_limit_bytes: z.number().int().min(1).optional(),
  webhook_secret: z
    .string()
    .refine(isWebhookSecret, { message: "The webhook secret must be whsec_ followed by base64 of 24 or more bytes." })
    .optional(),
  platform: z
    .object({
      connected: z.boolean().default(true),
      projects: z.array(id).default([]),
      courses: z.array(id).default([]),
    })
    .optional(),
});

const FixtureToken = z.object({
  token: z
    .string()
    .min(16)
    .max(512)
    .regex(/^[\x21-\x7e]+$/, "Tokens are printable ASCII without spaces."),
  store_ids: z.array(id).min(1),
  abilities: z.array(z.enum([...abilities, "*"])).min(1),
});

const FixtureVariant = z.object({
  id,
  name: z.string().min(1),
  status: z.string().min(1).default("published"),
  ...VariantAttributes.shape,
  custom_fields: CustomFieldList.nullable().optional(),
});

const slug = z.string().regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, "A slug is lower-case letters, digits and hyphens.");

/**
 * The product fields a draft overlays. Unlike the live product's, they have no defaults: a field the
 * draft leaves out keeps its live value.
 */
const DraftProductFields = z.object({
  name: z.string().min(1).optional(),
  slug: slug.optional(),
  ...(Object.fromEntries(
    Object.entries(ProductAttributes.shape).map(([key, schema]) => [
      key,
      (schema instanceof z.ZodDefault ? schema.removeDefault() : schema).optional(),
    ]),
  ) as unknown as { [K in keyof ProductAttributes]: z.ZodOptional<z.ZodType<ProductAttributes[K]>> }),
});

const FixtureDraft = z.object({
  draft_version: z.number().int().min(1).default(1),
  based_on: SectionTimes.optional(),
  product: DraftProductFields.default({}),
  custom_fields: CustomFieldList.nullable().optional(),
  waitlist_custom_fields: CustomFieldList.nullable().optional(),
  variants: z.array(FixtureVariant).optional(),
  cross_sells: z.array(CrossSellRecord).optional(),
  wall_id: id.nullable().optional(),
  footer_id: id.nullable().optional(),
  player: Player.optional(),
});

const FixtureProduct = z.object({
  id,
  store_id: id,
  status: z.enum(["draft", "published", "archived"]).default("draft"),
  name: z.string().min(1),
  slug,
  ...ProductAttributes.shape,
  custom_fields: CustomFieldList.nullable().default(null),
  waitlist_custom_fields: CustomFieldList.nullable().default(null),
  variants: z.array(FixtureVariant).default([]),
  cross_sells: z.array(CrossSellRecord).default([]),
  wall_id: id.nullable().default(null),
  footer_id: id.nullable().default(null),
  courses: z.array(id).default([]),
  redirect_course_id: id.nullable().default(null),
  updated_at: SectionTimes.default({}),
  draft: FixtureDraft.optional(),
});

const FixtureSubscription = z.object({
  id,
  store_id: id,
  customer_id: id,
  customer_name: z.string().min(1),
  customer_email: z.string().nullable().default(null),
  product_id: id,
  variant_id: id,
  hidden_by_customer: z.boolean().default(false),
  remote_id: z.string().nullable().default(null),
  provider: z.string().default("stripe"),
  status: z.enum(subscriptionStatuses).nullable().default("active"),
  variant_name: z.string().nullable().default(null),
  product_name: z.string().nullable().default(null),
  recurring_amount: z.number().int().nullable().default(null),
  currency: z
    .string()
    .regex(/^[a-z]{3}$/)
    .nullable()
    .default(null),
  interval: z.enum(["day", "week", "month", "year"]).nullable().default(null),
  interval_count: z.number().int().min(1).nullable().default(null),
  quantity: z.number().int().min(1).default(1),
  current_period_end: time.nullable().default(null),
  cancel_at: time.nullable().default(null),
  canceled_at: time.nullable().default(null),
  created_at: time.optional(),
});

/** One line of an event's attempt log, timed from the event's creation (as the retry schedule counts). */
const FixtureAttempt = z
  .object({
    after_seconds: z.number().min(0),
    response_status: z.number().int().min(100).max(599).nullable(),
    error: z.string().min(1).nullable().default(null),
    duration_ms: z.number().int().min(0),
  })
  .refine((attempt) => (attempt.response_status === null) !== (attempt.error === null), {
    message: "An attempt has either a response_status (an answer) or an error (no answer).",
  });

const answeredOk = (status: number | null) => status !== null && status >= 200 && status < 300;

/**
 * An event as the delivery left it after its attempts: delivered (the last answered 2xx), failed, or pending
 * its next attempt (`next_attempt_after_seconds`; nothing enqueues it, the sweep sends it once overdue). Its
 * times are either `created_at` or `age_seconds` before the load (events older than the retention are
 * hidden, so a document loaded again and again keeps its log visible with an age); neither means the load
 * time. Attempts and the next one are timed from the event's creation.
 */
const FixtureWebhookEvent = z
  .object({
    id: z
      .string()
      .regex(new RegExp(`^evt_${uuidSource}$`, "i"), "An event id is evt_ followed by a UUID.")
      .transform((value) => value.toLowerCase()),
    store_id: id,
    product_id: id,
    type: z.enum(webhookEventTypes),
    url: z.url(),
    status: z.enum(webhookEventStatuses),
    /** The body's `data`; left out of a `product.published` event, it is the live product at the load. */
    data: z.record(z.string(), z.unknown()).optional(),
    created_at: time.optional(),
    age_seconds: z.number().min(0).optional(),
    attempt_log: z.array(FixtureAttempt).default([]),
    next_attempt_after_seconds: z.number().min(0).optional(),
  })
  .superRefine((event, ctx) => {
    const issue = (message: string, path: (string | number)[]) => ctx.addIssue({ code: "custom", message, path });
    if (event.created_at !== undefined && event.age_seconds !== undefined)
      issue("Give created_at or age_seconds, not both.", ["age_seconds"]);
    if (event.data === undefined && event.type !== "product.published")
      issue("Only a product.published event may leave its data out.", ["data"]);
    event.attempt_log.forEach((attempt, index) => {
      const before = event.attempt_log[index - 1];
      if (before && attempt.after_seconds < before.after_seconds)
        issue("Attempts are in the order they were made.", ["attempt_log", index, "after_seconds"]);
    });
    const last = event.attempt_log.at(-1);
    if (event.status !== "pending" && !last) issue("A delivered or failed event has an attempt.", ["attempt_log"]);
    if (last && answeredOk(last.response_status) !== (event.status === "delivered"))
      issue("A delivered event's last attempt answered 2xx; a failed or pending one's did not.", ["status"]);
    const next = event.next_attempt_after_seconds;
    if ((event.status === "pending") !== (next !== undefined))
      issue("A pending event, and only one, has its next_attempt_after_seconds.", ["next_attempt_after_seconds"]);
    if (next !== undefined && last && next < last.after_seconds)
      issue("The next attempt comes after the last one.", ["next_attempt_after_seconds"]);
  });

/** The whole fixture document; every section may be omitted. */
export const FixtureDocument = z.object({
  stores: z.array(FixtureStore).default([]),
  tokens: z.array(FixtureToken).default([]),
  products: z.array(FixtureProduct).default([]),
  subscriptions: z.array(FixtureSubscription).default([]),
  webhook_events: z.array(FixtureWebhookEvent).default([]),
});
export type FixtureDocument = z.infer<typeof FixtureDocument>;
export type FixtureProduct = z.infer<typeof FixtureProduct>;
export type FixtureVariant = z.infer<typeof FixtureVariant>;
export type FixtureWebhookEvent = z.infer<typeof FixtureWebhookEvent>;
export type FixtureDocumentInput = z.input<typeof FixtureDocument>;
