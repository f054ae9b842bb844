// Events (docs/events.md) through `wrangler dev`, its local queue and a real receiver on 127.0.0.1 that
// verifies every signature with the standardwebhooks package, as a store's would:
//
//   1. publish latency with events off (the product has no webhook_url) and on (it points at the receiver):
//      the same large publish as part 5, the two modes interleaved run by run so the machine's drift
//      falls on both; the event's row is one more statement in the publish batch, its enqueue runs after
//      the answer;
//   2. delivery throughput: 1,000 live custom-field deletes on 1,000 products, 20 at a time, each making one
//      event; timed from the first delete until the receiver has verified all 1,000, with each event's lag
//      from the moment its delete was sent to its arrival (an event may arrive before its answer does).
//
//   npm run bench:events     rewrites its own block at the end of docs/benchmarks.md

import { loadFixture } from "./dev-server.mjs";
import { BENCH_STORE, benchFixture, benchIds, publishReloadDocument } from "./lib/bench-fixture.mjs";
import { call } from "./lib/bench-http.mjs";
import { machineLine, num, percentile, spread, stats, table } from "./lib/bench-report.mjs";
import { isMain, log, step } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withBenchServer } from "./lib/bench-server.mjs";
import { startReceiver } from "./webhook-receiver.mjs";

const MINUTE = 60_000;
const WARMUP = 2;
const RUNS = 15;
const EVENTS = 1000;
const CONCURRENCY = 20;
/** The bench store's signing secret (a fixed development value, so the receiver knows it up front). */
const SECRET = `whsec_${Buffer.from("storefront-checkout-bench-secret").toString("base64")}`;

/** The publish product, reloaded with its draft, with `webhookUrl` on the live product (the draft inherits it). */
function publishDocument(webhookUrl) {
  const document = publishReloadDocument();
  document.stores = document.stores.map((store) => ({ ...store, webhook_secret: SECRET }));
  document.products = document.products.map((product) => ({ ...product, webhook_url: webhookUrl }));
  return document;
}

async function publishOnce(server, webhookUrl) {
  await loadFixture(server.url, publishDocument(webhookUrl));
  const start = performance.now();
  await call(server, "POST", `/products/${benchIds.publishProduct}/publish`);
  return performance.now() - start;
}

async function until(done, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what}: not done within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Part 1: interleaved publishes without and with an event. */
export async function measurePublishLatency(server, receiver) {
  const url = `${receiver.url}/bench`;
  for (let i = 0; i < WARMUP; i++) {
    await publishOnce(server, null);
    await publishOnce(server, url);
  }
  const off = [];
  const on = [];
  for (let i = 0; i < RUNS; i++) {
    // Alternate which goes first, so neither always runs right after a reload of the other.
    if (i % 2 === 0) {
      off.push(await publishOnce(server, null));
      on.push(await publishOnce(server, url));
    } else {
      on.push(await publishOnce(server, url));
      off.push(await publishOnce(server, null));
    }
  }
  // Every publish with a target made exactly one event, delivered and verified.
  const expected = WARMUP + RUNS;
  await until(() => new Set(verified(receiver).map((d) => d.id)).size >= expected, MINUTE, "publish events");
  const result = { off: stats(off), on: stats(on), delivered: new Set(verified(receiver).map((d) => d.id)).size };
  log(`  publish: off p50 ${num(result.off.median)} ms, on p50 ${num(result.on.median)} ms`);
  return result;
}

const verified = (receiver) => receiver.deliveries.filter((delivery) => delivery.event !== null);

/** 1,000 products of the bench store, each with one live custom field and the receiver as webhook_url. */
function throughputDocument(url) {
  const products = Array.from({ length: EVENTS }, (_, i) => {
    const id = crypto.randomUUID();
    return {
      id,
      store_id: BENCH_STORE,
      status: "published",
      name: `Events ${i + 1}`,
      slug: `bench-events-${id.slice(0, 8)}`,
      webhook_url: url,
      custom_fields: [{ name: "nip", enabled: true, order: 0 }],
      variants: [{ id: crypto.randomUUID(), name: "Standard", amount: 100, currency: "pln" }],
    };
  });
  return products;
}

