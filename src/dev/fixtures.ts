import { count, eq, inArray } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { insertStatements, isUniqueViolation, runAtomically, upsertStatements } from "../db/batch";
import type { Database } from "../db/client";
import {
  apiTokens,
  devPlatformAccounts,
  drafts,
  productCourses,
  products,
  storeDirectory,
  stores,
  subscriptions,
  webhookSecrets,
} from "../db/schema";
import { type Homes, legacyHome } from "../db/shards";
import { type FieldErrors, validationError } from "../http/errors";
import { sha256Hex } from "../lib/crypto";
import type { DraftDocument, DraftVariant, StoredCustomField } from "../products/draft-document";
import { replaceProductContent } from "../products/persist";
import { type CustomField, ProductAttributes, VariantAttributes } from "../products/resource";
import { subscriptionSearchText } from "../subscriptions/resource";
import { eventStatements, fillPublishedBodies } from "./fixture-events";
import type { FixtureDocument, FixtureProduct, FixtureVariant } from "./fixture-schema";

const epoch = new Date(0);
const productAttributeKeys = Object.keys(ProductAttributes.shape) as (keyof ProductAttributes)[];
const variantAttributeKeys = Object.keys(VariantAttributes.shape);

function pick(source: Record<string, unknown>, keys: readonly string[]) {
  return Object.fromEntries(keys.filter((key) => key in source).map((key) => [key, source[key]]));
}

/** Custom fields in their given order (explicit `order` first, then position), renumbered 0..n-1. */
function orderFields(fields: readonly CustomField[]): StoredCustomField[] {
  return fields
    .map((field, index) => ({ field, rank: field.order ?? Number.MAX_SAFE_INTEGER, index }))
    .sort((a, b) => a.rank - b.rank || a.index - b.index)
    .map(({ field }, order) => ({ ...field, enabled: field.enabled ?? true, order }));
}

function orderedOrNull(fields: readonly CustomField[] | null | undefined) {
  return fields ? orderFields(fields) : null;
}

function draftVariant(variant: FixtureVariant): DraftVariant {
  return {
    id: variant.id,
    status: variant.status,
    name: variant.name,
    attributes: VariantAttributes.parse(pick(variant, variantAttributeKeys)),
    custom_fields: orderedOrNull(variant.custom_fields),
  };
}

function sectionTime(value: string | undefined, fallback: Date) {
  return value ? new Date(value) : fallback;
}

/** The complete overlay document of a fixture product's draft: live values where the draft is silent. */
function draftDocument(product: FixtureProduct, draft: NonNullable<FixtureProduct["draft"]>): DraftDocument {
  const liveAttributes = ProductAttributes.parse(pick(product, productAttributeKeys));
  return {
    product: {
      name: draft.product.name ?? product.name,
      slug: draft.product.slug ?? product.slug,
      attributes: ProductAttributes.parse({ ...liveAttributes, ...pick(draft.product, productAttributeKeys) }),
    },
    custom_fields:
      draft.custom_fields !== undefined ? orderedOrNull(draft.custom_fields) : orderedOrNull(product.custom_fields),
    waitlist_custom_fields:
      draft.waitlist_custom_fields !== undefined
        ? orderedOrNull(draft.waitlist_custom_fields)
        : orderedOrNull(product.waitlist_custom_fields),
    variants: (draft.variants ?? product.variants).map(draftVariant),
    cross_sells: draft.cross_sells ?? product.cross_sells,
    wall_id: draft.wall_id !== undefined ? draft.wall_id : product.wall_id,
    footer_id: draft.footer_id !== undefined ? draft.footer_id : product.footer_id,
    player: draft.player ?? null,
  };
}

