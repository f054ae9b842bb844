/**
 * Upload tokens: `ut1.<store id>.<32 random bytes, base64url>`. They name their store, so the byte PUT
 * finds the store's coordinator without a bearer token; the coordinator keeps only the token's hash.
 */

/** A fresh upload token for an upload of `storeId`. */
export function newUploadToken(storeId: string): string {
  const secret = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
  return `ut1.${storeId}.${secret}`;
}

/** The store an upload token names; null for anything not shaped like one. */
export function storeOfToken(token: string): string | null {
  const match = /^ut1\.([0-9a-f-]{36})\.[\w-]{43}$/.exec(token);
  return match?.[1] ?? null;
}
