import { MOVING_TOKEN_CACHE_SECONDS } from "./fence";
import {
  copyTable,
  deleteStoreRows,
  fenceStatement,
  storeTables,
  sumTable,
  type TableSum,
  unfenceStatement,
} from "./move-rows";
import { homeBinding, legacyHome, shardNames } from "./shards";

/**
 * Moving a store between home databases while its API is in use (docs/scaling.md, "Moving a store under
 * traffic", as built). The gate is a fence in the databases themselves, not the store's Durable Object:
 * migrations/0004's triggers refuse every write of a fenced store, whichever code path sends it (routes,
 * publish's lease, the queue consumer, the sweep), without a trip more for any request; a refused write
 * answers 503 with `Retry-After` (src/http/errors.ts) and its isolate forgets the token's cached homes.
 *
 * 1. The directory entry is marked `moving` (version + 1); isolates that read it keep it for
 *    {@link MOVING_TOKEN_CACHE_SECONDS} only. The move waits until every entry read before the mark has
 *    expired (`TOKEN_CACHE_SECONDS`). Nothing is held yet.
 * 2. The store is fenced in its home: from here no write of it lands there (and is lost).
 * 3. Its rows are copied table by table into the target, then counted and checksummed on both sides; a
 *    mismatch deletes the target's copy, lifts the fence and leaves the store where it was.
 * 4. The store is fenced in the target, and the directory switched to it (version + 1). Until every isolate
 *    has the new entry (a second and a margin) some still read the old home: its rows are the same, and no
 *    write lands anywhere, so no read can miss a write.
 * 5. The target's fence is lifted (writes resume there), `moving` cleared (version + 1), and the old home's
 *    rows deleted, fenced batch by batch so nothing writes them in between.
 *
 * Writes of the store are refused from step 2 to step 5: the copy, the check and about two seconds.
 */

/** A move refused before anything changed, with the status the route answers. */
export class MoveRefused extends Error {
  constructor(
    readonly status: 404 | 409 | 422,
    message: string,
  ) {
    super(message);
    this.name = "MoveRefused";
  }
}

/** What a move did. */
type MoveReport = {
  store_id: string;
  from: string;
  to: string;
  /** The directory entry's version after the move. */
  version: number;
  /** Each table's rows and checksum, the same on both sides. */
  tables: TableSum[];
  /** How long writes of the store were refused, in milliseconds. */
  writes_held_ms: number;
};

type MoveOptions = {
  storeId: string;
  to: string;
  /** The Worker's `TOKEN_CACHE_SECONDS`: how long an isolate may keep a directory entry read before step 1. */
  tokenCacheSeconds: number;
  /** Added to every wait for isolates' entries to expire: a request between its token read and its query. */
  marginMs?: number;
  sleep?: (ms: number) => Promise<void>;
  /** Runs after the copy, before the check (tests: a copy that does not match). */
  afterCopy?: () => Promise<void>;
  /** Told each step as it is reached, and awaited (tests send requests at each step). */
  onStep?: (step: MoveStep) => void | Promise<void>;
};

/** The steps of a move, in order (see above). */
export type MoveStep = "announced" | "fenced" | "copied" | "switched" | "opened" | "cleaned";

type Entry = { shard: string; version: number; moving: number } | null;

async function directoryEntry(db: D1Database, storeId: string): Promise<Entry> {
  return db
    .prepare("SELECT `shard`, `version`, `moving` FROM `store_directory` WHERE `store_id` = ?")
    .bind(storeId)
    .first<{ shard: string; version: number; moving: number }>();
}

/** Checks the request against the directory; answers the store's current home and entry. */
async function plan(env: Env, storeId: string, to: string): Promise<{ from: string; entry: Entry }> {
  const shards = shardNames(env);
  if (!shards.includes(to)) {
    throw new MoveRefused(
      422,
      `${to} is not a shard of this Worker (its shards: ${shards.join(", ") || "none"}); a store moves to a SHARD_<n>.`,
    );
  }
  const store = await env.DB.prepare("SELECT `id` FROM `stores` WHERE `id` = ?").bind(storeId).first();
  if (!store) throw new MoveRefused(404, `Store ${storeId} not found.`);
  const entry = await directoryEntry(env.DB, storeId);
  const from = entry?.shard ?? legacyHome;
  if (from === to) throw new MoveRefused(409, `Store ${storeId} already lives in ${to}; nothing to move.`);
  if (entry?.moving) throw new MoveRefused(409, `Store ${storeId} is already being moved.`);
  return { from, entry };
}

