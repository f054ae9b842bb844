// Item 1 of `npm run bench`: request overhead through `wrangler dev`.
//
// Loads GET /products/{id} (the product read), GET /products/{id}/cross-sells (one page of 25) and
// GET /subscriptions (no filter, 500 in the store) with autocannon, beside GET /_dev/ping, the cheapest
// route of the same Worker (no token, no D1, no Durable Object): on this machine, the ceiling of the
// runtime and of wrangler's dev proxy. The routes take turns within each round, so a ratio compares
// figures measured seconds apart and the machine's noise (a shared 2-vCPU VM) mostly cancels. Unloaded
// latency is measured separately with one request at a time (autocannon's histogram has 1 ms resolution,
// too coarse for a single request).
//
//   npm run bench:requests     this part alone; rewrites its block of docs/benchmarks.md
import { bearer, benchIds, benchSizes, productPath } from "./lib/bench-fixture.mjs";
import { call, loadRoute, sequentialGets } from "./lib/bench-http.mjs";
import { machineLine, num, spread, stats, table, times } from "./lib/bench-report.mjs";
import { isMain, log, step } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withBenchStore } from "./lib/bench-server.mjs";

/** Rounds of the routes; the median round is reported, min–max is the spread. */
const ROUNDS = 3;
/** autocannon connections: enough to keep both the proxy and the Worker busy on two cores. */
const CONNECTIONS = 10;
const LOAD_SECONDS = 5;
const WARMUP_SECONDS = 2;
/** Sequential requests per route and round for the unloaded latency. */
const SEQUENTIAL = 150;

const crossSellsPath = `${productPath}/cross-sells`;

/**
 * The routes, each read twice: as a storefront asks it (again and again: the isolate gives its kept answer,
 * src/http/read-cache.ts) and with the `X-D1-Bookmark` of an earlier answer, which is always read from D1
 * (what a read costs the first time it is asked, or by a client reading its own writes).
 */
export const routes = [
  { name: "ping (ceiling)", path: "/_dev/ping", status: 204, ceiling: true },
  { name: "product read", path: productPath, status: 200 },
  { name: "product read with a bookmark (D1)", path: productPath, status: 200, bookmark: true },
  { name: `cross-sells (${benchSizes.crossSells} items)`, path: crossSellsPath, status: 200 },
  { name: "cross-sells with a bookmark (D1)", path: crossSellsPath, status: 200, bookmark: true },
  { name: `subscriptions (no filter, ${benchSizes.subscriptions} in the store)`, path: "/subscriptions", status: 200 },
];

/** The headers of every route's requests on `server`: the bookmarked ones carry one answered by the server. */
async function routeHeaders(server) {
  const { response } = await call(server, "GET", productPath, { expected: 200 });
  const bookmark = response.headers.get("X-D1-Bookmark");
  if (!bookmark) throw new Error("the product read answered no X-D1-Bookmark");
  return new Map(routes.map((route) => [route, route.bookmark ? { ...bearer, "X-D1-Bookmark": bookmark } : bearer]));
}

const load = (server, route, headers, seconds) =>
  loadRoute(`${server.url}/api/v1${route.path}`, { connections: CONNECTIONS, seconds, headers, name: route.name });

/** One request at a time over a kept-alive connection: what a single client waits. */
const sequential = (server, route, headers) =>
  sequentialGets(`${server.url}/api/v1${route.path}`, {
    count: SEQUENTIAL,
    headers,
    accept: (status) => status === route.status,
    name: route.name,
  });

/** Measures every route ROUNDS times, the order rotating per round; returns per-route stats and ratios. */
export async function measureRequests(server) {
  const headers = await routeHeaders(server);
  for (const route of routes) await load(server, route, headers.get(route), WARMUP_SECONDS);
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const figures = new Map();
    for (let k = 0; k < routes.length; k++) {
      const route = routes[(round + k) % routes.length];
      const loaded = await load(server, route, headers.get(route), LOAD_SECONDS);
      const alone = await sequential(server, route, headers.get(route));
      figures.set(route, { ...loaded, alone });
      log(
        `  round ${round + 1} ${route.name}: ${num(loaded.rps)} req/s, p50 ${loaded.p50} ms, p99 ${loaded.p99} ms; alone p50 ${num(alone.p50)} ms`,
      );
    }
    rounds.push(figures);
  }
  const ceiling = routes.find((route) => route.ceiling);
  return routes.map((route) => {
    const of = (pick) => stats(rounds.map((figures) => pick(figures.get(route), figures.get(ceiling))));
    return {
      route,
      rps: of((r) => r.rps),
      p50: of((r) => r.p50),
      p99: of((r) => r.p99),
      aloneP50: of((r) => r.alone.p50),
      aloneP99: of((r) => r.alone.p99),
      // Ratios within a round: both figures were measured seconds apart under the same machine state.
      throughputShare: of((r, c) => r.rps / c.rps),
      aloneRatio: of((r, c) => r.alone.p50 / c.alone.p50),
    };
  });
}

