import { constantTimeEqual, hmacSha256 } from "../lib/crypto";
import { toHex } from "../lib/encoding";

/** Signed, expiring links to private files: HMAC-SHA-256 over the path and the expiry time. */

async function hmacHex(secret: string, message: string): Promise<string> {
  return toHex(await hmacSha256(secret, message));
}

/** `locator` (an absolute private-file URL) with `expires` and `signature` query parameters. */
export async function signFileUrl(secret: string, locator: string, expiresAt: Date): Promise<string> {
  const url = new URL(locator);
  const expires = String(Math.floor(expiresAt.getTime() / 1000));
  url.search = "";
  url.searchParams.set("expires", expires);
  url.searchParams.set("signature", await hmacHex(secret, `${url.pathname}:${expires}`));
  return url.toString();
}

/** Whether a request for `pathname` carries a valid signature that has not expired. */
export async function verifyFileSignature(
  secret: string,
  pathname: string,
  expires: string | undefined,
  signature: string | undefined,
  now = Date.now(),
): Promise<boolean> {
  if (!secret || !expires || !signature || !/^\d{1,12}$/.test(expires)) return false;
  if (Number(expires) * 1000 <= now) return false;
  return constantTimeEqual(signature.toLowerCase(), await hmacHex(secret, `${pathname}:${expires}`));
}
