import { toHex } from "./encoding";

/** Digests, MACs and the comparison of secrets, with Web Crypto. */

const encoder = new TextEncoder();

/** SHA-256 of a text (a secret, a token), lower-case hex. */
export async function sha256Hex(text: string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/** HMAC-SHA-256 of `message` keyed with `key` (the key's bytes, or a text taken as UTF-8). */
export async function hmacSha256(key: string | Uint8Array, message: string): Promise<Uint8Array> {
  const raw = typeof key === "string" ? encoder.encode(key) : key;
  const imported = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", imported, encoder.encode(message)));
}

/** Whether two texts are equal, compared without an early exit (their lengths are not secret). */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = encoder.encode(a);
  const right = encoder.encode(b);
  return left.byteLength === right.byteLength && crypto.subtle.timingSafeEqual(left, right);
}
