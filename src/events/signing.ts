/**
 * Standard Webhooks signing: `v1,<base64 HMAC-SHA-256 of "{id}.{timestamp}.{body}">`, keyed with the
 * base64-decoded part of a `whsec_` secret. Any Standard Webhooks library verifies it.
 */

import { hmacSha256 } from "../lib/crypto";
import { fromBase64, toBase64 } from "../lib/encoding";

const secretPrefix = "whsec_";

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
  const mac = await hmacSha256(fromBase64(secret.slice(secretPrefix.length)), `${id}.${timestamp}.${body}`);
  return `v1,${toBase64(mac)}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated (two during a rotation's overlap). */
export async function signatureHeader(secrets: string[], id: string, timestamp: number, body: string) {
  return (await Promise.all(secrets.map((secret) => signature(secret, id, timestamp, body)))).join(" ");
}
