// A store's cost beside a million subscriptions of other stores (docs/scaling.md, "Cost independent of
// size"). Two stores with the same 20,000 subscriptions, row for row, live on the two local shards: one
// alone in SHARD_0, the other in SHARD_1 beside 1,000,000 subscriptions of 100 other stores. Every shape of
// section 4 is then timed for both, alternately, through `wrangler dev` (the whole request) and as the same
// two statements run on each shard's file with node:sqlite. Every index of the schema leads with store_id,
// so the busy shard's rows should cost the store nothing but the index pages above its own.
//
//   npm run bench:neighbours            writes section 10 of docs/benchmarks.md
//   npm run bench:neighbours -- --keep  keeps the persist directory (~2 GB) for a look with sqlite3
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { endpointTimes, loadAppQueryCode, requestOnce, shapes, sqlTimes } from "./bench-subscriptions.mjs";
import { loadFixture } from "./dev-server.mjs";
import { seededRandom } from "./lib/bench-fixture.mjs";
import { machineLine } from "./lib/bench-report.mjs";
import { isMain, log } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withPersistedDevServer } from "./lib/bench-server.mjs";
import { storeWorld, subscriptionRow } from "./lib/bench-subscription-data.mjs";

const MEASURED_ROWS = 20_000;
const NEIGHBOUR_STORES = 100;
const NEIGHBOUR_ROWS_EACH = 10_000;
/** The shard with the neighbours may take this much longer per shape (p50) before the bench fails. */
export const NEIGHBOUR_RATIO_LIMIT = 1.25;

const QUIET_STORE = "4a0f6c1e-2b7d-4e59-8c13-5d9e0a7b2f41";
const BUSY_STORE = "9e3b7d52-6c1a-4f08-b2d4-1a7e5c9f3b60";
const tokenOf = (storeId) => `bench-neighbours-${storeId.slice(0, 8)}`;
const SERVER_WARMUP = 30;

/** The D1 files of the persist directory by what they hold: DB (the directory), and each measured store's home. */
async function databaseFiles(persistTo) {
  const dir = join(persistTo, "v3/d1/miniflare-D1DatabaseObject");
  const files = (await readdir(dir)).filter((name) => name.endsWith(".sqlite") && name !== "metadata.sqlite");
  const found = {};
  for (const name of files) {
    const db = new DatabaseSync(join(dir, name), { readOnly: true });
    const directory = db.prepare("SELECT count(*) AS n FROM store_directory").get().n;
    const stores = db
      .prepare("SELECT id FROM stores")
      .all()
      .map((row) => row.id);
    db.close();
    if (directory > 0) found.global = join(dir, name);
    else if (stores.includes(QUIET_STORE)) found.quiet = join(dir, name);
    else if (stores.includes(BUSY_STORE)) found.busy = join(dir, name);
  }
  if (!found.global || !found.quiet || !found.busy || found.quiet === found.busy) {
    throw new Error(`expected DB and the two stores on different shards in ${dir}, found ${JSON.stringify(found)}`);
  }
  return found;
}

