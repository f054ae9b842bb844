/**
 * Standard Webhooks signing: `v1,<base64 HMAC-SHA-256 of "{id}.{timestamp}.{body}">`, keyed with the
 * base64-decoded part of a `whsec_` secret. Any Standard Webhooks library verifies it.
 */

const secretPrefix = "whsec_";

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}

/** A new secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `${secretPrefix}${toBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
}

/** Whether `secret` has the shape of a secret this service makes or accepts from fixtures. */
export function isWebhookSecret(secret: string): boolean {
  if (!secret.startsWith(secretPrefix)) return false;
  try {
    return fromBase64(secret.slice(secretPrefix.length)).length >= 24;
  } catch {
    return false;
  }
}

/** One `v1,` signature of the message with `secret`. */
export async function signature(secret: string, id: string, timestamp: number, body: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    fromBase64(secret.slice(secretPrefix.length)),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestamp}.${body}`));
  return `v1,${toBase64(new Uint8Array(mac))}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated (two during a rotation's overlap). */
export async function signatureHeader(secrets: string[], id: string, timestamp: number, body: string) {
  return (await Promise.all(secrets.map((secret) => signature(secret, id, timestamp, body)))).join(" ");
}
