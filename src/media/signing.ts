/** Signed, expiring links to private files: HMAC-SHA-256 over the path and the expiry time. */

const encoder = new TextEncoder();

async function hmacHex(secret: string, message: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const signature = await crypto.subtle.sign("HMAC", key, encoder.encode(message));
  return [...new Uint8Array(signature)].map((b) => b.toString(16).padStart(2, "0")).join("");
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
  const expected = await hmacHex(secret, `${pathname}:${expires}`);
  const given = encoder.encode(signature.toLowerCase());
  const wanted = encoder.encode(expected);
  return given.byteLength === wanted.byteLength && crypto.subtle.timingSafeEqual(given, wanted);
}