function inserter(db) {
  const columns = db
    .prepare("PRAGMA table_info(subscriptions)")
    .all()
    .map((column) => column.name);
  const statement = db.prepare(
    `INSERT INTO subscriptions (${columns.map((c) => `"${c}"`).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
  );
  return (row) => statement.run(...columns.map((column) => row[column]));
}

/**
 * Writes the measured store's rows into both homes (the same rows, each under its store) and the neighbours'
 * into the busy one; returns the facts the shapes use and the busy file's growth.
 */
function loadData(files, searchText) {
  const rng = seededRandom(20261125);
  const measured = storeWorld(rng, QUIET_STORE, 6_000);
  const rows = [];
  const customerCounts = new Map();
  let previousCreated = null;
  for (let i = 0; i < MEASURED_ROWS; i++) {
    const row = subscriptionRow(rng, measured, searchText);
    if (previousCreated !== null && i % 25 === 0) row.created_at = previousCreated;
    previousCreated = row.created_at;
    rows.push(row);
    customerCounts.set(row.customer_id, (customerCounts.get(row.customer_id) ?? 0) + 1);
  }
  for (const [file, storeId] of [
    [files.quiet, QUIET_STORE],
    [files.busy, BUSY_STORE],
  ]) {
    const db = new DatabaseSync(file);
    const insert = inserter(db);
    db.exec("BEGIN");
    for (const row of rows) insert({ ...row, store_id: storeId });
    db.exec("COMMIT");
    db.close();
  }

  const db = new DatabaseSync(files.busy);
  const insert = inserter(db);
  const insertStore = db.prepare(
    "INSERT INTO stores (id, name, plan_active, upload_limit_bytes, created_at) VALUES (?, ?, 1, NULL, ?)",
  );
  const pageBytes = () =>
    db.prepare("PRAGMA page_count").get().page_count * db.prepare("PRAGMA page_size").get().page_size;
  for (let s = 0; s < NEIGHBOUR_STORES; s++) {
    const world = storeWorld(rng, rng.uuid(), 3_000);
    db.exec("BEGIN");
    insertStore.run(world.storeId, `Neighbour ${s + 1}`, Date.parse("2025-01-01T00:00:00Z"));
    for (let i = 0; i < NEIGHBOUR_ROWS_EACH; i++) insert(subscriptionRow(rng, world, searchText));
    db.exec("COMMIT");
    if ((s + 1) % 20 === 0) log(`  ${((s + 1) * NEIGHBOUR_ROWS_EACH).toLocaleString("en")} neighbours loaded`);
  }
  const busyBytes = pageBytes();
  db.close();

  const [busiestCustomer] = [...customerCounts.entries()].sort((a, b) => b[1] - a[1])[0];
  const customer = measured.customers.find((c) => c.id === busiestCustomer);
  return { main: measured, customer, busyBytes };
}

/** Loads, measures and returns a row per shape: endpoint and SQL p50 for each store. */
export async function benchNeighbours({ keep = false } = {}) {
  return withPersistedDevServer("bench-neighbours", { keep }, async ({ persistTo, start, stop }) => {
    const app = await loadAppQueryCode();
    // The stores are placed by the fixture loader, as any store is: the first on SHARD_0, the next on SHARD_1.
    let server = await start();
    await loadFixture(server.url, {
      stores: [
        { id: QUIET_STORE, name: "Alone on its shard" },
        { id: BUSY_STORE, name: "Beside a million" },
      ],
      tokens: [QUIET_STORE, BUSY_STORE].map((storeId) => ({
        token: tokenOf(storeId),
        store_ids: [storeId],
        abilities: ["subscriptions:read"],
      })),
    });
    await stop();

    const files = await databaseFiles(persistTo);
    log(
      `loading ${MEASURED_ROWS.toLocaleString("en")} subscriptions into each home and ${(NEIGHBOUR_STORES * NEIGHBOUR_ROWS_EACH).toLocaleString("en")} of ${NEIGHBOUR_STORES} other stores beside the busy one`,
    );
    const facts = loadData(files, app.subscriptionSearchText);
    log(`loaded: the busy shard's file is ${(facts.busyBytes / 2 ** 30).toFixed(2)} GiB`);
    const list = shapes(facts);

    // The bench sends far more than the general per-token limit allows.
    server = await start({ extraArgs: ["--var", "API_LIMIT_PER_MINUTE:100000000"] });
    log(`wrangler dev at ${server.url}; warming up, then timing both stores shape by shape`);
    for (let i = 0; i < SERVER_WARMUP; i++) {
      await requestOnce(server.url, list[1], tokenOf(QUIET_STORE));
      await requestOnce(server.url, list[1], tokenOf(BUSY_STORE));
    }
    const endpoint = [];
    for (const shape of list) {
      const quiet = await endpointTimes(server.url, shape, tokenOf(QUIET_STORE));
      const busy = await endpointTimes(server.url, shape, tokenOf(BUSY_STORE));
      endpoint.push({ quiet, busy });
      log(`  ${shape.name}: p50 ${quiet.p50.toFixed(2)} ms alone, ${busy.p50.toFixed(2)} ms beside a million`);
    }
    await stop();

    log("timing the same SQL on each shard's file");
    const quietDb = new DatabaseSync(files.quiet, { readOnly: true });
    const busyDb = new DatabaseSync(files.busy, { readOnly: true });
    const rows = [];
    for (const [i, shape] of list.entries()) {
      const quiet = await sqlTimes(quietDb, app.statements(QUIET_STORE, shape.params));
      const busy = await sqlTimes(busyDb, app.statements(BUSY_STORE, shape.params));
      const totals = [quiet.total, busy.total, endpoint[i].quiet.total, endpoint[i].busy.total];
      if (new Set(totals).size !== 1) throw new Error(`${shape.name}: the totals differ: ${totals.join(", ")}`);
      rows.push({ shape, total: quiet.total, endpoint: endpoint[i], sql: { quiet, busy } });
    }
    quietDb.close();
    busyDb.close();
    return { rows, busyBytes: facts.busyBytes };
  });
}