/** Cross-references the schema alone cannot check: stores named by products, tokens and subscriptions. */
function referenceErrors(document: FixtureDocument, stored: ReadonlySet<string>): FieldErrors {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => {
    errors[field] = [...(errors[field] ?? []), message];
  };
  const known = new Set([...document.stores.map((store) => store.id), ...stored]);
  const unknownStore = "The store does not exist.";
  document.tokens.forEach((token, i) => {
    token.store_ids.forEach((storeId, j) => {
      if (!known.has(storeId)) add(`tokens.${i}.store_ids.${j}`, unknownStore);
    });
  });
  document.products.forEach((product, i) => {
    if (!known.has(product.store_id)) add(`products.${i}.store_id`, unknownStore);
  });
  document.subscriptions.forEach((subscription, i) => {
    if (!known.has(subscription.store_id)) add(`subscriptions.${i}.store_id`, unknownStore);
  });
  document.webhook_events.forEach((event, i) => {
    if (!known.has(event.store_id)) add(`webhook_events.${i}.store_id`, unknownStore);
  });

  const slugs = new Map<string, number>();
  document.products.forEach((product, i) => {
    const key = `${product.store_id}/${product.slug}`;
    if (slugs.has(key)) add(`products.${i}.slug`, "The slug is already used by another product of the store.");
    slugs.set(key, i);
  });
  for (const [section, items] of Object.entries({
    stores: document.stores,
    products: document.products,
    subscriptions: document.subscriptions,
    webhook_events: document.webhook_events,
  })) {
    const ids = new Set<string>();
    items.forEach((item, i) => {
      if (ids.has(item.id)) add(`${section}.${i}.id`, "The id appears twice in the document.");
      ids.add(item.id);
    });
  }
  return errors;
}

type LoadedCounts = {
  stores: number;
  tokens: number;
  products: number;
  cross_sells: number;
  subscriptions: number;
};

/**
 * Every store the document names: its own stores and those its tokens, products, subscriptions and webhook
 * events refer to.
 */
function namedStores(document: FixtureDocument): string[] {
  return [
    ...new Set([
      ...document.stores.map((store) => store.id),
      ...document.tokens.flatMap((token) => token.store_ids),
      ...document.products.map((product) => product.store_id),
      ...document.subscriptions.map((subscription) => subscription.store_id),
      ...document.webhook_events.map((event) => event.store_id),
    ]),
  ];
}

/**
 * The home database of every store the document names, from the directory in one read of the global
 * database, which also answers which named stores exist. A store the directory does not know yet is placed
 * on the shard with the fewest stores (ties: the lowest n), so consecutive new stores alternate between
 * the shards; without shards, and for an existing store without an entry, the home is `DB`.
 */
async function placeStores(homes: Homes, document: FixtureDocument, now: Date) {
  const global = homes.global();
  const named = namedStores(document);
  // D1 binds at most 100 parameters per statement: the ids are asked in parts, all in one batch.
  const parts: string[][] = [];
  for (let i = 0; i < named.length; i += 90) parts.push(named.slice(i, i + 90));
  const [countRows, ...answers] = await global.batch([
    global.select({ shard: storeDirectory.shard, stores: count() }).from(storeDirectory).groupBy(storeDirectory.shard),
    ...parts.map((ids) =>
      global
        .select({ id: stores.id, shard: storeDirectory.shard })
        .from(stores)
        .leftJoin(storeDirectory, eq(storeDirectory.storeId, stores.id))
        .where(inArray(stores.id, ids)),
    ),
  ]);
  const rows = answers.flat();
  const stored = new Set(rows.map((row) => row.id));
  const home = new Map(rows.flatMap((row) => (row.shard ? [[row.id, row.shard] as const] : [])));
  const load = new Map(homes.shards.map((shard) => [shard, 0]));
  for (const row of countRows) if (load.has(row.shard)) load.set(row.shard, row.stores);
  const placed: (typeof storeDirectory.$inferInsert)[] = [];
  for (const storeId of named) {
    if (home.has(storeId)) continue;
    if (stored.has(storeId) || load.size === 0) {
      home.set(storeId, legacyHome);
      continue;
    }
    const [shard] = [...load].reduce((least, entry) => (entry[1] < least[1] ? entry : least));
    load.set(shard, (load.get(shard) ?? 0) + 1);
    home.set(storeId, shard);
    placed.push({ storeId, shard, version: 1, placedAt: now });
  }
  return { stored, homeOf: (storeId: string) => home.get(storeId) ?? legacyHome, placed };
}

/** Runs a batch, turning a conflict with stored data into the loader's 422. */
async function runFixtureBatch(db: Database, statements: BatchItem<"sqlite">[]) {
  try {
    await runAtomically(db, statements);
  } catch (error) {
    // A slug or variant id held by a product outside the document surfaces as a constraint failure.
    if (isUniqueViolation(error, "products.store_id, products.slug")) {
      throw validationError({ products: ["A slug is already used by another product of the store."] });
    }
    if (isUniqueViolation(error)) {
      throw validationError({ products: ["The document conflicts with stored data."] });
    }
    throw error;
  }
}

