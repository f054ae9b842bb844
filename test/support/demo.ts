import demo from "../../fixtures/demo.json";

/*
 * The demo fixture (fixtures/demo.json) that `npm run dev` and the e2e server load, as the tests read it:
 * its first store with the token of every ability, and the products the tests look for.
 */

function present<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`fixtures/demo.json: ${what}`);
  return value;
}

export { demo };

/** The demo's first store, the one its tokens act on. */
export const demoStoreId = present(demo.stores[0], "a store").id;

/** The demo's token of every ability (`*`) on its first store. */
export const demoToken = present(demo.tokens[0], "a token").token;

/** The demo's first published product. */
export const demoPublished = present(
  demo.products.find((product) => product.status === "published"),
  "a published product",
);

/** The demo's product with a draft overlay. */
export const demoDrafted = present(
  demo.products.find((product): product is Extract<typeof product, { draft: object }> => "draft" in product),
  "a product with a draft",
);

/** The demo store's webhook events, newest first (as GET /webhook-events lists them): their log before any publish. */
export const demoEvents = demo.webhook_events;

/** The demo's newest failed event. */
export const demoFailedEvent = present(
  demoEvents.find((event) => event.status === "failed"),
  "a failed webhook event",
);
