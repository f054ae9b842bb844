import { env } from "cloudflare:workers";
import { createDb } from "../../src/db/client";
import { FixtureDocument, type FixtureDocumentInput } from "../../src/dev/fixture-schema";
import { loadFixtures } from "../../src/dev/fixtures";

type Input = Required<FixtureDocumentInput>;
export type StoreInput = Partial<Input["stores"][number]>;
export type ProductInput = Partial<Input["products"][number]>;
export type VariantInput = Partial<NonNullable<Input["products"][number]["variants"]>[number]>;
export type SubscriptionInput = Partial<Input["subscriptions"][number]>;

export const uuid = () => crypto.randomUUID();

/** Loads a fixture document through the same loader the `_dev` route uses. */
export async function seed(document: FixtureDocumentInput) {
  return loadFixtures(createDb(env.DB), FixtureDocument.parse(document));
}

/** A store with its own token (abilities `*` unless given); every call makes fresh ids. */
export async function seedStore(options: { store?: StoreInput; abilities?: string[] } = {}) {
  const storeId = options.store?.id ?? uuid();
  const token = `test-token-${uuid()}`;
  await seed({
    stores: [{ name: "Test store", plan_active: true, ...options.store, id: storeId }],
    tokens: [{ token, store_ids: [storeId], abilities: (options.abilities ?? ["*"]) as never }],
  });
  return { storeId, token };
}

/** Another token for existing stores. */
export async function seedToken(storeIds: string[], abilities: string[] = ["*"]) {
  const token = `test-token-${uuid()}`;
  await seed({ tokens: [{ token, store_ids: storeIds, abilities: abilities as never }] });
  return token;
}

export function variantInput(overrides: VariantInput = {}): VariantInput {
  return { id: uuid(), name: "Lifetime access", amount: 19900, currency: "pln", ...overrides };
}

/** A product fixture of `storeId` with one variant, unique slug and fresh ids. */
export function productInput(storeId: string, overrides: ProductInput = {}): ProductInput & { id: string } {
  const id = overrides.id ?? uuid();
  return {
    store_id: storeId,
    status: "published",
    name: "Kurs fotografii",
    slug: `kurs-${id.slice(0, 8)}`,
    variants: [variantInput() as never],
    ...overrides,
    id,
  };
}

/** Seeds one product and returns its fixture input (ids included). */
export async function seedProduct(storeId: string, overrides: ProductInput = {}) {
  const product = productInput(storeId, overrides);
  await seed({ products: [product as never] });
  return product;
}
