// Item 4 of `npm run bench`: GET /api/v1/subscriptions at scale.
//
// Loads 200,000 subscriptions into one store and 50,000 into another straight into the local D1
// SQLite file (the fixture route would take far longer), starts `wrangler dev` on it, and measures,
// for each filter shape, the endpoint's latency over loopback HTTP beside the very same two SQL
// statements (page + count) run directly on the same file with node:sqlite. It fails loudly when
// D1's `EXPLAIN QUERY PLAN` of a shape scans the subscriptions table, or walks every subscription of
// the store although the shape filters (free-text search aside), or when the endpoint and the direct
// SQL disagree on a total; then it writes the figures into the "Subscriptions at scale" block of
// docs/benchmarks.md. Everything runs on 127.0.0.1 and in a throwaway directory.
//
//   npm run bench:subscriptions                   this part alone (about two and a half minutes on two cores)
//   npm run bench:subscriptions -- --plans-only   load the data and check the query plans, no timing
//   npm run bench:subscriptions -- --keep         keep the throwaway persist directory for inspection
//
// The SQL is not written twice: the script bundles src/subscriptions (filters.ts, query.ts) with
// esbuild and asks it for the statements of each shape, exactly as the Worker builds them.
import { DatabaseSync } from "node:sqlite";
import { applyLocalMigrations, loadFixture, wrangler } from "./dev-server.mjs";
import { machineLine, percentile } from "./lib/bench-report.mjs";
import { isMain, log } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withPersistedDevServer } from "./lib/bench-server.mjs";
import { d1File, loadData, MAIN_ROWS, MAIN_STORE, OTHER_ROWS } from "./lib/bench-subscription-data.mjs";
import { importSource } from "./lib/import-source.mjs";

/** Timed requests per shape after the warm-up, unless the shape's time budget runs out first. */
const SAMPLES = 40;
const WARMUP = 3;
/** Requests sent to a freshly started `wrangler dev` before any shape is timed. */
const SERVER_WARMUP = 30;
const SHAPE_BUDGET_MS = 10_000;

const TOKEN = "bench-subscriptions-token-0001";

// ---------------------------------------------------------------------------------------------
// The application's own query code
// ---------------------------------------------------------------------------------------------

