// A Worker entry for `npm run bench` only (`wrangler dev scripts/bench-worker.ts`), never deployed. It is
// the project's own Worker, unchanged, plus two things the benchmarks need and the app must not have:
//
// - its D1 binding wrapped so that every response says how many SQL statements the request ran and in
//   how many round trips (headers X-Bench-D1-Statements, X-Bench-D1-Round-Trips). That makes "D1
//   statements per publish" a measurement of the real code path in workerd, not a count read off the code;
// - its Durable Object namespaces wrapped likewise (header X-Bench-DO-Calls: RPCs started during the
//   request, background lease refills included);
// - with the variable BENCH_DELAY_MS set, every D1 round trip and Durable Object call waits that long
//   first: what a Worker that far from D1's primary and the objects sees (bench-latency.mjs);
// - PUT /_bench/stream/{discard,r2,r2-transform}: the steps of the upload PUT taken one at a time (read the
//   body and drop it; stream it into R2 through a FixedLengthStream; the same through a JS TransformStream
//   first, as the PUT's byte counter did until this measurement had it removed), so the report can say
//   where an upload's time and memory go.
import worker from "../src/index";

export { RateLimiter, StoreCoordinator } from "../src/index";

/** Statements per D1 round trip of one request, in call order: 1 for a single statement, n for a batch. */
type Trips = number[];

/** The injected delay per D1 round trip and Durable Object call, from BENCH_DELAY_MS (0 without it). */
let delayMs = 0;
const far = async <T>(run: () => Promise<T>): Promise<T> => {
  if (delayMs > 0) await scheduler.wait(delayMs);
  return run();
};

/** A prepared statement that records a round trip of one statement whenever it is executed. */
class CountingStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    private readonly trips: Trips,
  ) {}

  bind(...values: unknown[]): CountingStatement {
    return new CountingStatement(this.inner.bind(...values), this.trips);
  }

  first(column?: string) {
    this.trips.push(1);
    return far(() => (column === undefined ? this.inner.first() : this.inner.first(column)));
  }

  run() {
    this.trips.push(1);
    return far(() => this.inner.run());
  }

  all() {
    this.trips.push(1);
    return far(() => this.inner.all());
  }

  raw(options?: { columnNames?: boolean }) {
    this.trips.push(1);
    // D1's overloads differ only in the tuple shape of the first row; the call is the same.
    return far(() => this.inner.raw(options as { columnNames: true }));
  }
}

/** prepare() and batch() of a database or of a session (Sessions API), counting round trips. */
function countingQueries(inner: Pick<D1Database, "prepare" | "batch">, trips: Trips) {
  return {
    prepare: (query: string) => new CountingStatement(inner.prepare(query), trips),
    batch(statements: CountingStatement[]) {
      // One round trip, however many statements: D1 runs a batch as one transaction.
      trips.push(statements.length);
      return far(() => inner.batch(statements.map((statement) => statement.inner)));
    },
  };
}

function countingD1(inner: D1Database, trips: Trips): D1Database {
  const counting = {
    ...countingQueries(inner, trips),
    exec(query: string) {
      trips.push(query.split(";").filter((part) => part.trim()).length);
      return inner.exec(query);
    },
    dump: () => inner.dump(),
    // The app opens a D1 session per request (src/db/session.ts): its statements are counted the same way.
    withSession(constraintOrBookmark?: string) {
      const session = inner.withSession(constraintOrBookmark);
      return { ...countingQueries(session, trips), getBookmark: () => session.getBookmark() };
    },
  };
  return counting as unknown as D1Database;
}

/** A Durable Object namespace whose stubs count (and, with BENCH_DELAY_MS, delay) every RPC. */
function countingNamespace<T extends DurableObjectNamespace>(namespace: T, calls: { count: number }): T {
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

/** The steps of the upload PUT, one at a time (see the top of the file). */
async function streamStep(step: string, request: Request, env: Env): Promise<Response> {
  const body = request.body;
  const length = Number(request.headers.get("Content-Length"));
  if (!body || !Number.isSafeInteger(length)) return new Response("a body with a Content-Length", { status: 400 });
  const key = `bench/stream/${crypto.randomUUID()}`;
  if (step === "discard") {
    const reader = body.getReader();
    for (;;) if ((await reader.read()).done) break;
  } else if (step === "r2") {
    await env.BUCKET.put(key, body.pipeThrough(new FixedLengthStream(length)));
  } else if (step === "r2-transform") {
    let bytes = 0;
    const counter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    await env.BUCKET.put(key, body.pipeThrough(counter).pipeThrough(new FixedLengthStream(length)));
    if (bytes !== length) return new Response("short body", { status: 400 });
  } else {
    return new Response("unknown step", { status: 404 });
  }
  // The object is left in the throwaway bucket: deleting it would add time the app's PUT does not spend.
  return new Response(null, { status: 204 });
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (request.method === "PUT" && url.pathname.startsWith("/_bench/stream/")) {
      return streamStep(url.pathname.slice("/_bench/stream/".length), request, env);
    }
    delayMs = Number((env as unknown as { BENCH_DELAY_MS?: string }).BENCH_DELAY_MS ?? 0) || 0;
    const trips: Trips = [];
    const calls = { count: 0 };
    const response = await worker.fetch(
      request,
      {
        ...env,
        DB: countingD1(env.DB, trips),
        RATE_LIMITER: countingNamespace(env.RATE_LIMITER, calls),
        STORE_COORDINATOR: countingNamespace(env.STORE_COORDINATOR, calls),
      },
      ctx,
    );
    const counted = new Response(response.body, response);
    counted.headers.set("X-Bench-D1-Statements", String(trips.reduce((sum, n) => sum + n, 0)));
    counted.headers.set("X-Bench-D1-Round-Trips", trips.join(" "));
    counted.headers.set("X-Bench-DO-Calls", String(calls.count));
    return counted;
  },
} satisfies ExportedHandler<Env>;