/** Part 2: 1,000 events, made by deletes 20 at a time, until the receiver has verified them all. */
export async function measureThroughput(server, receiver) {
  const url = `${receiver.url}/throughput`;
  const products = throughputDocument(url);
  for (let i = 0; i < products.length; i += 200) {
    await loadFixture(server.url, { stores: [], products: products.slice(i, i + 200) });
  }
  const sentAt = new Map();
  const start = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < products.length) {
      const product = products[next++];
      sentAt.set(product.id, Date.now());
      await call(server, "DELETE", `/products/${product.id}/custom-fields/nip`, { expected: 204 });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const apiDone = Date.now();
  const arrivals = () => verified(receiver).filter((d) => d.path === "/throughput");
  await until(() => new Set(arrivals().map((d) => d.id)).size >= EVENTS, 10 * MINUTE, "1,000 deliveries");
  const all = arrivals();
  const firstArrival = new Map();
  for (const delivery of all) if (!firstArrival.has(delivery.id)) firstArrival.set(delivery.id, delivery);
  const done = Math.max(...[...firstArrival.values()].map((d) => d.at));
  const lags = [...firstArrival.values()].map((d) => d.at - sentAt.get(d.event.data.product_id)).sort((a, b) => a - b);
  const result = {
    apiSeconds: (apiDone - start) / 1000,
    totalSeconds: (done - start) / 1000,
    requests: all.length,
    unique: firstArrival.size,
    lagP50: percentile(lags, 0.5),
    lagP95: percentile(lags, 0.95),
    lagMax: lags.at(-1),
  };
  log(`  throughput: ${EVENTS} events in ${num(result.totalSeconds)} s (${num(EVENTS / result.totalSeconds)} /s)`);
  return result;
}

export function eventsSection(publish, throughput, facts) {
  const added = publish.on.median - publish.off.median;
  return [
    `Measured ${machineLine(facts)}.`,
    "",
    `Method: \`wrangler dev\` (its local queue and consumer) and a receiver on 127.0.0.1 that verifies every request with the \`standardwebhooks\` package and answers 204 (scripts/webhook-receiver.mjs). Publish: part 5's product (50 variants, 100 custom fields, 20 cross-sells, a draft of the same size) reloaded before each run (not timed), without a \`webhook_url\` (events off) and with one (on), interleaved; ${WARMUP} warm-up pairs, then ${RUNS}. Throughput: ${EVENTS} live custom-field deletes on ${EVENTS} products, ${CONCURRENCY} at a time, each making one event; from the first delete until the receiver had verified all ${EVENTS}.`,
    "",
    table(
      ["Figure", "Value"],
      [1],
      [
        ["Publish latency, events off, median (min–max)", `${spread(publish.off)} ms`],
        ["Publish latency, events on, median (min–max)", `${spread(publish.on)} ms`],
        ["Added by an event, median", `${num(added)} ms (${num((added / publish.off.median) * 100)} %)`],
        ["Publish events delivered and verified", `${publish.delivered} of ${WARMUP + RUNS}`],
        [`${EVENTS} deletes answered`, `${num(throughput.apiSeconds)} s (${num(EVENTS / throughput.apiSeconds)} /s)`],
        [
          `${EVENTS} events delivered and verified`,
          `${num(throughput.totalSeconds)} s after the first delete (${num(EVENTS / throughput.totalSeconds)} events/s)`,
        ],
        [
          "Lag from sending a delete to its event's arrival, p50 / p95 / max",
          `${num(throughput.lagP50)} / ${num(throughput.lagP95)} / ${num(throughput.lagMax)} ms`,
        ],
        ["Requests the receiver got (duplicates included)", `${throughput.requests} for ${throughput.unique} events`],
      ],
    ),
  ].join("\n");
}

export const eventsHeading = "## 7. Events to webhook_url";

/** Publish latency and delivery throughput, on one server against a real receiver. */
async function benchEvents() {
  const receiver = await startReceiver({ secrets: [SECRET] });
  try {
    return await withBenchServer(
      { fixture: { ...benchFixture(), ...publishDocument(null) }, vars: { WEBHOOK_ALLOW_HTTP: "on" } },
      async (server) => ({
        publish: await step("7a. publish, events off and on", 5 * MINUTE, () =>
          measurePublishLatency(server, receiver),
        ),
        throughput: await step("7b. 1,000 events", 12 * MINUTE, () => measureThroughput(server, receiver)),
      }),
    );
  } finally {
    await receiver.close();
  }
}

/** Part 7 (events; not yet in the full run). */
export const eventsPart = {
  title: "7. events to webhook_url",
  block: "bench-events",
  heading: eventsHeading,
  limitMs: 19 * MINUTE,
  measure: benchEvents,
  section: ({ publish, throughput }, facts) => eventsSection(publish, throughput, facts),
};

if (isMain(import.meta.url)) await runParts([eventsPart], { watchdogMs: 20 * MINUTE });
