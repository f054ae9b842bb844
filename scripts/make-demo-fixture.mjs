// Generates fixtures/demo.json: the demo document loaded by `npm run dev` and the e2e tests through
// POST /api/v1/_dev/fixtures (format: docs/development.md, "POST /api/v1/_dev/fixtures").
//
//   node scripts/make-demo-fixture.mjs
//
// The output is deterministic: every random choice comes from seeded PRNGs and "now" is fixed, so
// re-running the script yields a byte-identical file and diffs of demo.json stay reviewable. (The webhook
// events alone are timed by their age at the load, so the event log shows them whenever the demo runs.)
// Plain Node, no dependencies, so it runs before `npm install` too. Its parts are in scripts/lib/demo-*.mjs.
import { mkdir, writeFile } from "node:fs/promises";
import { buildCustomers, FEATURED_CUSTOMERS } from "./lib/demo-customers.mjs";
import { buildWebhookEvents } from "./lib/demo-events.mjs";
import { PRODUCT_IDS, SECOND_STORE_ID, STORE_ID, VARIANT_IDS } from "./lib/demo-ids.mjs";
import { buildProducts } from "./lib/demo-products.mjs";
import { randomSource } from "./lib/demo-random.mjs";
import { buildStores, buildTokens } from "./lib/demo-stores.mjs";
import { buildSubscriptions, planOf, remoteIdFactory, STATUS_WEIGHTS } from "./lib/demo-subscriptions.mjs";
import { validate } from "./lib/demo-validate.mjs";

const OUTPUT = new URL("../fixtures/demo.json", import.meta.url);

function buildDocument() {
  const products = buildProducts();
  const nextRemoteId = remoteIdFactory(randomSource("remote-ids"));

  const firstRandom = randomSource("subscriptions:akademia");
  const firstCustomers = buildCustomers(randomSource("customers:akademia"), 240, FEATURED_CUSTOMERS);
  const first = buildSubscriptions(firstRandom, {
    storeId: STORE_ID,
    count: 300,
    plans: [
      planOf(products, PRODUCT_IDS.club, VARIANT_IDS.clubMonthly, 7),
      planOf(products, PRODUCT_IDS.club, VARIANT_IDS.clubYearly, 3),
    ],
    customers: firstCustomers,
    featuredCount: FEATURED_CUSTOMERS.length,
    statusWeights: STATUS_WEIGHTS,
    nextRemoteId,
  });

  const secondCustomers = buildCustomers(randomSource("customers:sklep-drugi"), 34);
  const second = buildSubscriptions(randomSource("subscriptions:sklep-drugi"), {
    storeId: SECOND_STORE_ID,
    count: 40,
    plans: [planOf(products, PRODUCT_IDS.secondStoreTemplates, VARIANT_IDS.secondStoreMonthly, 1)],
    customers: secondCustomers,
    featuredCount: 0,
    statusWeights: { active: 70, past_due: 8, canceled: 18, unpaid: 4 },
    nextRemoteId,
  });

  return {
    stores: buildStores(),
    tokens: buildTokens(),
    products,
    subscriptions: [...first, ...second],
    webhook_events: buildWebhookEvents(randomSource("webhook-events")),
  };
}

const document = buildDocument();
const json = `${JSON.stringify(document, null, 2)}\n`;
// Validate what will be written (after a JSON round trip), not the in-memory objects.
validate(JSON.parse(json));

await mkdir(new URL(".", OUTPUT), { recursive: true });
await writeFile(OUTPUT, json);

const perStore = (storeId) => document.subscriptions.filter((s) => s.store_id === storeId).length;
console.log(
  `wrote fixtures/demo.json: ${document.stores.length} stores, ${document.tokens.length} tokens, ` +
    `${document.products.length} products, ` +
    `${document.products.reduce((sum, product) => sum + product.variants.length, 0)} variants, ` +
    `${document.products.reduce((sum, product) => sum + product.cross_sells.length, 0)} cross-sells, ` +
    `${document.products.filter((product) => product.draft).length} draft, ` +
    `${document.subscriptions.length} subscriptions (${perStore(STORE_ID)} + ${perStore(SECOND_STORE_ID)}), ` +
    `${document.webhook_events.length} webhook events`,
);
