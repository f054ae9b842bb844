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

/** The free-text search key of a subscription: its names folded to lower case in every script. */
export function subscriptionSearchText(names: { customer: string; product: string | null; variant: string | null }) {
  // U+001F (unit separator) cannot be typed into a name, so a match never spans two names.
  return [names.customer, names.product ?? "", names.variant ?? ""].map((name) => name.toLowerCase()).join("\u001f");
}
