import demo from "../../fixtures/demo.json";

/*
 * The demo fixture (fixtures/demo.json) that `npm run dev` and the e2e server load, as the tests read it:
 * its first store with the token of every ability, and the products the tests look for.
 */

type Demo = typeof demo;

function present<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`fixtures/demo.json: ${what}`);
  return value;
}

/** What the tests look for in a demo document: its first store, that store's token, products and events. */
function partsOf(document: Demo) {
  const events = document.webhook_events;
  return {
    /** The demo's first store, the one its tokens act on. */
    storeId: present(document.stores[0], "a store").id,
    /** The demo's token of every ability (`*`) on its first store. */
    token: present(document.tokens[0], "a token").token,
    /** The demo's first published product. */
    published: present(
      document.products.find((product) => product.status === "published"),
      "a published product",
    ),
    /** The demo's product with a draft overlay. */
    drafted: present(
      document.products.find((product): product is Extract<typeof product, { draft: object }> => "draft" in product),
      "a product with a draft",
    ),
    /** The first store's webhook events, newest first (as GET /webhook-events lists them): their log before any publish. */
    events,
    /** The demo's newest failed event. */
    failedEvent: present(
      events.find((event) => event.status === "failed"),
      "a failed webhook event",
    ),
  };
}

export { demo };

export const {
  storeId: demoStoreId,
  token: demoToken,
  published: demoPublished,
  drafted: demoDrafted,
  events: demoEvents,
  failedEvent: demoFailedEvent,
} = partsOf(demo);

const uuidPattern = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/**
 * The demo fixture under ids and tokens of its own: every UUID in it (stores, products, events, subscriptions)
 * and every token replaced, each the same way wherever it occurs. The worker tests' files share their
 * databases, and more than one loads the demo; a file that asserts what the demo store holds loads this copy,
 * so it sees only what it loaded.
 */
export function demoUnderNewIds() {
  const renamed = new Map<string, string>();
  let text = JSON.stringify(demo).replace(uuidPattern, (id) => {
    const fresh = renamed.get(id) ?? crypto.randomUUID();
    renamed.set(id, fresh);
    return fresh;
  });
  const suffix = crypto.randomUUID().slice(0, 8);
  for (const { token } of demo.tokens) text = text.replaceAll(`"${token}"`, `"${token}-${suffix}"`);
  const document: Demo = JSON.parse(text);
  return { document, ...partsOf(document) };
}