/** src/subscriptions bundled for Node: the list's parsing and SQL, and the search key of a row. */
export async function loadAppQueryCode() {
  const entry = `
    export { SubscriptionListQuery, listRequest } from "./src/subscriptions/filters.ts";
    export { listStatements } from "./src/subscriptions/query.ts";
    export { subscriptionSearchText } from "./src/subscriptions/resource.ts";
    export { createDb } from "./src/db/client.ts";
  `;
  const app = await importSource(entry);
  // A D1 binding is only needed to run statements; building their SQL needs none.
  const db = app.createDb({});
  return {
    subscriptionSearchText: app.subscriptionSearchText,
    /** The page and count statements of GET /subscriptions?{params} for `storeId`. */
    statements(storeId, params) {
      const request = app.listRequest(app.SubscriptionListQuery.parse(params));
      const { page, count } = app.listStatements(db, storeId, request);
      return { page: page.toSQL(), count: count.toSQL() };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------------

/** The filter shapes measured: each filter alone, paging extremes, and a few combinations. */
export function shapes({ main, customer }) {
  const product = main.products[0];
  const variant = main.products[3].variants[1];
  const month = { from: "2026-03-01", to: "2026-03-31" };
  return [
    { name: "customer with no subscriptions (auth and routing floor)", params: { customer: MAIN_STORE } },
    { name: "no filter", params: {} },
    { name: "no filter, oldest first", params: { sort: "created_at" } },
    { name: "no filter, page 1000 of 100 per page (deep OFFSET)", params: { page: "1000", per_page: "100" } },
    { name: "status (7 %)", params: { status: "past_due" } },
    { name: "status (62 %)", params: { status: "active" } },
    { name: "customer", params: { customer: customer.id } },
    { name: "product", params: { product: product.id } },
    { name: "variant", params: { variant: variant.id } },
    { name: "created: one month", params: { created_from: month.from, created_to: month.to } },
    { name: "canceled: one month", params: { canceled_from: month.from, canceled_to: month.to } },
    {
      name: "current_period_end: one week",
      params: { current_period_end_from: "2026-11-10", current_period_end_to: "2026-11-16" },
    },
    { name: "query: e-mail (other case)", params: { query: customer.email.toUpperCase() } },
    { name: "query: text, common (surname)", params: { query: "KOWALSK" } },
    { name: "query: text, rare (full name)", params: { query: customer.name } },
    { name: "query: text, no match", params: { query: "50%_offx" } },
    { name: "status + product", params: { status: "active", product: product.id } },
    { name: "status + created month", params: { status: "canceled", created_from: month.from, created_to: month.to } },
    { name: "status + canceled month", params: { status: "active", canceled_from: month.from, canceled_to: month.to } },
    { name: "customer + status", params: { customer: customer.id, status: "active" } },
    {
      name: "product + canceled quarter",
      params: { product: product.id, canceled_from: "2026-01-01", canceled_to: "2026-03-31" },
    },
    {
      name: "variant + current_period_end month",
      params: { variant: variant.id, current_period_end_from: "2026-11-01", current_period_end_to: "2026-11-30" },
    },
    { name: "status + query text", params: { status: "past_due", query: "nowak" } },
    { name: "count only: per_page=1, status", params: { per_page: "1", status: "canceled" } },
  ];
}

const isTextSearch = (shape) => typeof shape.params.query === "string" && !shape.params.query.includes("@");

// ---------------------------------------------------------------------------------------------
// Query plans
// ---------------------------------------------------------------------------------------------

/** A SQL literal for EXPLAIN through `wrangler d1 execute`, which takes no bound parameters. */
function literal(value) {
  if (typeof value === "number") return String(value);
  return `'${String(value).replaceAll("'", "''")}'`;
}

function inline({ sql, params }) {
  let index = 0;
  return sql.replace(/\?/g, () => literal(params[index++]));
}

/** EXPLAIN QUERY PLAN of every statement, asked of D1 itself (workerd's SQLite) in one call. */
async function d1Plans(persistTo, statements) {
  const command = statements.map((statement) => `EXPLAIN QUERY PLAN ${inline(statement)}`).join(";\n");
  const child = wrangler(
    ["d1", "execute", "DB", "--local", "--persist-to", persistTo, "--json", "--command", command],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  await new Promise((resolve, reject) =>
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`wrangler d1 execute exited ${code}`)))),
  );
  const results = JSON.parse(output.slice(output.indexOf("[")));
  return results.map((result) => result.results.map((row) => row.detail));
}

/** Whether a plan reads the whole subscriptions table (or a whole index of it) instead of searching. */
const fullScan = (plan) => plan.some((line) => /^SCAN subscriptions\b/.test(line));

/**
 * Whether a plan walks every subscription of the store although the shape filters: an index searched
 * on `store_id` alone. Acceptable only without filters (the page stops at its LIMIT, the count has to
 * see them all) and for the free-text search.
 */
const storeWideWalk = (plan) => plan.some((line) => /^SEARCH subscriptions .*\(store_id=\?\)$/.test(line));

const pagingOnly = new Set(["page", "per_page", "sort"]);
const filters = (shape) => Object.keys(shape.params).some((name) => !pagingOnly.has(name));

// ---------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------

function summary(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, p50: percentile(sorted, 50), p95: percentile(sorted, 95) };
}

/** Times `run` WARMUP + up to SAMPLES times, stopping early when the shape's budget is spent. */
async function measure(run) {
  for (let i = 0; i < WARMUP; i++) await run();
  const samples = [];
  const deadline = performance.now() + SHAPE_BUDGET_MS;
  while (samples.length < SAMPLES && (samples.length < 5 || performance.now() < deadline)) {
    const start = performance.now();
    await run();
    samples.push(performance.now() - start);
  }
  return summary(samples);
}

