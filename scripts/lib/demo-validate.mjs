// Validation of the demo fixture before it is written (scripts/make-demo-fixture.mjs): a rough mirror of
// src/dev/fixture-schema.ts and the loader's reference checks, plus what the demo promises (every status).
import { STORE_ID } from "./demo-ids.mjs";
import { STATUSES } from "./demo-subscriptions.mjs";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;
const EVENT_ID = /^evt_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ABILITIES = new Set([
  "media:write",
  "products:read",
  "products:write",
  "products:publish",
  "subscriptions:read",
  "webhooks:manage",
  "*",
]);

/** The problems found so far, and the checks that add to them. */
function problemList() {
  const problems = [];
  const check = (ok, message) => ok || problems.push(message);
  const unique = (section, ids, pattern = UUID) => {
    const seen = new Set();
    for (const id of ids) {
      check(pattern.test(id), `${section}: ${id} is not a ${pattern === UUID ? "v4 UUID" : "valid id"}`);
      check(!seen.has(id), `${section}: ${id} appears twice`);
      seen.add(id);
    }
  };
  const fieldsOk = (owner, fields) => {
    if (fields == null) return;
    const names = fields.map((field) => field.name);
    check(new Set(names).size === names.length, `${owner}: custom field names repeat`);
  };
  return { problems, check, unique, fieldsOk };
}

function checkStoresAndTokens({ check, unique }, document, storeIds) {
  unique(
    "stores",
    document.stores.map((store) => store.id),
  );
  for (const token of document.tokens) {
    check(/^[\x21-\x7e]{16,512}$/.test(token.token), `token ${token.token}: not printable ASCII of 16+ chars`);
    check(
      token.store_ids.every((id) => storeIds.has(id)),
      `token ${token.token}: unknown store`,
    );
    check(
      token.abilities.every((ability) => ABILITIES.has(ability)),
      `token ${token.token}: unknown ability`,
    );
  }
}

/** Which product each variant id (live or in a draft) belongs to. */
function variantOwners(products) {
  const variantOwner = new Map();
  for (const product of products) for (const variant of product.variants) variantOwner.set(variant.id, product.id);
  for (const product of products) {
    const draftVariants = product.draft?.variants ?? [];
    for (const variant of draftVariants) variantOwner.set(variant.id, variantOwner.get(variant.id) ?? product.id);
  }
  return variantOwner;
}

function checkDraft({ check, fieldsOk }, product) {
  const { draft } = product;
  check(SLUG.test(draft.product.slug ?? product.slug), `draft of ${product.slug}: bad slug`);
  fieldsOk(`draft of ${product.slug}`, draft.custom_fields);
  for (const section of ["fields", "settings", "styles", "media"]) {
    check(draft.based_on[section] >= product.updated_at[section], `draft of ${product.slug}: ${section} is stale`);
  }
}

function checkProducts(list, { products }, storeIds, variantOwner) {
  const { check, unique, fieldsOk } = list;
  unique(
    "products",
    products.map((product) => product.id),
  );
  unique(
    "variants",
    products.flatMap((product) => product.variants.map((variant) => variant.id)),
  );
  unique(
    "cross_sells",
    products.flatMap((product) => product.cross_sells.map((offer) => offer.id)),
  );
  const slugs = new Set();
  for (const product of products) {
    check(storeIds.has(product.store_id), `product ${product.id}: unknown store`);
    check(SLUG.test(product.slug), `product ${product.id}: bad slug ${product.slug}`);
    check(!slugs.has(`${product.store_id}/${product.slug}`), `product ${product.id}: slug taken`);
    slugs.add(`${product.store_id}/${product.slug}`);
    fieldsOk(`product ${product.slug}`, product.custom_fields);
    fieldsOk(`product ${product.slug} waitlist`, product.waitlist_custom_fields);
    for (const variant of [...product.variants, ...(product.draft?.variants ?? [])])
      fieldsOk(`variant ${variant.id}`, variant.custom_fields);
    for (const offer of [...product.cross_sells, ...(product.draft?.cross_sells ?? [])]) {
      check(
        variantOwner.get(offer.variant_id) === offer.product_id,
        `cross-sell ${offer.id}: variant is not of product`,
      );
      check(offer.product_id !== product.id, `cross-sell ${offer.id}: offers its own product`);
    }
    if (product.draft) checkDraft(list, product);
  }
}

