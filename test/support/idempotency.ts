import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { StoreCoordinator } from "../../src/uploads/coordinator/store-coordinator";

/** The error every call of a database or coordinator gets once its request's answer is "lost". */
const lost = () => new Error("network connection lost (test: the request died after its change)");

/** Whether a batch holds the statement that records a change under an Idempotency-Key (db/idempotency-keys.ts). */
const recordsChange = (queries: string[]) =>
  queries.some((query) => /update "idempotency_keys" set "changed"/i.test(query));

/** A statement that remembers its SQL and refuses to run once the database is `dead`. */
class WatchedStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    readonly query: string,
    private readonly dead: () => boolean,
  ) {}

  bind(...values: unknown[]) {
    return new WatchedStatement(this.inner.bind(...values), this.query, this.dead);
  }

  private run_<T>(call: () => Promise<T>): Promise<T> {
    return this.dead() ? Promise.reject(lost()) : call();
  }

  first(column?: string) {
    return this.run_(() => (column === undefined ? this.inner.first() : this.inner.first(column)));
  }
  run() {
    return this.run_(() => this.inner.run());
  }
  all() {
    return this.run_(() => this.inner.all());
  }
  raw(options?: { columnNames?: boolean }) {
    return this.run_(() => this.inner.raw(options as { columnNames: true }));
  }
}

/**
 * A D1 binding whose request dies right after its change: the batch that records a change under an
 * Idempotency-Key commits, and every call after it fails, as if the process had died before answering (the
 * route's reads after the change, and the kept answer's own write). `died()` says whether it happened.
 */
export function dyingAfterChange(inner: D1Database): { binding: D1Database; died: () => boolean } {
  let dead = false;
  const queries = (target: Pick<D1Database, "prepare" | "batch">) => ({
    prepare: (query: string) => new WatchedStatement(target.prepare(query), query, () => dead),
    async batch(statements: WatchedStatement[]) {
      if (dead) throw lost();
      const results = await target.batch(statements.map((statement) => statement.inner));
      if (recordsChange(statements.map((statement) => statement.query))) dead = true;
      return results;
    },
  });
  const binding = {
    ...queries(inner),
    exec: (query: string) => (dead ? Promise.reject(lost()) : inner.exec(query)),
    dump: () => inner.dump(),
    withSession(constraint?: string) {
      const session = inner.withSession(constraint);
      return { ...queries(session), getBookmark: () => session.getBookmark() };
    },
  };
  return { binding: binding as unknown as D1Database, died: () => dead };
}

/**
 * The coordinators' namespace whose request dies right after its change: a `reserve` or `finishComplete` that
 * carries an Idempotency-Key record is made, then the call throws, as if the answer were lost on its way.
 */
export function coordinatorsDyingAfterChange(namespace: DurableObjectNamespace<StoreCoordinator>) {
  let died = false;
  const binding = new Proxy(namespace, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (property !== "get") return typeof value === "function" ? value.bind(target) : value;
      return (id: DurableObjectId) => {
        const stub = target.get(id);
        return new Proxy(stub, {
          get(stubTarget, method) {
            const member = Reflect.get(stubTarget, method);
            if (typeof member !== "function") return member;
            return async (...args: unknown[]) => {
              const result = await (Reflect.apply(member, stubTarget, args) as Promise<unknown>);
              const kept = method === "reserve" ? args[2] : method === "finishComplete" ? args[4] : undefined;
              if (kept !== undefined) {
                died = true;
                throw lost();
              }
              return result;
            };
          },
        });
      };
    },
  });
  return { binding, died: () => died };
}

/** The uploads a store's coordinator holds. */
export function coordinatorUploads(storeId: string): Promise<{ id: string; state: string }[]> {
  const stub = env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));
  return runInDurableObject(stub, (_instance, state) =>
    state.storage.sql.exec<{ id: string; state: string }>("SELECT id, state FROM uploads ORDER BY id").toArray(),
  );
}

/** The leases of every unanswered Idempotency-Key of a store, run out: as 15 s after its request died. */
export async function leasesRunOut(home: D1Database, storeId: string): Promise<void> {
  await home.prepare("UPDATE idempotency_keys SET lease_until = 0 WHERE store_id = ?").bind(storeId).run();
  const stub = env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));
  await runInDurableObject(stub, (_instance, state) => {
    state.storage.sql.exec("UPDATE idempotency_keys SET lease_until = 0");
  });
}

/** One D1 round trip of a request: its statements' SQL, and when it started and ended in the request's order. */
export type TracedTrip = { queries: string[]; started: number; ended: number };

/**
 * A D1 binding that records every round trip (a batch, or a lone statement) with the order in which it
 * started and ended, so a test sees which trips of a request overlapped (ran beside each other).
 */
export function tracingD1(inner: D1Database): { binding: D1Database; trips: TracedTrip[] } {
  const trips: TracedTrip[] = [];
  let clock = 0;
  const traced = async <T>(queries: string[], run: () => Promise<T>): Promise<T> => {
    const trip = { queries, started: clock++, ended: -1 };
    trips.push(trip);
    try {
      return await run();
    } finally {
      trip.ended = clock++;
    }
  };
  class TracedStatement {
    constructor(
      readonly inner: D1PreparedStatement,
      readonly query: string,
    ) {}
    bind(...values: unknown[]) {
      return new TracedStatement(this.inner.bind(...values), this.query);
    }
    first(column?: string) {
      return traced([this.query], () => (column === undefined ? this.inner.first() : this.inner.first(column)));
    }
    run() {
      return traced([this.query], () => this.inner.run());
    }
    all() {
      return traced([this.query], () => this.inner.all());
    }
    raw(options?: { columnNames?: boolean }) {
      return traced([this.query], () => this.inner.raw(options as { columnNames: true }));
    }
  }
  const queries = (target: Pick<D1Database, "prepare" | "batch">) => ({
    prepare: (query: string) => new TracedStatement(target.prepare(query), query),
    batch: (statements: TracedStatement[]) =>
      traced(
        statements.map((statement) => statement.query),
        () => target.batch(statements.map((statement) => statement.inner)),
      ),
  });
  const binding = {
    ...queries(inner),
    exec: (query: string) => inner.exec(query),
    dump: () => inner.dump(),
    withSession(constraint?: string) {
      const session = inner.withSession(constraint);
      return { ...queries(session), getBookmark: () => session.getBookmark() };
    },
  };
  return { binding: binding as unknown as D1Database, trips };
}
