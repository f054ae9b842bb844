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
import { homeBinding, homeNames, legacyHome, shardNames } from "./shards";

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

/** The steps of a move, in order (see above); "settled": `moving` cleared, the old home not yet cleaned. */
export type MoveStep = "announced" | "fenced" | "copied" | "switched" | "opened" | "settled" | "cleaned";

type Entry = { shard: string; version: number; moving: number } | null;

async function directoryEntry(db: D1Database, storeId: string): Promise<Entry> {
  return db
    .prepare("SELECT `shard`, `version`, `moving` FROM `store_directory` WHERE `store_id` = ?")
    .bind(storeId)
    .first<{ shard: string; version: number; moving: number }>();
}

/** Refuses (404) a store the global database does not know. */
async function requireStore(env: Env, storeId: string): Promise<void> {
  const store = await env.DB.prepare("SELECT `id` FROM `stores` WHERE `id` = ?").bind(storeId).first();
  if (!store) throw new MoveRefused(404, `Store ${storeId} not found.`);
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
  await requireStore(env, storeId);
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
    await step("settled");
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

/** What a recovery found and did. */
type RecoveryReport = {
  store_id: string;
  /** The store's home: the directory's, which a recovery never changes. */
  home: string;
  /** What the directory said: a move in progress (`moving`), or none (`settled`). */
  found: "moving" | "settled";
  /** The other homes whose rows of the store were deleted (a copy, or the old home of a finished move). */
  cleaned: string[];
  /** Whether the home was fenced and is open to writes again. */
  opened: boolean;
  /** The directory entry's version after the recovery (null: the store has none, it lives in DB). */
  version: number | null;
};

type RecoverOptions = {
  storeId: string;
  marginMs?: number;
  sleep?: (ms: number) => Promise<void>;
};

/**
 * Finishes a move whose Worker stopped part-way (the request cut off, the isolate gone), from what the
 * databases hold (docs/scaling.md, "A move that stops part-way"). The directory's home is the store's at
 * every step of a move: before the switch the old one (the copy is not yet checked), after it the new one (the
 * copy was checked before the switch). So a recovery keeps the directory's home and undoes what surrounds it:
 *
 * 1. If the entry is `moving`, its version goes up first: a move still running after all fails at its next
 *    directory write instead of acting beside the recovery. Then the same wait as after a switch (the stop may
 *    have come right after one), so no isolate still reads another home.
 * 2. The home's fence (if any) is lifted and `moving` cleared: writes resume.
 * 3. Every other home holding rows or a fence of the store is cleaned as a finished move cleans its old home:
 *    rows deleted batch by batch under the fence, then the fence lifted.
 *
 * Running it on a store that is not moving and has nothing elsewhere changes nothing.
 */
export async function recoverMove(env: Env, options: RecoverOptions): Promise<RecoveryReport> {
  const { storeId } = options;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  await requireStore(env, storeId);
  const entry = await directoryEntry(env.DB, storeId);
  const home = entry?.shard ?? legacyHome;
  let version = entry?.version ?? null;
  if (entry?.moving) {
    try {
      version = await setEntry(env, storeId, entry.version, home, true);
    } catch {
      throw new MoveRefused(409, `Store ${storeId}'s directory entry changed while the recovery read it; try again.`);
    }
    await sleep(MOVING_TOKEN_CACHE_SECONDS * 1000 + (options.marginMs ?? 1000));
  }
  const homes = await Promise.all(
    homeNames(env).map(async (name) => ({
      name,
      ...(await storeTraces(homeBinding(env, name), storeId, name === legacyHome)),
    })),
  );
  const own = homes.find((found) => found.name === home);
  if (own?.fence) await unfenceStatement(homeBinding(env, home), storeId).run();
  if (entry?.moving && version !== null) version = await setEntry(env, storeId, version, home, false);
  const cleaned: string[] = [];
  for (const other of homes) {
    if (other.name === home || (!other.fence && !other.rows)) continue;
    const db = homeBinding(env, other.name);
    await deleteStoreRows(db, storeId, {
      keepStoreRow: other.name === legacyHome,
      fence: { state: "outgoing", since: other.fence?.since ?? Date.now() },
    });
    await unfenceStatement(db, storeId).run();
    cleaned.push(other.name);
  }
  return {
    store_id: storeId,
    home,
    found: entry?.moving ? "moving" : "settled",
    cleaned,
    opened: Boolean(own?.fence),
    version,
  };
}

/**
 * The store's fence in `db`, and whether `db` holds rows of it in any of the move's tables (move-rows.ts), its
 * `stores` row left out in DB, where that row is the global one.
 */
async function storeTraces(db: D1Database, storeId: string, global: boolean) {
  const tables = storeTables.filter((table) => !(global && table.name === "stores"));
  // Each table's condition binds the store id once.
  const rows = db
    .prepare(
      `SELECT ${tables.map((table) => `EXISTS (SELECT 1 FROM \`${table.name}\` WHERE ${table.where})`).join(" OR ")} AS found`,
    )
    .bind(...tables.map(() => storeId));
  const [fences, found] = await db.batch<{ since?: number; found?: number }>([
    db.prepare("SELECT `since` FROM `store_fences` WHERE `store_id` = ?").bind(storeId),
    rows,
  ]);
  const fence = fences?.results[0] as { since: number } | undefined;
  return { fence: fence ?? null, rows: (found?.results[0] as { found: number } | undefined)?.found === 1 };
}
