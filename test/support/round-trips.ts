import { env } from "cloudflare:workers";
import { createApp } from "../../src/app";
import { origin } from "./http";

/**
 * Counts what a request sends to D1 and to Durable Objects, one count per round trip: a batch is one,
 * a statement run on its own is one, a Durable Object RPC or fetch is one.
 */
export type RoundTrips = { d1: number; durableObjects: number };

function countingD1(database: D1Database, trips: RoundTrips): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const wrapper = {
      bind: (...values: unknown[]) => wrap(statement.bind(...values)),
      first: (column?: string) => {
        trips.d1 += 1;
        return column === undefined ? statement.first() : statement.first(column);
      },
      all: () => {
        trips.d1 += 1;
        return statement.all();
      },
      run: () => {
        trips.d1 += 1;
        return statement.run();
      },
      raw: (options?: { columnNames?: boolean }) => {
        trips.d1 += 1;
        return statement.raw(options as never);
      },
    } as unknown as D1PreparedStatement;
    real.set(wrapper, statement);
    return wrapper;
  };
  const session = (target: D1Database | D1DatabaseSession) => ({
    prepare: (query: string) => wrap(target.prepare(query)),
    batch: (statements: D1PreparedStatement[]) => {
      trips.d1 += 1;
      return target.batch(statements.map((statement) => real.get(statement) ?? statement));
    },
  });
  return {
    ...session(database),
    exec: (query: string) => {
      trips.d1 += 1;
      return database.exec(query);
    },
    withSession: (constraint?: string) => {
      const inner = database.withSession(constraint as never);
      return { ...session(inner), getBookmark: () => inner.getBookmark() };
    },
  } as unknown as D1Database;
}

function countingNamespace<T extends DurableObjectNamespace>(namespace: T, trips: RoundTrips): T {
  return new Proxy(namespace, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (property !== "get") return typeof value === "function" ? value.bind(target) : value;
      return (id: DurableObjectId) => {
        const stub = target.get(id);
        return new Proxy(stub, {
          get(stubTarget, method) {
            const member = Reflect.get(stubTarget, method);
            if (typeof member !== "function") return member;
            return (...args: unknown[]) => {
              trips.durableObjects += 1;
              return Reflect.apply(member, stubTarget, args);
            };
          },
        });
      };
    },
  });
}

/** Calls the app with counting bindings; answers the response and the round trips it made. */
export async function countRoundTrips(
  path: string,
  init: RequestInit & { token?: string; store?: string } = {},
): Promise<{ response: Response; trips: RoundTrips }> {
  const trips: RoundTrips = { d1: 0, durableObjects: 0 };
  const headers = new Headers(init.headers);
  if (init.token) headers.set("Authorization", `Bearer ${init.token}`);
  if (init.store) headers.set("X-Service-Store", init.store);
  const bindings = {
    ...env,
    DB: countingD1(env.DB, trips),
    RATE_LIMITER: countingNamespace(env.RATE_LIMITER, trips),
    STORE_COORDINATOR: countingNamespace(env.STORE_COORDINATOR, trips),
  };
  const waits: Promise<unknown>[] = [];
  const context = {
    waitUntil: (promise: Promise<unknown>) => waits.push(promise),
    passThroughOnException: () => {},
    props: {},
  } as unknown as ExecutionContext;
  const response = await createApp().request(`${origin}/api/v1${path}`, { ...init, headers }, bindings, context);
  await Promise.all(waits);
  return { response, trips };
}
