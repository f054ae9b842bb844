import { and, asc, count, eq, getTableColumns, isNotNull, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { bound, computed, ReusableQuery } from "../../db/reusable";
import { crossSells } from "../../db/schema";
import { type CrossSell, type CrossSellRecord, completeCrossSell } from "./resource";

type CrossSellPage = { items: CrossSell[]; total: number };

const complete = and(
  isNotNull(crossSells.productId),
  isNotNull(crossSells.variantId),
  isNotNull(crossSells.title),
  isNotNull(crossSells.amount),
  isNotNull(crossSells.currency),
  isNotNull(crossSells.validityMinutes),
);

/**
 * The two statements of one page of a product's complete live cross-sells in display order and their
 * count, unexecuted, so the route sends them in one batch with the product's own lookup.
 */
export function liveCrossSellQueries(db: Database, productId: string, page: number, perPage: number) {
  return [
    crossSellPage.bind(db, null, { productId, limit: perPage, offset: (page - 1) * perPage }),
    crossSellCount.bind(db, null, { productId }),
  ] as const;
}

const ofProduct = and(eq(crossSells.ownerProductId, bound("productId", crossSells.ownerProductId)), complete);
const crossSellPage = new ReusableQuery(getTableColumns(crossSells), (db, columns) =>
  db
    .select(columns)
    .from(crossSells)
    .where(ofProduct)
    .orderBy(asc(crossSells.position))
    .limit(sql.placeholder("limit"))
    .offset(sql.placeholder("offset")),
);
const crossSellCount = new ReusableQuery({ total: computed(count(), Number) }, (db, total) =>
  db.select(total).from(crossSells).where(ofProduct),
);

type CrossSellRow = typeof crossSells.$inferSelect;

/** The page the statements of {@link liveCrossSellQueries} answered. */
export function liveCrossSellPage(rows: CrossSellRow[], counted: { total: number }[]): CrossSellPage {
  const items = rows.map((row) =>
    completeCrossSell({
      id: row.id,
      product_id: row.productId,
      variant_id: row.variantId,
      parent_id: row.parentId,
      title: row.title,
      main_description: row.mainDescription ?? null,
      description: row.description ?? null,
      button_text: row.buttonText,
      amount: row.amount,
      currency: row.currency,
      discount: row.discount ?? null,
      validity_minutes: row.validityMinutes,
      one_purchase: row.onePurchase,
      send_offer: row.sendOffer,
      active: row.active,
    }),
  );
  return { items: items.filter((item) => item !== null), total: counted[0]?.total ?? 0 };
}

/** The same page over an overlay's cross-sell collection. */
export function draftCrossSellPage(records: readonly CrossSellRecord[], page: number, perPage: number): CrossSellPage {
  const completeItems = records.map(completeCrossSell).filter((item) => item !== null);
  const start = (page - 1) * perPage;
  return { items: completeItems.slice(start, start + perPage), total: completeItems.length };
}
