import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import {
  countingBucket,
  countingD1,
  countingNamespace,
  type R2Calls,
  type Trips,
} from "../../scripts/counting-bindings";
import { createApp } from "../../src/app";
import { homeBinding, homeNames } from "../../src/db/shards";
import { type BindingOverrides, origin } from "./http";

/**
 * Counts what a request sends to D1 and to Durable Objects, one count per round trip: a batch is one,
 * a statement run on its own is one, a Durable Object RPC or fetch is one.
 */
export type RoundTrips = { d1: number; durableObjects: number };

/**
 * `bindings` with D1, both Durable Object namespaces and R2 counted, and an execution context that collects
 * `waitUntil` work so a caller can wait for it before reading the counts.
 */
function counted(bindings: Env) {
  const d1Trips: Trips = [];
  const calls = { count: 0 };
  const r2: R2Calls = {};
  const context = createExecutionContext();
  return {
    bindings: {
      ...bindings,
      // Every database a request may use: the global one and each shard, into the same count.
      ...Object.fromEntries(
        homeNames(bindings).map((name) => [name, countingD1(homeBinding(bindings, name), d1Trips)]),
      ),
      RATE_LIMITER: countingNamespace(bindings.RATE_LIMITER, calls),
      STORE_COORDINATOR: countingNamespace(bindings.STORE_COORDINATOR, calls),
      BUCKET: countingBucket(bindings.BUCKET, r2),
    },
    context,
    /** Waits for the `waitUntil` work, then answers the counts. */
    async settle(): Promise<AllTrips> {
      await waitOnExecutionContext(context);
      return { d1: d1Trips.length, durableObjects: calls.count, r2 };
    },
  };
}

/** Calls the app with counting bindings; answers the response and the round trips it made. */
export async function countRoundTrips(
  path: string,
  init: RequestInit & { token?: string; store?: string; env?: BindingOverrides } = {},
): Promise<{ response: Response; trips: RoundTrips }> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set("Authorization", `Bearer ${init.token}`);
  if (init.store) headers.set("X-Service-Store", init.store);
  const run = counted({ ...env, ...init.env } as Env);
  const response = await createApp().request(
    `${origin}/api/v1${path}`,
    { ...init, headers },
    run.bindings,
    run.context,
  );
  const { d1, durableObjects } = await run.settle();
  return { response, trips: { d1, durableObjects } };
}

/** The round trips of one request outside `/api/v1` (hosted media), R2's calls by method included. */
export type AllTrips = RoundTrips & { r2: R2Calls };

/**
 * Calls the app at `url` (absolute, or a path on the test origin) with counting D1, Durable Object and R2
 * bindings over `bindings`; answers the response, its body read (so a streamed body's reads are done), and
 * its round trips.
 */
export async function countAllTrips(
  url: string,
  init: RequestInit = {},
  bindings: Env = env,
): Promise<{ response: Response; body: Uint8Array; trips: AllTrips }> {
  const run = counted(bindings);
  const absolute = url.startsWith("http") ? url : `${origin}${url}`;
  const response = await createApp().request(absolute, init, run.bindings, run.context);
  const body = new Uint8Array(await response.arrayBuffer());
  return { response, body, trips: await run.settle() };
}
