import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { StoreCoordinator } from "../../src/uploads/coordinator/store-coordinator";

/** The error every call of a database or coordinator gets once its request's answer is "lost". */
const lost = () => new Error("network connection lost (test: the request died after its change)");

/** Whether a batch holds the statement that records a change under an Idempotency-Key (db/idempotency-keys.ts). */
const recordsChange = (queries: string[]) =>
  queries.some((query) => /update "idempotency_keys" set "changed"/i.test(query));

/** One round trip to D1 as a wrapper sees it: a lone statement's call, a batch, or `exec`. */
type Trip = { queries: string[]; kind: "statement" | "batch" | "exec" };

/** What a wrapped D1 binding does around each round trip: runs it (`run`) or not, before and after. */
type AroundTrip = <T>(trip: Trip, run: () => Promise<T>) => Promise<T>;

const statementCalls = new Set<PropertyKey>(["first", "run", "all", "raw"]);

/**
 * `inner` with every round trip passed through `around`, typed as the binding itself: statements and sessions
 * are proxies over the real ones (their SQL remembered), and a batch hands the real statements to D1.
 */
function aroundEachTrip(inner: D1Database, around: AroundTrip): D1Database {
  const real = new WeakMap<D1PreparedStatement, { statement: D1PreparedStatement; query: string }>();
  const watch = (statement: D1PreparedStatement, query: string): D1PreparedStatement => {
    const watched = new Proxy(statement, {
      get(target, property) {
        const value = Reflect.get(target, property);
        if (typeof value !== "function") return value;
        if (property === "bind") return (...values: unknown[]) => watch(target.bind(...values), query);
        if (!statementCalls.has(property)) return value.bind(target);
        return (...args: unknown[]) =>
          around({ queries: [query], kind: "statement" }, async () => Reflect.apply(value, target, args));
      },
    });
    real.set(watched, { statement, query });
    return watched;
  };
  const batchOf = (target: D1Database | D1DatabaseSession) => (statements: D1PreparedStatement[]) => {
    const known = statements.map((statement) => real.get(statement) ?? { statement, query: "" });
    return around({ queries: known.map((entry) => entry.query), kind: "batch" }, () =>
      target.batch(known.map((entry) => entry.statement)),
    );
  };
  const session = (target: D1DatabaseSession): D1DatabaseSession =>
    new Proxy(target, {
      get(sessionTarget, property) {
        if (property === "prepare") return (query: string) => watch(sessionTarget.prepare(query), query);
        if (property === "batch") return batchOf(sessionTarget);
        const value = Reflect.get(sessionTarget, property);
        return typeof value === "function" ? value.bind(sessionTarget) : value;
      },
    });
  return new Proxy(inner, {
    get(target, property) {
      if (property === "prepare") return (query: string) => watch(target.prepare(query), query);
      if (property === "batch") return batchOf(target);
      if (property === "exec")
        return (query: string) => around({ queries: [query], kind: "exec" }, () => target.exec(query));
      if (property === "withSession") return (constraint?: string) => session(target.withSession(constraint));
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * A D1 binding whose request dies right after its change: the batch that records a change under an
 * Idempotency-Key commits, and every call after it fails, as if the process had died before answering (the
 * route's reads after the change, and the kept answer's own write). `died()` says whether it happened.
 */
export function dyingAfterChange(inner: D1Database): { binding: D1Database; died: () => boolean } {
  let dead = false;
  const binding = aroundEachTrip(inner, async (trip, run) => {
    if (dead) throw lost();
    const result = await run();
    if (trip.kind === "batch" && recordsChange(trip.queries)) dead = true;
    return result;
  });
  return { binding, died: () => dead };
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
  const binding = aroundEachTrip(inner, async (trip, run) => {
    if (trip.kind === "exec") return run();
    const traced = { queries: trip.queries, started: clock++, ended: -1 };
    trips.push(traced);
    try {
      return await run();
    } finally {
      traced.ended = clock++;
    }
  });
  return { binding, trips };
}
