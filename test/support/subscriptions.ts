import { expect } from "vitest";
import { type SubscriptionInput, seed, uuid } from "./factories";
import { api, expectJson } from "./http";

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

/**
 * The ids GET /subscriptions answers for `params` (100 a page), sorted, after checking the 200 and that the
 * total counts the same rows the page holds.
 */
export async function matchingIds(token: string, params: Record<string, string>) {
  const response = await listSubscriptions(token, { per_page: "100", ...params });
  const body = await expectJson<SubscriptionList>(response, 200, JSON.stringify(params));
  expect(body.pagination.total, "total counts the same rows the page holds").toBe(body.items.length);
  return body.items.map((item) => item.id as string).sort();
}

/** The ids of `subscriptions`, sorted, as {@link matchingIds} answers them. */
export const idsOf = (...subscriptions: ({ id: string } | undefined)[]) => subscriptions.map((s) => s?.id).sort();

/** The query `filters` without the parameters `names`. */
export function omit<F extends Record<string, string>>(filters: F, ...names: (keyof F & string)[]) {
  return Object.fromEntries(Object.entries(filters).filter(([name]) => !names.some((omitted) => omitted === name)));
}
