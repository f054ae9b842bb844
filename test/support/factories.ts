import { env } from "cloudflare:workers";
import { bindingHomes, homeBinding, homeDb, legacyHome } from "../../src/db/shards";
import { FixtureDocument, type FixtureDocumentInput } from "../../src/dev/fixture-schema";
import { loadFixtures } from "../../src/dev/fixtures";
import { readCache } from "../../src/http/read-cache";

/*
 * Typed fixture factories, one per resource: each takes partial overrides and answers the loader's own
 * input type, so a fixture the loader would refuse (a wrong field, a missing id) is a type error here.
 */

type Input = Required<FixtureDocumentInput>;
export type StoreInput = Input["stores"][number];
export type TokenInput = Input["tokens"][number];
export type ProductInput = Input["products"][number];
export type VariantInput = NonNullable<ProductInput["variants"]>[number];
export type CrossSellInput = NonNullable<ProductInput["cross_sells"]>[number];
/** Overrides of a subscription fixture (see test/support/subscriptions.ts for its factory). */
export type SubscriptionInput = Partial<Input["subscriptions"][number]>;
/** The abilities a fixture token may carry (`*` for all). */
export type TokenAbilities = TokenInput["abilities"];

export const uuid = () => crypto.randomUUID();

/**
 * Loads a fixture document through the same loader the `_dev` route uses. Called behind the Worker's fetch,
 * it then forgets the isolate's kept read answers, as the route's own write does (src/http/read-cache.ts).
 */
export async function seed(document: FixtureDocumentInput) {
  const loaded = await loadFixtures(bindingHomes(env), FixtureDocument.parse(document));
  readCache.forget(null);
  return loaded;
}

/** A store with its own token (abilities `*` unless given); every call makes fresh ids. */
export async function seedStore(options: { store?: Partial<StoreInput>; abilities?: TokenAbilities } = {}) {
  const storeId = options.store?.id ?? uuid();
  const token = `test-token-${uuid()}`;
  await seed({
    stores: [{ name: "Test store", plan_active: true, ...options.store, id: storeId }],
    tokens: [{ token, store_ids: [storeId], abilities: options.abilities ?? ["*"] }],
  });
  return { storeId, token };
}

/** Another token for existing stores. */
export async function seedToken(storeIds: string[], abilities: TokenAbilities = ["*"]) {
  const token = `test-token-${uuid()}`;
  await seed({ tokens: [{ token, store_ids: storeIds, abilities }] });
  return token;
}

/** Custom-field definitions named `names`, enabled, numbered 0..n-1 in that order (as the API lists them). */
export function customFields(...names: string[]) {
  return names.map((name, order) => ({ name, enabled: true, order }));
}

/** A variant fixture with a fresh id. */
export function variantInput(overrides: Partial<VariantInput> = {}): VariantInput {
  return { id: uuid(), name: "Lifetime access", amount: 19900, currency: "pln", ...overrides };
}

/** A product fixture of `storeId` with one variant, unique slug and fresh ids. */
export function productInput(storeId: string, overrides: Partial<ProductInput> = {}): ProductInput {
  const id = overrides.id ?? uuid();
  return {
    store_id: storeId,
    status: "published",
    name: "Kurs fotografii",
    slug: `kurs-${id.slice(0, 8)}`,
    variants: [variantInput()],
    ...overrides,
    id,
  };
}

/** Seeds one product and returns its fixture input (ids included). */
export async function seedProduct(storeId: string, overrides: Partial<ProductInput> = {}) {
  const product = productInput(storeId, overrides);
  await seed({ products: [product] });
  return product;
}

/** The home database (its binding name) of a seeded store, from the directory: `DB` for a store without an entry. */
export async function storeHome(storeId: string): Promise<string> {
  const row = await env.DB.prepare("SELECT shard FROM store_directory WHERE store_id = ?")
    .bind(storeId)
    .first<{ shard: string }>();
  return row?.shard ?? legacyHome;
}

/** The D1 binding of a seeded store's home: where its products, subscriptions and events are. */
export async function storeD1(storeId: string): Promise<D1Database> {
  return homeBinding(env, await storeHome(storeId));
}

/** Drizzle over a seeded store's home. */
export async function storeDb(storeId: string) {
  return homeDb(env, await storeHome(storeId));
}
