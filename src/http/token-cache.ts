import { MOVING_TOKEN_CACHE_SECONDS } from "../db/fence";
import { Lru } from "../lib/lru";

/** What a verified token may do: the part of its D1 row the guard needs. */
export type VerifiedToken = {
  tokenHash: string;
  storeIds: readonly string[];
  abilities: readonly string[];
  /**
   * The directory's entries of the token's stores (store id → home database, docs/scaling.md), read in the
   * same D1 call as the token and cached with it; a store without an entry lives in `DB`.
   */
  homes?: Readonly<Record<string, string>>;
  /**
   * One of the token's stores is being moved between databases (its directory entry says so): the token is
   * then kept for {@link MOVING_TOKEN_CACHE_SECONDS} only, so the switch of its home reaches this isolate soon.
   */
  moving?: boolean;
};

/** How long an unknown token is remembered as unknown (never longer than `TOKEN_CACHE_SECONDS`). */
export const UNKNOWN_TOKEN_CACHE_SECONDS = 5;

/** Entries of each of the two maps (known and unknown tokens); the least recently used entry is evicted first. */
const TOKEN_CACHE_MAX_ENTRIES = 10_000;

type Entry = { token: VerifiedToken | null; expiresAt: number };

/**
 * Token hash → stores, their homes and abilities, kept per isolate for a bounded time, so a warm request reads no D1.
 * Unknown tokens are kept too, briefly and in their own map, so a flood of bad tokens neither becomes a
 * flood of D1 reads nor pushes the known tokens out. Only settled values are stored, never a promise:
 * a request must not wait on another request's D1 read.
 */
export class TokenCache {
  private readonly known: Lru<string, Entry>;
  private readonly unknown: Lru<string, Entry>;
  /** D1 reads made through {@link TokenCache.resolve}: what the cache saved is every other call. */
  loads = 0;

  constructor(private readonly options: { now?: () => number; maxEntries?: number } = {}) {
    this.known = new Lru(options.maxEntries ?? TOKEN_CACHE_MAX_ENTRIES);
    this.unknown = new Lru(options.maxEntries ?? TOKEN_CACHE_MAX_ENTRIES);
  }

  /**
   * The token of `hash`, from the cache while its entry is younger than `cacheSeconds` (unknown ones:
   * `min(UNKNOWN_TOKEN_CACHE_SECONDS, cacheSeconds)`), else from `load`. `cacheSeconds` 0 caches nothing.
   */
  async resolve(
    hash: string,
    cacheSeconds: number,
    load: (hash: string) => Promise<VerifiedToken | null>,
  ): Promise<VerifiedToken | null> {
    const cached = this.get(hash);
    if (cached) return cached.token;
    this.loads++;
    // An entry lasts from before its read, never from after: a move knows how long an entry that saw the
    // directory before its switch can live (src/db/move.ts).
    const readAt = this.now();
    return this.set(hash, await load(hash), cacheSeconds, readAt);
  }

  /** Forgets the token of `hash`: its next request reads it, and its stores' homes, again. */
  drop(hash: string): void {
    this.known.delete(hash);
    this.unknown.delete(hash);
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private get(hash: string): Entry | undefined {
    const now = this.now();
    for (const map of [this.known, this.unknown]) {
      const entry = map.get(hash);
      if (!entry) continue;
      if (now < entry.expiresAt) return entry;
      map.delete(hash);
    }
    return undefined;
  }

  /** Stores the token (or its absence) and returns the frozen copy every later request will see. */
  private set(hash: string, token: VerifiedToken | null, cacheSeconds: number, readAt: number): VerifiedToken | null {
    // Frozen copies: the cached arrays are handed to every later request of the token.
    const value: VerifiedToken | null = token
      ? Object.freeze({
          tokenHash: token.tokenHash,
          storeIds: Object.freeze([...token.storeIds]),
          abilities: Object.freeze([...token.abilities]),
          ...(token.homes ? { homes: Object.freeze({ ...token.homes }) } : {}),
          ...(token.moving ? { moving: true } : {}),
        })
      : null;
    const seconds = token
      ? token.moving
        ? Math.min(MOVING_TOKEN_CACHE_SECONDS, cacheSeconds)
        : cacheSeconds
      : Math.min(UNKNOWN_TOKEN_CACHE_SECONDS, cacheSeconds);
    if (!(seconds > 0)) return value;
    (token ? this.known : this.unknown).set(hash, { token: value, expiresAt: readAt + seconds * 1000 });
    return value;
  }
}
