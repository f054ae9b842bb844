// The bench's store, loaded into every bench server that needs one: fixed ids and a seeded generator, so the
// standalone benches and the full run measure the same rows.

export const BENCH_STORE = "b3e7c1a0-5d2f-4e8b-9a61-7c0d4e2f1b35";
export const BENCH_TOKEN = "bench-token-all-abilities-0001";

/** mulberry32: a small seeded PRNG, so every run loads the same fixture. */
export function seededRandom(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min, max) => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    pick: (items) => items[Math.floor(next() * items.length)],
    chance: (p) => next() < p,
    uuid() {
      const hex = Array.from({ length: 32 }, () => int(0, 15).toString(16));
      hex[12] = "4";
      hex[16] = "89ab"[int(0, 3)];
      const s = hex.join("");
      return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
    },
  };
}

/** Fixed ids, so the standalone benches and the full run measure the same rows. */
export const benchIds = {
  crossSellProduct: "c5a1e2d3-0b4f-4a6c-8d7e-1f2a3b4c5d60",
  publishProduct: "d6b2f3e4-1c5a-4b7d-9e8f-2a3b4c5d6e71",
};

/** Sizes of the publish bench's product (issue 7, item 5) and of the lists of item 1. */
export const benchSizes = {
  crossSells: 25,
  subscriptions: 500,
  publishVariants: 50,
  publishCustomFields: 100,
  publishCrossSells: 20,
};

function crossSell(rng, target, variant, i, label) {
  return {
    id: rng.uuid(),
    product_id: target.id,
    variant_id: variant.id,
    parent_id: null,
    title: `${label} ${i + 1}: ${target.name}`,
    amount: 900 + 100 * i,
    currency: "pln",
    validity_minutes: 15,
    one_purchase: i % 2 === 0,
    send_offer: true,
    active: true,
    button_text: "Dodaj do zamówienia",
    main_description: null,
    description: "Oferta dodana w koszyku, ważna przez kwadrans.",
    discount: null,
  };
}

/**
 * The product publish is measured on (no wall, footer or player, so the project platform is not
 * involved): 50 variants, 100 custom fields and 20 cross-sells live, and a draft overlay of the same
 * size that renames and reprices everything. Loading it again restores the draft a publish consumed.
 */
export function publishProductDocument(targets) {
  const rng = seededRandom(5);
  const field = (i, prefix) => ({
    name: `${prefix}-field-${i + 1}`,
    enabled: i % 10 !== 9,
    order: i,
    label: `Pole ${i + 1}`,
    type: ["text", "tel", "email", "checkbox"][i % 4],
    required: i % 3 === 0,
  });
  const variantIds = Array.from({ length: benchSizes.publishVariants }, () => rng.uuid());
  const variantsOf = (label, amount) =>
    variantIds.map((id, i) => ({
      id,
      name: `${label} ${i + 1}`,
      status: "published",
      amount: amount + 100 * i,
      currency: "pln",
      type: i % 5 === 0 ? "recurring" : "one_time",
      recurring_options: i % 5 === 0 ? { interval: "month", interval_count: 1 } : null,
      custom_fields: null,
    }));
  const crossSellsOf = (label) =>
    Array.from({ length: benchSizes.publishCrossSells }, (_, i) => {
      const target = targets[i % targets.length];
      return crossSell(rng, target, target.variants[i % target.variants.length], i, label);
    });
  return {
    id: benchIds.publishProduct,
    store_id: BENCH_STORE,
    status: "published",
    name: "Bench publish product",
    slug: "bench-publish-product",
    currency: "pln",
    custom_fields: Array.from({ length: benchSizes.publishCustomFields }, (_, i) => field(i, "live")),
    variants: variantsOf("Live variant", 1000),
    cross_sells: crossSellsOf("Live offer"),
    draft: {
      draft_version: 1,
      product: { name: "Bench publish product (draft)", description: "Nowy opis z wersji roboczej." },
      custom_fields: Array.from({ length: benchSizes.publishCustomFields }, (_, i) => field(i, "draft")),
      variants: variantsOf("Draft variant", 2000),
      cross_sells: crossSellsOf("Draft offer"),
    },
  };
}

/**
 * The bench's store: a token with every ability, 5 products of 5 variants that cross-sells point at,
 * a product with 25 cross-sells (one default page), 500 subscriptions, and the publish product.
 */
export function benchFixture() {
  const rng = seededRandom(20261122);
  const targets = Array.from({ length: 5 }, (_, i) => ({
    id: rng.uuid(),
    store_id: BENCH_STORE,
    status: "published",
    name: `Kurs ${i + 1}`,
    slug: `bench-target-${i + 1}`,
    currency: "pln",
    variants: Array.from({ length: 5 }, (_, j) => ({
      id: rng.uuid(),
      name: `Wariant ${j + 1}`,
      amount: 4900 + 1000 * j,
      currency: "pln",
    })),
  }));
  const crossSellProduct = {
    id: benchIds.crossSellProduct,
    store_id: BENCH_STORE,
    status: "published",
    name: "Bench cross-sell product",
    slug: "bench-cross-sell-product",
    currency: "pln",
    variants: [{ id: rng.uuid(), name: "Standard", amount: 19900, currency: "pln" }],
    cross_sells: Array.from({ length: benchSizes.crossSells }, (_, i) => {
      const target = targets[i % targets.length];
      return crossSell(rng, target, target.variants[Math.floor(i / targets.length)], i, "Oferta");
    }),
  };
  const created = Date.parse("2025-01-01T00:00:00Z");
  const subscriptions = Array.from({ length: benchSizes.subscriptions }, (_, i) => {
    const target = targets[i % targets.length];
    const variant = target.variants[i % target.variants.length];
    return {
      id: rng.uuid(),
      store_id: BENCH_STORE,
      customer_id: rng.uuid(),
      customer_name: `Klient ${i + 1}`,
      customer_email: `klient${i + 1}@example.pl`,
      product_id: target.id,
      variant_id: variant.id,
      status: ["active", "active", "active", "canceled", "past_due"][i % 5],
      product_name: target.name,
      variant_name: variant.name,
      recurring_amount: variant.amount,
      currency: "pln",
      interval: "month",
      interval_count: 1,
      created_at: new Date(created + i * 3_600_000).toISOString(),
    };
  });
  return {
    stores: [
      {
        id: BENCH_STORE,
        name: "Bench store",
        plan_active: true,
        upload_limit_bytes: 200_000_000,
        platform: { connected: false },
      },
    ],
    tokens: [{ token: BENCH_TOKEN, store_ids: [BENCH_STORE], abilities: ["*"] }],
    products: [...targets, crossSellProduct, publishProductDocument(targets)],
    subscriptions,
  };
}

/** The part of the fixture a publish consumes: loading it again restores the draft. */
export function publishReloadDocument() {
  const full = benchFixture();
  return { stores: full.stores, products: full.products.filter((product) => product.id === benchIds.publishProduct) };
}

/** Only the store and its token: what a bench of images needs (the full bench fixture takes longer to load). */
export function storeAndTokenFixture() {
  const { stores, tokens } = benchFixture();
  return { stores, tokens };
}

/** The product read of the bench's store (its cross-sell product, 25 cross-sells) and its headers. */
export const productPath = `/products/${benchIds.crossSellProduct}`;
export const bearer = { Authorization: `Bearer ${BENCH_TOKEN}`, "X-Service-Store": BENCH_STORE };