/**
 * D1 statements and round trips of a warm request of each route, on the counting Worker (bench-worker.ts):
 * what every request but a token's first in an isolate makes, and so what the load above measures. Each
 * route is called once first, so the token's own read (cold: one more trip) is not counted.
 */
export async function countRequests(countingServer) {
  const headers = await routeHeaders(countingServer);
  const get = (route) =>
    call(countingServer, "GET", route.path, { expected: route.status, headers: headers.get(route) });
  for (const route of routes) await get(route);
  const counts = {};
  for (const route of routes) {
    const { response } = await get(route);
    counts[route.name] = {
      statements: Number(response.headers.get("X-Bench-D1-Statements")),
      trips: response.headers.get("X-Bench-D1-Round-Trips") || "",
    };
  }
  return counts;
}

function tripsText(count) {
  if (!count) return "–";
  const trips = count.trips ? count.trips.split(" ").length : 0;
  return `${count.statements} in ${trips}`;
}

/** autocannon's latency histogram counts whole milliseconds. */
const wholeMs = (value) => String(Math.round(value));

export function requestsSection(results, counts, facts) {
  return [
    `Measured ${machineLine(facts)}.`,
    "",
    `Method: \`wrangler dev\` on 127.0.0.1 with \`--var API_LIMIT_PER_MINUTE:1000000000\` (the general limit of 600 calls per minute per token would otherwise refuse the load; the rate-limit Durable Object is still called on every bearer request). Load: autocannon, ${CONNECTIONS} connections, ${LOAD_SECONDS} s per route and round after a ${WARMUP_SECONDS} s warm-up, ${ROUNDS} rounds with the routes taking turns. Alone: ${SEQUENTIAL} sequential requests per route and round, one connection. Figures: median of the ${ROUNDS} rounds (min–max). Ratios are taken within each round, then the median. Latencies in ms.`,
    "",
    table(
      [
        "Route",
        "Req/s",
        "p50 under load",
        "p99 under load",
        "p50 alone",
        "p99 alone",
        "Throughput vs ping",
        "p50 alone vs ping",
        "D1 statements in round trips (warm)",
      ],
      [1, 2, 3, 4, 5, 6, 7, 8],
      results.map((r) => [
        `${r.route.name} \`GET ${r.route.path.replace(benchIds.crossSellProduct, "{id}")}\``,
        spread(r.rps),
        spread(r.p50, wholeMs),
        spread(r.p99, wholeMs),
        spread(r.aloneP50),
        spread(r.aloneP99),
        r.route.ceiling ? "1" : spread(r.throughputShare, (v) => `${Math.round(v * 100)} %`),
        r.route.ceiling ? "1" : spread(r.aloneRatio, times),
        tripsText(counts?.[r.route.name]),
      ]),
    ),
  ].join("\n");
}

export const requestsHeading = "## 1. Request overhead";

/** Part 1: the routes under load and alone on the app's own entry, their statements on the counting Worker. */
export const requestsPart = {
  title: "1. request overhead",
  block: "bench-requests",
  heading: requestsHeading,
  limitMs: 7 * 60_000,
  measure: async () => ({
    results: await step("load and alone", 4 * 60_000, () => withBenchStore({}, measureRequests)),
    counts: await step("statement counts", 3 * 60_000, () => withBenchStore({ counting: true }, countRequests)),
  }),
  section: ({ results, counts }, facts) => requestsSection(results, counts, facts),
};

if (isMain(import.meta.url)) await runParts([requestsPart], { watchdogMs: 8 * 60_000 });
