/** Bytes as text (lower-case hex, base64 and base64url without padding), and text as an RFC 8187 ext-value. */

/** The parts one after another in one new array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const whole = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.length;
  }
  return whole;
}

/** Lower-case hex, two digits a byte. */
export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  return [...(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes))]
    .map((byte) => byte.toString(16).padStart(2, "0"))
    .join("");
}

export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Base64url without padding (RFC 4648 §5), as tokens carry it. */
export function toBase64Url(bytes: Uint8Array): string {
  return toBase64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Throws on text that is not base64. */
export function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}

/**
 * Text as the value of RFC 8187's ext-value (after `UTF-8''`, as in `filename*=` of Content-Disposition): its
 * UTF-8 bytes, each percent-encoded unless it is an attr-char. encodeURIComponent alone would leave `'`, `(`,
 * `)` and `*`, which attr-char excludes (`'` separates the charset and language).
 */
export function encodeExtValue(text: string): string {
  return encodeURIComponent(text).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}