/** Step 1: marks the entry `moving` if it is still `entry` (a concurrent move loses here); answers its version. */
async function announce(env: Env, storeId: string, entry: Entry, now: number): Promise<number> {
  const result = entry
    ? await env.DB.prepare(
        "UPDATE `store_directory` SET `moving` = 1, `version` = `version` + 1 WHERE `store_id` = ? AND `version` = ? AND `moving` = 0",
      )
        .bind(storeId, entry.version)
        .run()
    : await env.DB.prepare(
        "INSERT INTO `store_directory` (`store_id`, `shard`, `version`, `placed_at`, `moving`) VALUES (?, ?, 1, ?, 1) ON CONFLICT DO NOTHING",
      )
        .bind(storeId, legacyHome, now)
        .run();
  if (result.meta.changes !== 1) throw new MoveRefused(409, `Store ${storeId} is already being moved.`);
  return (entry?.version ?? 0) + 1;
}

/** Sets the entry's home and `moving`, version + 1, if its version is still `version`; answers the new one. */
async function setEntry(env: Env, storeId: string, version: number, shard: string, moving: boolean) {
  const result = await env.DB.prepare(
    "UPDATE `store_directory` SET `shard` = ?, `moving` = ?, `version` = `version` + 1 WHERE `store_id` = ? AND `version` = ?",
  )
    .bind(shard, moving ? 1 : 0, storeId, version)
    .run();
  if (result.meta.changes !== 1) throw new Error(`the directory entry of store ${storeId} changed during its move`);
  return version + 1;
}

/** Step 3: copies every table and compares both sides; answers the sums, or the first table that differs. */
async function copyAndCheck(source: D1Database, target: D1Database, options: MoveOptions) {
  for (const table of storeTables) await copyTable(source, target, table, options.storeId);
  await options.afterCopy?.();
  const sums: TableSum[] = [];
  for (const table of storeTables) {
    const [ours, theirs] = await Promise.all([
      sumTable(source, table, options.storeId),
      sumTable(target, table, options.storeId),
    ]);
    if (ours.rows !== theirs.rows || ours.checksum !== theirs.checksum) {
      return {
        sums,
        mismatch: `${table.name}: ${ours.rows} rows in the source, ${theirs.rows} in the target${ours.rows === theirs.rows ? ", different contents" : ""}`,
      };
    }
    sums.push(ours);
  }
  return { sums, mismatch: null };
}

/** Moves the store `options.storeId` to the shard `options.to` (see above); throws {@link MoveRefused}. */
export async function moveStore(env: Env, options: MoveOptions): Promise<MoveReport> {
  const { storeId, to } = options;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const margin = options.marginMs ?? 1000;
  const { from, entry } = await plan(env, storeId, to);
  const source = homeBinding(env, from);
  const target = homeBinding(env, to);

  const step = async (name: MoveStep) => await options.onStep?.(name);
  let version = await announce(env, storeId, entry, Date.now());
  await step("announced");
  await sleep(options.tokenCacheSeconds * 1000 + margin);

  const heldFrom = Date.now();
  let switched = false;
  try {
    await source.batch([
      // A publish's lease held in the old home belongs to a publish whose remaining writes will all be refused:
      // it goes, so the client's retry in the new home is not told another publish is running.
      source
        .prepare(
          "UPDATE `drafts` SET `publish_lease_until` = NULL WHERE `publish_lease_until` IS NOT NULL AND `product_id` IN (SELECT `id` FROM `products` WHERE `store_id` = ?)",
        )
        .bind(storeId),
      fenceStatement(source, storeId, { state: "outgoing", since: heldFrom }),
    ]);
    await step("fenced");
    // Rows an earlier, failed move may have left in the target.
    await deleteStoreRows(target, storeId, { keepStoreRow: false });
    const { sums, mismatch } = await copyAndCheck(source, target, options);
    if (mismatch) {
      throw new MoveRefused(
        409,
        `The copy of store ${storeId} in ${to} did not match (${mismatch}); it stays in ${from}.`,
      );
    }
    await step("copied");
    await fenceStatement(target, storeId, { state: "incoming", since: Date.now() }).run();
    version = await setEntry(env, storeId, version, to, true);
    switched = true;
    await step("switched");
    await sleep(MOVING_TOKEN_CACHE_SECONDS * 1000 + margin);
    await unfenceStatement(target, storeId).run();
    await step("opened");
    const heldMs = Date.now() - heldFrom;
    version = await setEntry(env, storeId, version, to, false);
    await deleteStoreRows(source, storeId, {
      keepStoreRow: from === legacyHome,
      fence: { state: "outgoing", since: heldFrom },
    });
    await unfenceStatement(source, storeId).run();
    await step("cleaned");
    return { store_id: storeId, from, to, version, tables: sums, writes_held_ms: heldMs };
  } catch (error) {
    if (!switched) {
      // Nothing was switched: the store stays where it was, open to writes again, and the target holds none of it.
      await deleteStoreRows(target, storeId, { keepStoreRow: false });
      await unfenceStatement(source, storeId).run();
      await setEntry(env, storeId, version, from, false);
    }
    throw error;
  }
}
