// Bindings that count what a request sends to D1 and to Durable Objects, for the bench Worker
// (scripts/bench-worker.ts) and the round-trip tests (test/support/round-trips.ts): a D1 batch or a lone
// statement is one round trip, a Durable Object RPC is one call. An optional `Far` delays each of them.

/** Statements per D1 round trip of one request, in call order: 1 for a single statement, n for a batch. */
export type Trips = number[];

/** Runs one D1 round trip or Durable Object call; the bench's latency mode delays it first. */
export type Far = <T>(run: () => Promise<T>) => Promise<T>;

/** No injected delay. */
export const near: Far = (run) => run();

/** A delay of `ms` before every call, as a Worker that far from D1's primary and the objects sees. */
export function delayedBy(ms: number): Far {
  return async (run) => {
    if (ms > 0) await scheduler.wait(ms);
    return run();
  };
}

/** A prepared statement that records a round trip of one statement whenever it is executed. */
class CountingStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    private readonly trips: Trips,
    private readonly far: Far,
  ) {}

  bind(...values: unknown[]): CountingStatement {
    return new CountingStatement(this.inner.bind(...values), this.trips, this.far);
  }

  first(column?: string) {
    this.trips.push(1);
    return this.far(() => (column === undefined ? this.inner.first() : this.inner.first(column)));
  }

  run() {
    this.trips.push(1);
    return this.far(() => this.inner.run());
  }

  all() {
    this.trips.push(1);
    return this.far(() => this.inner.all());
  }

  raw(options?: { columnNames?: boolean }) {
    this.trips.push(1);
    // D1's overloads differ only in the tuple shape of the first row; the call is the same.
    return this.far(() => this.inner.raw(options as { columnNames: true }));
  }
}

/** prepare() and batch() of a database or of a session (Sessions API), counting round trips. */
function countingQueries(inner: Pick<D1Database, "prepare" | "batch">, trips: Trips, far: Far) {
  return {
    prepare: (query: string) => new CountingStatement(inner.prepare(query), trips, far),
    batch(statements: CountingStatement[]) {
      // One round trip, however many statements: D1 runs a batch as one transaction.
      trips.push(statements.length);
      return far(() => inner.batch(statements.map((statement) => statement.inner)));
    },
  };
}

/** The D1 binding, recording every round trip of a request into `trips` (sessions included). */
export function countingD1(inner: D1Database, trips: Trips, far: Far = near): D1Database {
  const counting = {
    ...countingQueries(inner, trips, far),
    exec(query: string) {
      trips.push(query.split(";").filter((part) => part.trim()).length);
      return inner.exec(query);
    },
    dump: () => inner.dump(),
    // The app opens a D1 session per request (src/db/session.ts): its statements are counted the same way.
    withSession(constraintOrBookmark?: string) {
      const session = inner.withSession(constraintOrBookmark);
      return { ...countingQueries(session, trips, far), getBookmark: () => session.getBookmark() };
    },
  };
  return counting as unknown as D1Database;
}

/** A Durable Object namespace whose stubs count (and, with BENCH_DELAY_MS, delay) every RPC. */
export function countingNamespace<T extends DurableObjectNamespace>(
  namespace: T,
  calls: { count: number },
  far: Far = near,
): T {
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
            // Reflect.apply: `member.apply` on an RPC stub would be taken for a remote method named "apply".
            return (...args: unknown[]) => {
              calls.count += 1;
              return far(() => Reflect.apply(member, stubTarget, args) as Promise<unknown>);
            };
          },
        });
      };
    },
  });
}

/** R2 calls of a request by method name (`get`, `head`, `put`, `delete`, …); each is one round trip to R2. */
export type R2Calls = Record<string, number>;

/**
 * The R2 binding, counting every call of a bucket method into `calls`. `resumeMultipartUpload` and
 * `createMultipartUpload` are counted too, though the first is local until its upload's methods are called.
 */
export function countingBucket(inner: R2Bucket, calls: R2Calls): R2Bucket {
  return new Proxy(inner, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls[String(property)] = (calls[String(property)] ?? 0) + 1;
        return Reflect.apply(value, target, args);
      };
    },
  });
}
