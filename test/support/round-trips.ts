import { env } from "cloudflare:workers";
import {
  countingBucket,
  countingD1,
  countingNamespace,
  type R2Calls,
  type Trips,
} from "../../scripts/counting-bindings";
import { createApp } from "../../src/app";
import { origin } from "./http";

/**
 * Counts what a request sends to D1 and to Durable Objects, one count per round trip: a batch is one,
 * a statement run on its own is one, a Durable Object RPC or fetch is one.
 */
export type RoundTrips = { d1: number; durableObjects: number };

/** Calls the app with counting bindings; answers the response and the round trips it made. */
export async function countRoundTrips(
  path: string,
  init: RequestInit & { token?: string; store?: string } = {},
): Promise<{ response: Response; trips: RoundTrips }> {
  const d1Trips: Trips = [];
  const calls = { count: 0 };
  const headers = new Headers(init.headers);
  if (init.token) headers.set("Authorization", `Bearer ${init.token}`);
  if (init.store) headers.set("X-Service-Store", init.store);
  const bindings = {
    ...env,
    DB: countingD1(env.DB, d1Trips),
    RATE_LIMITER: countingNamespace(env.RATE_LIMITER, calls),
    STORE_COORDINATOR: countingNamespace(env.STORE_COORDINATOR, calls),
  };
  const waits: Promise<unknown>[] = [];
  const context = {
    waitUntil: (promise: Promise<unknown>) => waits.push(promise),
    passThroughOnException: () => {},
    props: {},
  } as unknown as ExecutionContext;
  const response = await createApp().request(`${origin}/api/v1${path}`, { ...init, headers }, bindings, context);
  await Promise.all(waits);
  return { response, trips: { d1: d1Trips.length, durableObjects: calls.count } };
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
  const d1Trips: Trips = [];
  const calls = { count: 0 };
  const r2: R2Calls = {};
  const counting = {
    ...bindings,
    DB: countingD1(bindings.DB, d1Trips),
    RATE_LIMITER: countingNamespace(bindings.RATE_LIMITER, calls),
    STORE_COORDINATOR: countingNamespace(bindings.STORE_COORDINATOR, calls),
    BUCKET: countingBucket(bindings.BUCKET, r2),
  };
  const waits: Promise<unknown>[] = [];
  const context = {
    waitUntil: (promise: Promise<unknown>) => waits.push(promise),
    passThroughOnException: () => {},
    props: {},
  } as unknown as ExecutionContext;
  const absolute = url.startsWith("http") ? url : `${origin}${url}`;
  const response = await createApp().request(absolute, init, counting, context);
  const body = new Uint8Array(await response.arrayBuffer());
  await Promise.all(waits);
  return { response, body, trips: { d1: d1Trips.length, durableObjects: calls.count, r2 } };
}
