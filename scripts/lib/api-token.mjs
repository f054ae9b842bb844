// The pure part of `npm run token:create`: what a new API token and its store look like in D1, written as
// the service reads them (src/http/auth.ts looks a token up by the SHA-256 of its secret; src/db/schema.ts
// gives the columns). Web Crypto only, so the same code runs in Node and, in its tests, inside workerd.

/** The abilities a token may hold (src/http/auth.ts `abilities`; a test keeps the two lists equal). */
export const ABILITIES = Object.freeze([
  "media:write",
  "products:read",
  "products:write",
  "products:publish",
  "subscriptions:read",
  "webhooks:manage",
]);

/** A store id as the API takes it (src/lib/ids.ts holds the Worker's). */
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Thrown for arguments the command refuses; the message says what to pass instead. */
export class UsageError extends Error {
  name = "UsageError";
}

/** Store ids as the service keeps them: lower-case UUIDs (resolveStore lower-cases X-Service-Store). */
export function parseStoreIds(values) {
  const ids = values.flatMap((value) => value.split(",")).map((value) => value.trim());
  for (const id of ids) {
    if (!uuidPattern.test(id)) throw new UsageError(`--store ${JSON.stringify(id)} is not a UUID.`);
  }
  return [...new Set(ids.map((id) => id.toLowerCase()))];
}

/** `a,b` or `all`: the abilities of the new token, each one the service knows. */
export function parseAbilities(value) {
  if (value === undefined || value.trim() === "") {
    throw new UsageError(`--abilities is required: a comma-separated list of ${ABILITIES.join(", ")}, or all.`);
  }
  if (value.trim() === "all") return [...ABILITIES];
  const wanted = [...new Set(value.split(",").map((ability) => ability.trim()))];
  const unknown = wanted.filter((ability) => !ABILITIES.includes(ability));
  if (unknown.length > 0) {
    throw new UsageError(`Unknown abilities: ${unknown.join(", ")}. Known: ${ABILITIES.join(", ")}, or all.`);
  }
  return wanted;
}

/** A store name as the command will write it: printable, at most 200 characters. */
export function parseStoreName(value) {
  const name = value.trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses.
  if (name === "" || name.length > 200 || /[\u0000-\u001f\u007f]/.test(name)) {
    throw new UsageError("--name must be 1 to 200 printable characters.");
  }
  return name;
}

/** A new secret: a recognisable prefix and 256 random bits, URL-safe so it pastes into any header. */
export function newTokenSecret() {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `sfc_${btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "")}`;
}

/** What api_tokens.token_hash holds: the SHA-256 of the secret, lower-case hex (as src/http/auth.ts hashes). */
export async function tokenHash(secret) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(secret));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** A SQL string literal: the only escape SQLite has is doubling the quote. */
export function sqlString(value) {
  return `'${String(value).replaceAll("'", "''")}'`;
}

/** The statement that lists which of `storeIds` exist already. */
export function existingStoresQuery(storeIds) {
  return `SELECT id FROM stores WHERE id IN (${storeIds.map(sqlString).join(", ")})`;
}

/**
 * The `stores` rows of `newStores` (skipped if one appeared meanwhile): the global database's, and the copy a
 * store's shard keeps for its foreign keys (docs/scaling.md).
 */
export function storeStatements(newStores, now = Date.now()) {
  return newStores.map(
    (store) =>
      `INSERT INTO stores (id, name, plan_active, upload_limit_bytes, created_at) VALUES (${sqlString(store.id)}, ${sqlString(store.name)}, 1, NULL, ${now}) ON CONFLICT (id) DO NOTHING`,
  );
}

/** How many stores the directory has placed on each shard. */
export const directoryCountsQuery = "SELECT shard, count(*) AS stores FROM store_directory GROUP BY shard";

/**
 * The statements that create the stores in `newStores` (skipped if one appeared meanwhile) and the token,
 * with the columns and encodings Drizzle uses for them (src/db/schema.ts): JSON arrays as text, booleans
 * as 0/1, times as milliseconds. A new store has an active plan and the default upload limit; one with a
 * `shard` also gets its directory entry (its home copy of the row is written there first, storeStatements).
 */
export async function tokenStatements({ secret, storeIds, abilities, newStores = [], now = Date.now() }) {
  const statements = storeStatements(newStores, now);
  for (const store of newStores.filter((store) => store.shard)) {
    statements.push(
      `INSERT INTO store_directory (store_id, shard, version, placed_at, moving) VALUES (${sqlString(store.id)}, ${sqlString(store.shard)}, 1, ${now}, 0) ON CONFLICT (store_id) DO NOTHING`,
    );
  }
  statements.push(
    `INSERT INTO api_tokens (token_hash, store_ids, abilities, created_at) VALUES (${sqlString(await tokenHash(secret))}, ${sqlString(JSON.stringify(storeIds))}, ${sqlString(JSON.stringify(abilities))}, ${now})`,
  );
  return statements;
}