function checkSubscriptions({ check, unique }, { subscriptions }, storeIds, variantOwner) {
  unique(
    "subscriptions",
    subscriptions.map((subscription) => subscription.id),
  );
  for (const s of subscriptions) {
    check(storeIds.has(s.store_id), `subscription ${s.id}: unknown store`);
    check(UUID.test(s.customer_id), `subscription ${s.id}: customer id is not a UUID`);
    check(variantOwner.get(s.variant_id) === s.product_id, `subscription ${s.id}: variant is not of product`);
    for (const key of ["created_at", "current_period_end", "cancel_at", "canceled_at"]) {
      check(s[key] === null || RFC3339.test(s[key]), `subscription ${s.id}: ${key} is not RFC 3339`);
    }
    check(s.current_period_end > s.created_at, `subscription ${s.id}: period ends before it was created`);
    check(!s.canceled_at || s.canceled_at > s.created_at, `subscription ${s.id}: canceled before it was created`);
    check(/^sub_[A-Za-z0-9]{14}$/.test(s.remote_id), `subscription ${s.id}: bad remote_id`);
  }
  const firstStoreStatuses = new Set(subscriptions.filter((s) => s.store_id === STORE_ID).map((s) => s.status));
  check(firstStoreStatuses.size === STATUSES.length, "the first store misses a subscription status");
  const seconds = new Map();
  for (const s of subscriptions) seconds.set(s.created_at, (seconds.get(s.created_at) ?? 0) + 1);
  check([...seconds.values()].filter((n) => n > 1).length >= 3, "fewer than three created_at seconds are shared");
}

/**
 * Events as the loader takes them, and in the past: every attempt was made before the load. The demo
 * promises a log with both outcomes, for its own store.
 */
function checkEvents({ check, unique }, { products, webhook_events: events }) {
  unique(
    "webhook_events",
    events.map((event) => event.id),
    EVENT_ID,
  );
  const storeOf = new Map(products.map((product) => [product.id, product.store_id]));
  for (const event of events) {
    const offsets = event.attempt_log.map((attempt) => attempt.after_seconds);
    const last = event.attempt_log.at(-1);
    const ok = last !== undefined && last.response_status >= 200 && last.response_status < 300;
    const next = event.next_attempt_after_seconds;
    check(storeOf.get(event.product_id) === event.store_id, `event ${event.id}: product is not of its store`);
    check(
      offsets.every((offset, i) => i === 0 || offset >= offsets[i - 1]),
      `event ${event.id}: attempts out of order`,
    );
    check((offsets.at(-1) ?? 0) < event.age_seconds, `event ${event.id}: an attempt after the load`);
    // Due long after a load, so the demo shows it pending, even to a long test run, before the sweep sends it.
    check(next === undefined || next > event.age_seconds + 3600, `event ${event.id}: next attempt within the hour`);
    check(ok === (event.status === "delivered"), `event ${event.id}: status does not match the last attempt`);
    check(event.status === "pending" || last !== undefined, `event ${event.id}: no attempt`);
    check(
      (event.status === "pending") === (next !== undefined),
      `event ${event.id}: next attempt of a pending one only`,
    );
    check(next === undefined || next >= (offsets.at(-1) ?? 0), `event ${event.id}: next attempt before the last`);
    check(
      event.attempt_log.every((attempt) => (attempt.response_status === null) !== (attempt.error === null)),
      `event ${event.id}: an attempt has both or neither of response_status and error`,
    );
    check(event.data !== undefined || event.type === "product.published", `event ${event.id}: data is missing`);
  }
  const demoStatuses = new Set(events.filter((event) => event.store_id === STORE_ID).map((event) => event.status));
  for (const status of ["delivered", "failed", "pending"]) {
    check(demoStatuses.has(status), `the first store has no ${status} event`);
  }
}

/** Throws naming every problem of `document` (as it will be written, after a JSON round trip). */
export function validate(document) {
  const list = problemList();
  const storeIds = new Set(document.stores.map((store) => store.id));
  const variantOwner = variantOwners(document.products);
  checkStoresAndTokens(list, document, storeIds);
  checkProducts(list, document, storeIds, variantOwner);
  checkSubscriptions(list, document, storeIds, variantOwner);
  checkEvents(list, document);
  if (list.problems.length > 0) throw new Error(`demo fixture is invalid:\n  ${list.problems.join("\n  ")}`);
}
