// Item 6 of `npm run bench` (issue 11): what a far client pays. On Cloudflare D1's primary and each Durable
// Object live in one place, so the latency of a read from far away is the number of sequential round trips
// to them times the distance. This part counts them per route, cold and warm, through the bench Worker
// (scripts/bench-worker.ts reports D1 round trips and Durable Object calls per request in headers), then
// runs the same routes with every D1 and Durable Object call delayed by BENCH_DELAY_MS (default 50 ms) to
// show what a warm read costs when each trip is far: the target is one delay plus 15 ms at p50.
//
//   npm run bench:latency                     this part alone; rewrites its block of docs/benchmarks.md
//   npm run bench:latency -- --delay=100      another injected delay
import { BENCH_STORE, benchIds } from "./lib/bench-fixture.mjs";
import { call } from "./lib/bench-http.mjs";
import { machineFacts, machineLine, num, percentile, table } from "./lib/bench-report.mjs";
import { isMain, step } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withBenchStore } from "./lib/bench-server.mjs";

const delayArgument = process.argv.find((arg) => arg.startsWith("--delay="));
/** The injected delay per D1 round trip and per Durable Object call, in ms. */
export const DELAY_MS = delayArgument ? Number(delayArgument.slice("--delay=".length)) : 50;
/** Sequential warm calls per route for the p50 under injected latency. */
const WARM_CALLS = 25;
/** The target for a warm read: one injected delay plus this much. */
const WARM_SLACK_MS = 15;

/**
 * Each route as a client asks it; the live product read and cross-sell list also with an `X-D1-Bookmark`,
 * which is never answered from the isolate's kept answers (src/http/read-cache.ts), so its warm calls show
 * the trip to D1 that the kept answers save.
 */
const routes = [
  { name: "product read", path: `/products/${benchIds.crossSellProduct}` },
  { name: "product read with a bookmark", path: `/products/${benchIds.crossSellProduct}`, bookmark: true },
  { name: "draft read", path: `/products/${benchIds.publishProduct}/draft` },
  { name: "cross-sells", path: `/products/${benchIds.crossSellProduct}/cross-sells` },
  { name: "cross-sells with a bookmark", path: `/products/${benchIds.crossSellProduct}/cross-sells`, bookmark: true },
  { name: "draft cross-sells", path: `/products/${benchIds.publishProduct}/draft/cross-sells` },
  { name: "subscriptions", path: "/subscriptions" },
  { name: "subscriptions, text search", path: "/subscriptions?query=klient%2012" },
];

let tokenCounter = 0;

/** A token of its own for the bench store, so its first call is cold in the isolate (not yet verified or leased). */
async function freshToken(server) {
  tokenCounter += 1;
  const token = `bench-latency-token-${Date.now()}-${tokenCounter}`;
  const response = await fetch(`${server.url}/api/v1/_dev/fixtures`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ tokens: [{ token, store_ids: [BENCH_STORE], abilities: ["*"] }] }),
  });
  if (response.status !== 201) throw new Error(`loading a token: ${response.status} ${await response.text()}`);
  return token;
}

/** One call; answers its wall time and the round trips the bench Worker counted. */
async function timedCall(server, route, token, bookmark) {
  const start = performance.now();
  const response = await fetch(`${server.url}/api/v1${route.path}`, {
    headers: {
      Authorization: `Bearer ${token}`,
      "X-Service-Store": BENCH_STORE,
      ...(bookmark ? { "X-D1-Bookmark": bookmark } : {}),
    },
  });
  await response.arrayBuffer();
  const ms = performance.now() - start;
  if (response.status !== 200) throw new Error(`${route.name}: ${response.status}`);
  const d1 = (response.headers.get("X-Bench-D1-Round-Trips") ?? "").split(" ").filter(Boolean).length;
  const durableObjects = Number(response.headers.get("X-Bench-DO-Calls") ?? Number.NaN);
  return { ms, d1, durableObjects };
}

/** Per route: the cold call of a fresh token, then warm calls; round trips and wall times. */
async function measure(server) {
  const rows = [];
  for (const route of routes) {
    await step(route.name, 120_000, async () => {
      // The bookmark comes from the bench's own token, so the fresh token's first call stays cold.
      const bookmark = route.bookmark
        ? (await call(server, "GET", route.path)).response.headers.get("X-D1-Bookmark")
        : undefined;
      if (route.bookmark && !bookmark) throw new Error(`${route.name}: no X-D1-Bookmark answered`);
      const token = await freshToken(server);
      const cold = await timedCall(server, route, token, bookmark);
      const warm = [];
      for (let i = 0; i < WARM_CALLS; i++) warm.push(await timedCall(server, route, token, bookmark));
      const median = (pick) =>
        percentile(
          warm.map(pick).sort((a, b) => a - b),
          50,
        );
      rows.push({
        route: route.name,
        cold,
        warm: { d1: median((c) => c.d1), durableObjects: median((c) => c.durableObjects), ms: median((c) => c.ms) },
      });
    });
  }
  return rows;
}

export async function benchLatency() {
  const facts = await machineFacts();
  const counts = await step("round trips (no injected delay)", 600_000, () =>
    withBenchStore({ counting: true }, measure),
  );
  const delayed = await step(`injected delay ${DELAY_MS} ms`, 600_000, () =>
    withBenchStore({ counting: true, vars: { BENCH_DELAY_MS: String(DELAY_MS) } }, measure),
  );
  const target = DELAY_MS + WARM_SLACK_MS;
  const rows = counts.map((row, i) => {
    const slow = delayed[i];
    return [
      row.route,
      `${row.cold.d1} D1 + ${row.cold.durableObjects} DO`,
      `${row.warm.d1} D1 + ${row.warm.durableObjects} DO`,
      `${num(slow.cold.ms)} ms`,
      `${num(slow.warm.ms)} ms`,
      slow.warm.ms <= target ? "yes" : "**no**",
    ];
  });
  const report = [
    machineLine(facts),
    "",
    `Round trips per request as the bench Worker counts them (a D1 batch or lone statement is one D1 trip; a Durable Object RPC is one DO call, background lease refills included when they start during the request). Cold: a token's first call in the isolate; warm: the median of the next ${WARM_CALLS}. Then the same calls with every D1 trip and DO call delayed by ${DELAY_MS} ms (BENCH_DELAY_MS), as a Worker ${DELAY_MS} ms from D1's primary and the objects would see; the target for a warm read is one delay plus ${WARM_SLACK_MS} ms (${target} ms) at p50.`,
    "",
    table(
      [
        "route",
        "cold trips",
        "warm trips (median)",
        `cold, +${DELAY_MS} ms a trip`,
        `warm p50, +${DELAY_MS} ms a trip`,
        `≤ ${target} ms`,
      ],
      [1, 2, 3, 4],
      rows,
    ),
  ].join("\n");
  return { report, counts, delayed };
}

/** Part 6: round trips counted on the counting Worker, then the same calls with every trip delayed. */
export const latencyPart = {
  title: "6. latency from far away",
  block: "latency",
  heading: "## 6. Latency from far away (round trips, injected delay)",
  limitMs: 25 * 60_000,
  measure: benchLatency,
  section: (result) => result.report,
};

if (isMain(import.meta.url)) await runParts([latencyPart], { watchdogMs: 30 * 60_000 });
