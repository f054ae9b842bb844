import { createDb, type Database } from "./client";

/**
 * Where a store's rows live (docs/scaling.md): the global database `DB` keeps stores, tokens and the store
 * directory; each store's own rows live in one D1 database, its home, named by its binding. Homes are the
 * `SHARD_<n>` bindings, and `DB` itself for a store without a directory entry (one placed before sharding).
 */
export const legacyHome = "DB";

const shardBindingName = /^SHARD_(\d+)$/;

function shardNumber(name: string): number {
  return Number(shardBindingName.exec(name)?.[1] ?? Number.NaN);
}

function isD1(value: unknown): value is D1Database {
  return typeof value === "object" && value !== null && typeof (value as D1Database).prepare === "function";
}

/** The `SHARD_<n>` bindings of `env`, in the order of n: where new stores are placed. */
export function shardNames(env: Env): string[] {
  const bindings = env as unknown as Record<string, unknown>;
  return Object.keys(bindings)
    .filter((name) => shardBindingName.test(name) && isD1(bindings[name]))
    .sort((a, b) => shardNumber(a) - shardNumber(b));
}

/** Every database that can be a store's home: `DB` (stores placed before sharding) and each shard. */
export function homeNames(env: Env): string[] {
  return [legacyHome, ...shardNames(env)];
}

/** The D1 binding named `name`; throws when the Worker has no such binding (the directory names one it lacks). */
export function homeBinding(env: Env, name: string): D1Database {
  const bindings = env as unknown as Record<string, unknown>;
  const binding = name === legacyHome || shardBindingName.test(name) ? bindings[name] : undefined;
  if (!isD1(binding)) {
    throw new Error(`The store database ${name} is not bound to this Worker; deploy with its binding.`);
  }
  return binding;
}

/** Drizzle over the home `name` (no session): the queue consumer, the sweep, the fixture loader of the tests. */
export function homeDb(env: Env, name: string): Database {
  return createDb(homeBinding(env, name));
}

/**
 * The bookmark a response hands out names its database, so a client's bookmark is only ever used with the
 * database it came from: D1's bookmark, a dash, and the home's tag (`0` for DB, n+1 in hex for SHARD_n).
 */
export function homeTag(name: string): string {
  return name === legacyHome ? "0" : (shardNumber(name) + 1).toString(16);
}

/** A bookmark as the client gets it: D1's bookmark of `home`, tagged with the home. */
function tagBookmark(bookmark: string, home: string): string {
  return `${bookmark}-${homeTag(home)}`;
}

/**
 * The session constraint for `home` from the request's constraint (see session.ts). A client's bookmark is
 * D1's own when its tag names this home. A bookmark of another database (the client wrote to another store,
 * or this store has moved since) cannot be compared with this one's: the read goes to the primary, which is
 * never behind.
 */
function constraintFor(requestConstraint: string, home: string): string {
  if (requestConstraint === "first-primary" || requestConstraint === "first-unconstrained") return requestConstraint;
  const dash = requestConstraint.lastIndexOf("-");
  if (dash > 0 && requestConstraint.slice(dash + 1).toLowerCase() === homeTag(home)) {
    return requestConstraint.slice(0, dash);
  }
  return "first-primary";
}

/** The databases a writer of several stores needs (the fixture loader): the global one, each home, the shards. */
export type Homes = {
  global(): Database;
  home(name: string): Database;
  /** Where new stores may be placed: the `SHARD_<n>` bindings; none means `DB`. */
  readonly shards: readonly string[];
};

/** {@link Homes} straight over the bindings, without sessions (tests, scripts). */
export function bindingHomes(env: Env): Homes {
  return { global: () => createDb(env.DB), home: (name) => homeDb(env, name), shards: shardNames(env) };
}

/**
 * The databases of one request, each opened once as a D1 session (Sessions API) under the request's
 * constraint: `global()` for tokens and the directory, `home(name)` for a store's rows.
 */
export class RequestDatabases implements Homes {
  private readonly sessions = new Map<string, { session: D1DatabaseSession; db: Database }>();

  constructor(
    private readonly env: Env,
    private readonly constraint: string,
  ) {}

  get shards(): readonly string[] {
    return shardNames(this.env);
  }

  /** The global database. Tokens and the directory are never written through the API: no bookmark is needed. */
  global(): Database {
    return this.open(legacyHome, this.constraint === "first-primary" ? "first-primary" : "first-unconstrained");
  }

  /** The home database `name` of a store. */
  home(name: string): Database {
    return this.open(`home:${name}`, constraintFor(this.constraint, name), name);
  }

  /** The bookmark of the home `name`'s session, tagged; undefined when the request never opened it. */
  bookmark(name: string): string | undefined {
    const bookmark = this.sessions.get(`home:${name}`)?.session.getBookmark();
    return bookmark ? tagBookmark(bookmark, name) : undefined;
  }

  private open(key: string, constraint: string, name = legacyHome): Database {
    const open = this.sessions.get(key);
    if (open) return open.db;
    const session = homeBinding(this.env, name).withSession(constraint);
    // Drizzle's D1 driver needs only prepare() and batch(), which a session has.
    const db = createDb(session as unknown as D1Database);
    this.sessions.set(key, { session, db });
    return db;
  }
}