/**
 * Loads a fixture document: upserts every entity by id and replaces a product's variants, fields,
 * cross-sells, courses and draft. Throws a 422 and writes nothing when the document's references do not hold.
 *
 * Stores, tokens, the directory and the fake platform's accounts go to the global database; each store's
 * own rows (its home copy of the store row, secret, products, subscriptions, webhook events) to its home
 * (docs/scaling.md). Each database's part is one atomic batch; the homes are written first, the global
 * database last, so a document refused by a home (a slug held by a product outside it) publishes no store
 * or token. A document whose stores live in several homes is atomic per home only. Last, the
 * `product.published` events given without `data` get their body from the product as loaded
 * (fixture-events.ts).
 */
export async function loadFixtures(homes: Homes, document: FixtureDocument, now = new Date()): Promise<LoadedCounts> {
  const { stored, homeOf, placed } = await placeStores(homes, document, now);
  const errors = referenceErrors(document, stored);
  if (Object.keys(errors).length > 0) throw validationError(errors);

  const global = homes.global();
  const globalStatements: BatchItem<"sqlite">[] = [...globalStoreStatements(global, document.stores, now)];
  globalStatements.push(...insertStatements(global, storeDirectory, placed));
  const tokenRows = await Promise.all(
    document.tokens.map(async (token) => ({
      tokenHash: await sha256Hex(token.token),
      storeIds: [...new Set(token.store_ids)],
      abilities: [...new Set(token.abilities)],
      createdAt: now,
    })),
  );
  globalStatements.push(...upsertStatements(global, apiTokens, apiTokens.tokenHash, tokenRows));

  // Each home's statements, in document order; DB's go into the global batch (the same database).
  const byHome = new Map<string, BatchItem<"sqlite">[]>();
  const add = (storeId: string, make: (db: Database) => BatchItem<"sqlite">[]) => {
    const home = homeOf(storeId);
    if (home === legacyHome) return globalStatements.push(...make(global));
    byHome.set(home, [...(byHome.get(home) ?? []), ...make(homes.home(home))]);
  };
  for (const store of document.stores) {
    add(store.id, (db) => [
      ...(homeOf(store.id) === legacyHome ? [] : upsertStatements(db, stores, stores.id, [storeRow(store, now)])),
      ...secretStatements(db, store, now),
    ]);
  }
  for (const product of document.products) add(product.store_id, (db) => productStatements(db, product, now));
  // Subscriptions by store, so each store's go in multi-row statements.
  const subscriptionsByStore = Map.groupBy(document.subscriptions, (subscription) => subscription.store_id);
  for (const [storeId, list] of subscriptionsByStore) add(storeId, (db) => subscriptionStatements(db, list, now));
  const eventsByStore = Map.groupBy(document.webhook_events, (event) => event.store_id);
  for (const [storeId, list] of eventsByStore) add(storeId, (db) => eventStatements(db, list, now));

  await Promise.all([...byHome].map(([home, statements]) => runFixtureBatch(homes.home(home), statements)));
  await runFixtureBatch(global, globalStatements);
  await fillPublishedBodies((storeId) => homes.home(homeOf(storeId)), document.webhook_events, now);

  return {
    stores: document.stores.length,
    tokens: document.tokens.length,
    products: document.products.length,
    cross_sells: document.products.reduce((sum, product) => sum + product.cross_sells.length, 0),
    subscriptions: document.subscriptions.length,
  };
}

function storeRow(store: FixtureDocument["stores"][number], now: Date): typeof stores.$inferInsert {
  return {
    id: store.id,
    name: store.name,
    planActive: store.plan_active,
    uploadLimitBytes: store.upload_limit_bytes ?? null,
    createdAt: now,
  };
}

/** A store's rows in the global database: the store and its development platform account. */
function globalStoreStatements(db: Database, storeList: FixtureDocument["stores"], now: Date): BatchItem<"sqlite">[] {
  return [
    ...upsertStatements(
      db,
      stores,
      stores.id,
      storeList.map((store) => storeRow(store, now)),
    ),
    ...upsertStatements(
      db,
      devPlatformAccounts,
      devPlatformAccounts.storeId,
      storeList.map((store) => ({
        storeId: store.id,
        connected: store.platform?.connected ?? true,
        projects: store.platform?.projects ?? [],
        courses: store.platform?.courses ?? [],
        updatedAt: now,
      })),
    ),
  ];
}

