/**
 * Ids are UUIDs (RFC 9562), stored and compared in lower case. A path or query that names one is matched
 * either as stored (`isStoredUuid`: another case names nothing) or in any case and handed on in lower case
 * (`parseUuid`, and `uuidParam` in http/params.ts for documented path parameters).
 */

/** The pattern of a UUID in lower case, to build longer patterns from (an event id, a file path). */
export const uuidSource = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

/** A whole UUID as ids are stored: lower case. */
export const storedUuid = new RegExp(`^${uuidSource}$`);
const anyCase = new RegExp(`^${uuidSource}$`, "i");

/** `value` in lower case when it is a UUID in any letter case; undefined otherwise. */
export function parseUuid(value: string): string | undefined {
  return anyCase.test(value) ? value.toLowerCase() : undefined;
}
