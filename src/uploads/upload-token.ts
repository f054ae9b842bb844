import { toBase64Url } from "../lib/encoding";
import { uuidSource } from "../lib/ids";

/**
 * Upload tokens: `ut1.<store id>.<32 random bytes, base64url>`. They name their store, so the byte PUT
 * finds the store's coordinator without a bearer token; the coordinator keeps only the token's hash.
 */

/** A fresh upload token for an upload of `storeId`. */
export function newUploadToken(storeId: string): string {
  return `ut1.${storeId}.${toBase64Url(crypto.getRandomValues(new Uint8Array(32)))}`;
}

const tokenShape = new RegExp(`^ut1\\.(${uuidSource})\\.[\\w-]{43}$`);

/** The store an upload token names; null for anything not shaped like one. */
export function storeOfToken(token: string): string | null {
  const match = tokenShape.exec(token);
  return match?.[1] ?? null;
}
