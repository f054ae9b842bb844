import { and, asc, eq, getTableColumns, inArray, ne } from "drizzle-orm";
import type { Database } from "../db/client";
import { bound, boundList, ReusableQuery, readTogether } from "../db/reusable";
import { customFields, drafts, products, variants } from "../db/schema";
import { ApiError, messages } from "../http/errors";
import { DraftDocument } from "./draft-document";
import type { DraftProduct, Product } from "./resource";
import { draftProductView, liveProductView } from "./serialize";

export type ProductRow = typeof products.$inferSelect;

/**
 * The query for the product with `id` if it belongs to one of the `scope` stores and is not archived
 * (other stores' and archived products are indistinguishable from unknown ones), unexecuted so a read can
 * send it in one batch with what it reads next.
 */
export function productInScope(db: Database, id: string, scope: readonly string[]) {
  const stores = Object.fromEntries(scope.map((storeId, i) => [`store${i}`, storeId]));
  return productInScopeQuery.bind(db, scope.length, { id, ...stores });
}

/** {@link productInScope} by the number of stores in scope (their placeholders: `store0`, `store1`, …). */
const productInScopeQuery = new ReusableQuery(getTableColumns(products), (db, columns, stores: number) =>
  db
    .select(columns)
    .from(products)
    .where(
      and(
        eq(products.id, bound("id", products.id)),
        inArray(
          products.storeId,
          boundList(Array.from({ length: stores }, (_, i) => bound(`store${i}`, products.storeId))),
        ),
        ne(products.status, "archived"),
      ),
    )
    .limit(1),
);

/** The other statements of a product read, keyed by the product's id (placeholder `id`). */
const variantsOfProduct = new ReusableQuery(getTableColumns(variants), (db, columns) =>
  db
    .select(columns)
    .from(variants)
    .where(eq(variants.productId, bound("id", variants.productId)))
    .orderBy(asc(variants.position)),
);
const customFieldsOfProduct = new ReusableQuery(getTableColumns(customFields), (db, columns) =>
  db
    .select(columns)
    .from(customFields)
    .where(eq(customFields.productId, bound("id", customFields.productId))),
);
const hasDraft = new ReusableQuery({ productId: drafts.productId }, (db, columns) =>
  db
    .select(columns)
    .from(drafts)
    .where(eq(drafts.productId, bound("id", drafts.productId))),
);
const draftOfProduct = new ReusableQuery(getTableColumns(drafts), (db, columns) =>
  db
    .select(columns)
    .from(drafts)
    .where(eq(drafts.productId, bound("id", drafts.productId)))
    .limit(1),
);

/** The row of {@link productInScope}, answering 404 with the specification's message when there is none. */
export function foundProduct(rows: ProductRow[], id: string): ProductRow {
  const [product] = rows;
  if (!product) throw new ApiError(404, messages.productNotFound(id));
  return product;
}

/** The product with `id` in `scope`, or null (see {@link productInScope}). */
async function findProduct(db: Database, id: string, scope: readonly string[]): Promise<ProductRow | null> {
  const [product] = await productInScope(db, id, scope).all();
  return product ?? null;
}

/** {@link findProduct}, answering 404 with the specification's message when there is none. */
export async function requireProduct(db: Database, id: string, scope: readonly string[]): Promise<ProductRow> {
  const product = await findProduct(db, id, scope);
  if (!product) throw new ApiError(404, messages.productNotFound(id));
  return product;
}

/**
 * The live Product resource of `id` in `scope`, with its row, read in one round trip: the product's own
 * statement decides whether it exists; the others, keyed by the same id, are discarded when it does not.
 */
export async function readLiveProduct(
  db: Database,
  id: string,
  scope: readonly string[],
): Promise<{ product: ProductRow; resource: Product }> {
  const [productRows, variantRows, fieldRows, draftRows] = await readTogether(db, [
    productInScope(db, id, scope),
    variantsOfProduct.bind(db, null, { id }),
    customFieldsOfProduct.bind(db, null, { id }),
    hasDraft.bind(db, null, { id }),
  ]);
  const product = foundProduct(productRows, id);
  return { product, resource: liveProductView(product, variantRows, fieldRows, draftRows.length > 0) };
}

/**
 * The live product resource of `productId` in `storeId`, or null when it is archived or gone (a 404 to the
 * API): what an event's body holds when a delivery or the fixture loader rebuilds it.
 */
export async function liveProductOrNull(db: Database, storeId: string, productId: string): Promise<Product | null> {
  try {
    return (await readLiveProduct(db, productId, [storeId])).resource;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** The product's overlay with its version, or null when it has none. */
export async function findDraft(db: Database, productId: string) {
  const draft = await db.query.drafts.findFirst({ where: eq(drafts.productId, productId) });
  if (!draft) return null;
  return { ...draft, document: DraftDocument.parse(draft.document) };
}

/** The product `id` in `scope` and its overlay (null when it has none), read in one round trip. */
export async function readProductAndDraft(db: Database, id: string, scope: readonly string[]) {
  const [productRows, draftRows] = await readTogether(db, [
    productInScope(db, id, scope),
    draftOfProduct.bind(db, null, { id }),
  ]);
  const product = foundProduct(productRows, id);
  const [draft] = draftRows;
  return {
    product,
    draft: draft ? { ...draft, document: DraftDocument.parse(draft.document) } : null,
  };
}

/** The draft read of a product in `scope`, or a null draft when it has no overlay; one round trip. */
export async function readDraftProduct(
  db: Database,
  id: string,
  scope: readonly string[],
): Promise<{ product: ProductRow; resource: DraftProduct | null }> {
  const { product, draft } = await readProductAndDraft(db, id, scope);
  return { product, resource: draft ? draftProductView(product, draft.document, draft.draftVersion) : null };
}

/** A variant with its product, if the product is in `scope` and not archived; else null. */
export async function findVariant(db: Database, variantId: string, scope: readonly string[]) {
  const [row] = await db
    .select({ variant: variants, product: products })
    .from(variants)
    .innerJoin(products, eq(products.id, variants.productId))
    .where(and(eq(variants.id, variantId), inArray(products.storeId, [...scope]), ne(products.status, "archived")));
  return row ?? null;
}
