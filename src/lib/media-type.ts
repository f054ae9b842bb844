/** Media types (RFC 9110 §8.3.1) compare on their essence: type/subtype, case-insensitively, parameters ignored. */

/** `type/subtype` of a media type in lower case, without parameters. */
export function mediaTypeEssence(mediaType: string): string {
  return mediaType.split(";")[0]?.trim().toLowerCase() ?? "";
}

/** Whether two media types name the same type/subtype. */
export function sameMediaType(a: string, b: string): boolean {
  return mediaTypeEssence(a) === mediaTypeEssence(b);
}