/** The store's webhook secret, when the document gives one (in the store's home). */
function secretStatements(db: Database, store: FixtureDocument["stores"][number], now: Date): BatchItem<"sqlite">[] {
  if (!store.webhook_secret) return [];
  return upsertStatements(db, webhookSecrets, webhookSecrets.storeId, [
    { storeId: store.id, secret: store.webhook_secret, previousSecret: null, previousUntil: null, createdAt: now },
  ]);
}

function subscriptionStatements(
  db: Database,
  subscriptionList: FixtureDocument["subscriptions"],
  now: Date,
): BatchItem<"sqlite">[] {
  return [
    ...upsertStatements(
      db,
      subscriptions,
      subscriptions.id,
      subscriptionList.map((s) => ({
        id: s.id,
        storeId: s.store_id,
        customerId: s.customer_id,
        customerName: s.customer_name,
        customerEmail: s.customer_email,
        customerEmailKey: s.customer_email?.toLowerCase() ?? null,
        productId: s.product_id,
        variantId: s.variant_id,
        hiddenByCustomer: s.hidden_by_customer,
        remoteId: s.remote_id,
        provider: s.provider,
        status: s.status,
        variantName: s.variant_name,
        productName: s.product_name,
        recurringAmount: s.recurring_amount,
        currency: s.currency,
        interval: s.interval,
        intervalCount: s.interval_count,
        quantity: s.quantity,
        currentPeriodEnd: s.current_period_end ? new Date(s.current_period_end) : null,
        cancelAt: s.cancel_at ? new Date(s.cancel_at) : null,
        canceledAt: s.canceled_at ? new Date(s.canceled_at) : null,
        createdAt: s.created_at ? new Date(s.created_at) : now,
        searchText: subscriptionSearchText({
          customer: s.customer_name,
          product: s.product_name,
          variant: s.variant_name,
        }),
      })),
    ),
  ];
}

function productStatements(db: Database, product: FixtureProduct, now: Date): BatchItem<"sqlite">[] {
  const times = {
    fieldsUpdatedAt: sectionTime(product.updated_at.fields, epoch),
    settingsUpdatedAt: sectionTime(product.updated_at.settings, epoch),
    stylesUpdatedAt: sectionTime(product.updated_at.styles, epoch),
    mediaUpdatedAt: sectionTime(product.updated_at.media, epoch),
  };
  const productFields = orderedOrNull(product.custom_fields);
  const waitlistFields = orderedOrNull(product.waitlist_custom_fields);
  const variantList = product.variants.map(draftVariant);

  const statements: BatchItem<"sqlite">[] = [
    ...upsertStatements(db, products, products.id, [
      {
        id: product.id,
        storeId: product.store_id,
        status: product.status,
        name: product.name,
        slug: product.slug,
        attributes: ProductAttributes.parse(pick(product, productAttributeKeys)),
        customFieldsDefined: productFields !== null,
        waitlistCustomFieldsDefined: waitlistFields !== null,
        wallId: product.wall_id,
        footerId: product.footer_id,
        redirectCourseId: product.redirect_course_id,
        ...times,
        createdAt: now,
      },
    ]),
    db.delete(productCourses).where(eq(productCourses.productId, product.id)),
    db.delete(drafts).where(eq(drafts.productId, product.id)),
  ];
  statements.push(
    ...replaceProductContent(db, product.id, {
      customFields: productFields,
      waitlistCustomFields: waitlistFields,
      variants: variantList,
      crossSells: product.cross_sells,
    }),
    ...insertStatements(
      db,
      productCourses,
      [...new Set(product.courses)].map((courseId) => ({ productId: product.id, courseId })),
    ),
  );
  if (product.draft) {
    const basedOn = product.draft.based_on ?? {};
    statements.push(
      db.insert(drafts).values({
        productId: product.id,
        draftVersion: product.draft.draft_version,
        document: draftDocument(product, product.draft),
        fieldsBasedOn: sectionTime(basedOn.fields, times.fieldsUpdatedAt),
        settingsBasedOn: sectionTime(basedOn.settings, times.settingsUpdatedAt),
        stylesBasedOn: sectionTime(basedOn.styles, times.stylesUpdatedAt),
        mediaBasedOn: sectionTime(basedOn.media, times.mediaUpdatedAt),
        createdAt: now,
      }),
    );
  }
  return statements;
}
