import { and, asc, eq, inArray, ne } from "drizzle-orm";
import type { Database } from "../db/client";
import { customFields, drafts, products, variants } from "../db/schema";
import { ApiError, messages } from "../http/errors";
import { DraftDocument } from "./draft-document";
import type { DraftProduct, Product } from "./resource";
import { draftProductView, liveProductView } from "./serialize";

export type ProductRow = typeof products.$inferSelect;

/**
 * The product with `id` if it belongs to one of the `scope` stores and is not archived; other
 * stores' and archived products are indistinguishable from unknown ones.
 */
export async function findProduct(db: Database, id: string, scope: readonly string[]): Promise<ProductRow | null> {
  const product = await db.query.products.findFirst({
    where: and(eq(products.id, id), inArray(products.storeId, [...scope]), ne(products.status, "archived")),
  });
  return product ?? null;
}

/** {@link findProduct}, answering 404 with the specification's message when there is none. */
export async function requireProduct(db: Database, id: string, scope: readonly string[]): Promise<ProductRow> {
  const product = await findProduct(db, id, scope);
  if (!product) throw new ApiError(404, messages.productNotFound(id));
  return product;
}

/** The Product resource of a live product, read in one round trip. */
export async function readLiveProduct(db: Database, product: ProductRow): Promise<Product> {
  const [variantRows, fieldRows, draftRows] = await db.batch([
    db.select().from(variants).where(eq(variants.productId, product.id)).orderBy(asc(variants.position)),
    db.select().from(customFields).where(eq(customFields.productId, product.id)),
    db.select({ productId: drafts.productId }).from(drafts).where(eq(drafts.productId, product.id)),
  ]);
  return liveProductView(product, variantRows, fieldRows, draftRows.length > 0);
}

/** The product's overlay with its version, or null when it has none. */
export async function findDraft(db: Database, productId: string) {
  const draft = await db.query.drafts.findFirst({ where: eq(drafts.productId, productId) });
  if (!draft) return null;
  return { ...draft, document: DraftDocument.parse(draft.document) };
}

/** The draft read of a product, or null when it has no overlay. */
export async function readDraftProduct(db: Database, product: ProductRow): Promise<DraftProduct | null> {
  const draft = await findDraft(db, product.id);
  return draft ? draftProductView(product, draft.document, draft.draftVersion) : null;
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