const ms = (value) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
const ratio = (a, b) => `${(a / b).toFixed(2)}×`;

/** Free-text shapes (a `query` that is not an e-mail): they search the shard-wide trigram index. */
const isTextSearch = (shape) => typeof shape.params.query === "string" && !shape.params.query.includes("@");

/**
 * The section's block, with whether every indexed shape's SQL stayed within the bound beside the neighbours.
 * The verdict is read from the SQL times: the endpoint's are dominated by the request's fixed cost and this
 * machine's noise.
 */
export function neighboursSection({ rows, busyBytes }, facts) {
  const sqlRatio = (row) => row.sql.busy.p50 / row.sql.quiet.p50;
  const indexed = rows.filter((row) => !isTextSearch(row.shape)).map(sqlRatio);
  const text = rows.filter((row) => isTextSearch(row.shape));
  const worst = Math.max(...indexed);
  return [
    `Measured ${machineLine(facts)}; \`wrangler dev\` with two local shards (workerd, local D1); SQL through node:sqlite.`,
    "",
    `- Data: one store's ${MEASURED_ROWS.toLocaleString("en")} subscriptions, the same rows under two store ids placed by the fixture loader on \`SHARD_0\` (alone) and \`SHARD_1\`, where ${(NEIGHBOUR_STORES * NEIGHBOUR_ROWS_EACH).toLocaleString("en")} subscriptions of ${NEIGHBOUR_STORES} other stores sit beside it (that file: ${(busyBytes / 2 ** 30).toFixed(2)} GiB). The shapes are section 4's.`,
    `- Method: for each shape, the store alone and then the store beside the million, each with section 4's warm-up and samples; SQL: the page and count statements on each shard's file. Ratio: beside / alone, p50.`,
    `- Every shape that searches an index: SQL ratio ${Math.min(...indexed).toFixed(2)}–${worst.toFixed(2)}×, ${worst <= NEIGHBOUR_RATIO_LIMIT ? "within" : "**over**"} the bound of ${NEIGHBOUR_RATIO_LIMIT}× (the same cost, allowing for noise). The free-text search (${text.length} shapes) is not independent of the shard: its trigram index spans every store of the shard, SQL ratio ${text.map((row) => `${sqlRatio(row).toFixed(1)}×`).join(", ")} (docs/scaling.md, "What breaks first").`,
    "",
    "| Shape | Matches | Endpoint p50 alone | Endpoint p50 beside a million | Ratio | SQL p50 alone | SQL p50 beside a million | Ratio |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (row) =>
        `| ${row.shape.name} | ${row.total.toLocaleString("en")} | ${ms(row.endpoint.quiet.p50)} | ${ms(row.endpoint.busy.p50)} | ${ratio(row.endpoint.busy.p50, row.endpoint.quiet.p50)} | ${ms(row.sql.quiet.p50)} | ${ms(row.sql.busy.p50)} | ${ratio(row.sql.busy.p50, row.sql.quiet.p50)} |`,
    ),
  ].join("\n");
}

export const neighboursHeading = "## 10. A store beside a million subscriptions of others";

/** Part 10, on a server of its own; with `keep` its persist directory is kept for inspection. */
export const neighboursPart = {
  title: "10. a store beside a million others",
  block: "bench-neighbours",
  heading: neighboursHeading,
  limitMs: 18 * 60_000,
  measure: benchNeighbours,
  section: neighboursSection,
};

if (isMain(import.meta.url)) {
  await runParts([neighboursPart], { watchdogMs: 20 * 60_000, options: { keep: process.argv.includes("--keep") } });
}
