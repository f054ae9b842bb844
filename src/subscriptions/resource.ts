import { z } from "@hono/zod-openapi";
import type { subscriptions } from "../db/schema";

/** The subscription states of the specification. */
export const subscriptionStatuses = [
  "active",
  "trialing",
  "past_due",
  "canceled",
  "incomplete",
  "incomplete_expired",
  "unpaid",
] as const;
export type SubscriptionStatus = (typeof subscriptionStatuses)[number];

/**
 * Folds text for a case-insensitive comparison in every script. toLowerCase() alone is not enough:
 * `ß` only meets `SS` through upper case, and a Greek sigma at the end of a query ("ΚΟΣ" lowers to
 * "κος") would miss the same letter inside a word ("κοσμος"), so the final form is unified too.
 */
export function foldCase(text: string): string {
  return text.toUpperCase().toLowerCase().replaceAll("ς", "σ");
}

/** The free-text search key of a subscription: its names folded to lower case in every script. */
export function subscriptionSearchText(names: { customer: string; product: string | null; variant: string | null }) {
  // U+001F (unit separator) cannot be typed into a name, so a match never spans two names.
  return [names.customer, names.product ?? "", names.variant ?? ""].map(foldCase).join(subscriptionSearchSeparator);
}

/** Separates the names inside the search key; a needle containing it can match no single name. */
export const subscriptionSearchSeparator = "\u001f";

const timestamp = z.iso.datetime({ offset: true });

/** The Subscription resource of the specification. */
export const Subscription = z
  .object({
    id: z.uuid(),
    remote_id: z.string().nullable().openapi({ description: "The payment provider's own subscription id" }),
    provider: z.string().openapi({ example: "stripe" }),
    status: z.enum(subscriptionStatuses).nullable(),
    variant_name: z.string().nullable(),
    product_name: z.string().nullable(),
    recurring_amount: z.number().int().nullable().openapi({ description: "Minor currency units" }),
    currency: z.string().nullable().openapi({ description: "Lowercase ISO code", example: "pln" }),
    interval: z.enum(["day", "week", "month", "year"]).nullable(),
    interval_count: z.number().int().nullable().openapi({ description: "Intervals between renewals" }),
    quantity: z.number().int(),
    customer_email: z.string().nullable(),
    current_period_end: timestamp
      .nullable()
      .openapi({ description: "End of the current paid period; the next renewal date when active" }),
    cancel_at: timestamp.nullable().openapi({ description: "When the subscription will end" }),
    canceled_at: timestamp.nullable().openapi({ description: "When cancellation was requested" }),
    created_at: timestamp,
  })
  .openapi("Subscription");
export type Subscription = z.infer<typeof Subscription>;

/** The stored columns the resource is made of (the page query reads only these). */
type SubscriptionRow = Pick<
  typeof subscriptions.$inferSelect,
  | "id"
  | "remoteId"
  | "provider"
  | "status"
  | "variantName"
  | "productName"
  | "recurringAmount"
  | "currency"
  | "interval"
  | "intervalCount"
  | "quantity"
  | "customerEmail"
  | "currentPeriodEnd"
  | "cancelAt"
  | "canceledAt"
  | "createdAt"
>;

const iso = (time: Date | null) => (time ? time.toISOString() : null);

/** A stored subscription as the Subscription resource; timestamps in RFC 3339 UTC. */
export function subscriptionView(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    remote_id: row.remoteId,
    provider: row.provider,
    // Stored values come from the same list (the fixture schema checks them); the cast only narrows the type.
    status: row.status as SubscriptionStatus | null,
    variant_name: row.variantName,
    product_name: row.productName,
    recurring_amount: row.recurringAmount,
    currency: row.currency,
    interval: row.interval as Subscription["interval"],
    interval_count: row.intervalCount,
    quantity: row.quantity,
    customer_email: row.customerEmail,
    current_period_end: iso(row.currentPeriodEnd),
    cancel_at: iso(row.cancelAt),
    canceled_at: iso(row.canceledAt),
    created_at: row.createdAt.toISOString(),
  };
}
