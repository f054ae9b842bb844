import { type SubscriptionInput, seed, uuid } from "./factories";
import { api } from "./http";

/** A list response as the tests read it. */
export type SubscriptionList = {
  items: Record<string, unknown>[];
  pagination: { current_page: number; total_pages: number; per_page: number; total: number };
};

/** A subscription fixture of `storeId` with fresh ids; `overrides` win. */
export function subscriptionInput(storeId: string, overrides: SubscriptionInput = {}) {
  return {
    id: uuid(),
    store_id: storeId,
    customer_id: uuid(),
    customer_name: "Anna Nowak",
    product_id: uuid(),
    variant_id: uuid(),
    created_at: "2026-03-01T10:00:00.000Z",
    ...overrides,
  } satisfies SubscriptionInput;
}

/** Seeds subscriptions of `storeId` and returns their fixture inputs (ids included), in the given order. */
export async function seedSubscriptions(storeId: string, overrides: SubscriptionInput[]) {
  const inputs = overrides.map((override) => subscriptionInput(storeId, override));
  await seed({ subscriptions: inputs });
  return inputs;
}

/** `n` creation times a minute apart from `start`, oldest first. */
export function minutesApart(n: number, start = "2026-03-01T10:00:00.000Z") {
  return Array.from({ length: n }, (_, i) => new Date(Date.parse(start) + i * 60_000).toISOString());
}

/** A query string from pairs, so repeated parameters and odd characters are encoded as a client would. */
export function queryString(params: Record<string, string> | [string, string][]) {
  const search = new URLSearchParams(params).toString();
  return search ? `?${search}` : "";
}

/** GET /subscriptions with `params`. */
export function listSubscriptions(
  token: string,
  params: Record<string, string> | [string, string][] = {},
  options: { store?: string } = {},
) {
  return api(`/subscriptions${queryString(params)}`, { token, store: options.store });
}
