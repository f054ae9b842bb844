import { eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { stores } from "../db/schema";

/**
 * The store's upload size limit in bytes: its own setting, else `fallback()` (`DEFAULT_UPLOAD_LIMIT_BYTES`,
 * read only for a store without its own).
 */
export async function storeUploadLimit(db: Database, storeId: string, fallback: () => number): Promise<number> {
  const store = await db.query.stores.findFirst({ where: eq(stores.id, storeId) });
  return store?.uploadLimitBytes ?? fallback();
}