/** One GET of the shape with `token`; returns the filtered total, or throws on anything but a 200. */
export async function requestOnce(url, shape, token = TOKEN) {
  const query = new URLSearchParams(shape.params).toString();
  const response = await fetch(`${url}/api/v1/subscriptions${query ? `?${query}` : ""}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  const body = await response.json();
  if (response.status !== 200) throw new Error(`${shape.name}: ${response.status} ${JSON.stringify(body)}`);
  return body.pagination.total;
}

export async function endpointTimes(url, shape, token = TOKEN) {
  let total = null;
  const times = await measure(async () => {
    total = await requestOnce(url, shape, token);
  });
  return { ...times, total };
}

export function sqlTimes(db, statements) {
  const page = db.prepare(statements.page.sql);
  const count = db.prepare(statements.count.sql);
  let total = null;
  // The Worker runs both statements in one D1 batch, so one sample is both of them.
  const run = () => {
    page.all(...statements.page.params);
    total = count.get(...statements.count.params)["count(*)"];
  };
  return measure(async () => run()).then((times) => ({ ...times, total }));
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const ms = (value) => (value < 10 ? value.toFixed(2) : value.toFixed(1));

function planSummary(plan) {
  return plan
    .map((line) => line.replace(/^SEARCH subscriptions USING /, "").replace(/^USE TEMP B-TREE FOR ORDER BY$/, "+ sort"))
    .join("; ");
}

/** The issue's bound: the endpoint should take at most this many times the raw SQL. */
export const SQL_RATIO_LIMIT = 3;

/**
 * The "Subscriptions at scale" block. The first shape is the floor (a customer with no subscriptions:
 * SQLite does next to nothing), so "over the floor" is what the shape's SQL adds to a request.
 */
export function subscriptionsSection({ rows, sqliteVersion, bytesPerSubscription }, facts) {
  const floor = rows[0].endpoint.p50;
  return [
    `Measured ${machineLine(facts)}; \`wrangler dev\` (workerd, local D1); direct SQL through node:sqlite (SQLite ${sqliteVersion}).`,
    "",
    `- Data: ${MAIN_ROWS.toLocaleString("en")} subscriptions in the measured store and ${OTHER_ROWS.toLocaleString("en")} in another, in one local D1 database with every index of src/db/schema.ts and no ANALYZE statistics. Created 2025-01-01..2026-10-31, one in 25 sharing its creation time with the one before; 60,000 customers; 20 products of 3 variants; 62 % active, 14 % canceled, 7 % past_due, 7 % trialing, 10 % other states. The file grew by ${Math.round(bytesPerSubscription)} bytes per subscription (row and every index; [scaling.md](scaling.md) sizes shards by it).`,
    `- Method: sequential requests over loopback, ${WARMUP} warm-up requests, then up to ${SAMPLES} timed ones per shape (at least 5; fewer than ${SAMPLES} only when a shape spends its ${SHAPE_BUDGET_MS / 1000} s budget); \`--var API_LIMIT_PER_MINUTE:100000000\` so the limiter never refuses the bench. Endpoint: the whole HTTP request through \`wrangler dev\`. SQL: the same two statements (page and count) with the same parameters, run one after the other on the same file. Median = p50, spread = p95. Ratio: endpoint p50 / SQL p50. Over the floor: endpoint p50 minus the first row's (the request's fixed cost). Times in milliseconds. Plans: \`EXPLAIN QUERY PLAN\` as D1 reports it, page statement then count statement.`,
    "",
    "| Shape | Matches | Endpoint p50 | Endpoint p95 | SQL p50 | SQL p95 | Ratio p50 | Over the floor | Page plan | Count plan |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ...rows.map((row, i) =>
      [
        "",
        `${row.shape.name} \`${new URLSearchParams(row.shape.params).toString() || "(none)"}\``,
        row.sql.total.toLocaleString("en"),
        ms(row.endpoint.p50),
        ms(row.endpoint.p95),
        ms(row.sql.p50),
        ms(row.sql.p95),
        `${(row.endpoint.p50 / row.sql.p50).toFixed(1)}×`,
        i === 0 ? "(floor)" : ms(row.endpoint.p50 - floor),
        `\`${planSummary(row.plans.page)}\``,
        `\`${planSummary(row.plans.count)}\``,
        "",
      ]
        .join(" | ")
        .trim(),
    ),
  ].join("\n");
}

export const subscriptionsHeading = "## 4. Subscriptions at scale";

// ---------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------

/**
 * Loads the data, checks the plans and (unless `plansOnly`) times every shape through the endpoint and
 * directly. Returns { rows, sqliteVersion }, or null with `plansOnly`. Throws on a scanning plan or a
 * total the endpoint and the SQL disagree on.
 */
export async function benchSubscriptions({ plansOnly = false, keep = false } = {}) {
  return withPersistedDevServer("bench-subscriptions", { keep }, async ({ persistTo, start, stop }) => {
    const app = await loadAppQueryCode();
    // Sharding off: the bench loads its rows straight into DB and measures one database.
    await applyLocalMigrations(persistTo, { shards: 0 });
    const file = await d1File(persistTo);
    log(`loading ${MAIN_ROWS + OTHER_ROWS} subscriptions into ${file}`);
    const facts = loadData(file, app.subscriptionSearchText);
    const list = shapes(facts);
    const statements = list.map((shape) => app.statements(MAIN_STORE, shape.params));
    log(`loaded: ${Math.round(facts.bytesPerSubscription)} bytes per subscription with every index`);
    log("asking D1 for the query plans");

    const planRows = await d1Plans(
      persistTo,
      statements.flatMap((s) => [s.page, s.count]),
    );
    const plans = list.map((_, i) => ({ page: planRows[2 * i], count: planRows[2 * i + 1] }));
    const scanning = list.filter((shape, i) => {
      if (isTextSearch(shape)) return false;
      const both = [...plans[i].page, ...plans[i].count];
      return fullScan(both) || (filters(shape) && storeWideWalk(both));
    });
    if (plansOnly) {
      for (const [i, shape] of list.entries()) {
        console.log(`\n${shape.name}  ${JSON.stringify(shape.params)}`);
        console.log(`  page:  ${plans[i].page.join(" | ")}`);
        console.log(`  count: ${plans[i].count.join(" | ")}`);
      }
    }
    if (scanning.length > 0) {
      throw new Error(`a table scan or store-wide walk in the plan of: ${scanning.map((s) => s.name).join(", ")}`);
    }
    log("every shape searches an index (free-text search aside)");
    if (plansOnly) return null;

    const server = await start({
      // The bench sends far more than the general per-token limit allows.
      extraArgs: ["--var", "API_LIMIT_PER_MINUTE:100000000"],
      // The rows above went straight into DB: the store must live there too.
      shards: 0,
    });
    await loadFixture(server.url, {
      stores: [{ id: MAIN_STORE, name: "Bench main store" }],
      tokens: [{ token: TOKEN, store_ids: [MAIN_STORE], abilities: ["subscriptions:read"] }],
    });
    log(`wrangler dev at ${server.url}; warming it up, then timing the endpoint`);
    // A fresh workerd compiles and caches as it goes; without this the first shape measures start-up.
    for (let i = 0; i < SERVER_WARMUP; i++) await requestOnce(server.url, list[0]);
    const endpoint = [];
    for (const shape of list) {
      endpoint.push(await endpointTimes(server.url, shape));
      log(`  ${shape.name}: p50 ${ms(endpoint.at(-1).p50)} ms, p95 ${ms(endpoint.at(-1).p95)} ms`);
    }
    await stop();

    log("timing the same SQL on the same file");
    const db = new DatabaseSync(file, { readOnly: true });
    const sqliteVersion = db.prepare("SELECT sqlite_version() AS version").get().version;
    const rows = [];
    for (const [i, shape] of list.entries()) {
      const sql = await sqlTimes(db, statements[i]);
      if (sql.total !== endpoint[i].total) {
        throw new Error(`${shape.name}: the endpoint counted ${endpoint[i].total}, the SQL ${sql.total}`);
      }
      rows.push({ shape, endpoint: endpoint[i], sql, plans: plans[i] });
      log(`  ${shape.name}: p50 ${ms(sql.p50)} ms, p95 ${ms(sql.p95)} ms`);
    }
    db.close();
    return { rows, sqliteVersion, bytesPerSubscription: facts.bytesPerSubscription };
  });
}

/** Part 4, on a server of its own; with `plansOnly` the query plans alone (no figures: null). */
export const subscriptionsPart = {
  title: "4. subscriptions at scale",
  block: "bench-subscriptions",
  heading: subscriptionsHeading,
  limitMs: 8 * 60_000,
  measure: benchSubscriptions,
  section: subscriptionsSection,
};

if (isMain(import.meta.url)) {
  const args = new Set(process.argv.slice(2));
  await runParts([subscriptionsPart], {
    watchdogMs: 9 * 60_000,
    options: { plansOnly: args.has("--plans-only"), keep: args.has("--keep") },
  });
}
