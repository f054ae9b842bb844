// Item 5 of `npm run bench`: publishing a large product through `wrangler dev`.
//
// The product has 50 variants, 100 custom fields and 20 cross-sells, and a draft overlay of the same
// size (no wall, footer or player, so the project platform is not involved). Every run reloads it with
// the fixture route (which restores the draft the previous publish consumed; not timed) and then times
// POST /products/{id}/publish over loopback, the whole request including the response.
//
// D1 statements per publish are measured, not read off the code: the same requests go to the counting
// Worker (scripts/bench-worker.ts), whose wrapped D1 binding reports every statement and round trip in
// response headers. The count of insert statements the chunking rule of src/db/batch.ts predicts is
// computed with that very code (bundled with esbuild) and printed beside it as a cross-check.
//
//   npm run bench:publish     this part alone; rewrites its block of docs/benchmarks.md

import { loadFixture } from "./dev-server.mjs";
import { benchIds, benchSizes, publishReloadDocument } from "./lib/bench-fixture.mjs";
import { call } from "./lib/bench-http.mjs";
import { machineLine, num, spread, stats, table } from "./lib/bench-report.mjs";
import { isMain, log, step } from "./lib/bench-run.mjs";
import { runParts } from "./lib/bench-runner.mjs";
import { withBenchStore } from "./lib/bench-server.mjs";
import { importSource } from "./lib/import-source.mjs";

const WARMUP = 2;
const RUNS = 15;
const COUNTED_RUNS = 3;

const publishPath = `/products/${benchIds.publishProduct}/publish`;

/** Restores the draft, then publishes it; returns the publish's latency and its response. */
async function publishOnce(server) {
  await loadFixture(server.url, publishReloadDocument());
  const start = performance.now();
  const { response, body } = await call(server, "POST", publishPath);
  const ms = performance.now() - start;
  // A publish that did not apply the overlay would be fast and wrong.
  if (body.name !== "Bench publish product (draft)" || body.variants.length !== benchSizes.publishVariants) {
    throw new Error(`the publish did not apply the draft: ${body.name}, ${body.variants.length} variants`);
  }
  return { ms, response };
}

export async function measurePublish(server) {
  for (let i = 0; i < WARMUP; i++) await publishOnce(server);
  const samples = [];
  for (let i = 0; i < RUNS; i++) samples.push((await publishOnce(server)).ms);
  const latency = stats(samples);
  log(`  publish: p50 ${num(latency.median)} ms (${num(latency.min)}–${num(latency.max)})`);
  return { latency, samples };
}

/**
 * Statements and round trips of a publish on the counting Worker, after one uncounted publish (the server is
 * new: the first request also verifies the token, one more trip, which the next ones find cached); every
 * counted run must agree.
 */
export async function countPublish(countingServer) {
  await publishOnce(countingServer);
  const seen = new Set();
  let count;
  for (let i = 0; i < COUNTED_RUNS; i++) {
    const { response } = await publishOnce(countingServer);
    const trips = response.headers.get("X-Bench-D1-Round-Trips").split(" ").map(Number);
    count = { statements: Number(response.headers.get("X-Bench-D1-Statements")), trips };
    seen.add(trips.join(" "));
  }
  if (seen.size !== 1) throw new Error(`publishes ran different statements: ${[...seen].join(" / ")}`);
  return count;
}

/** Insert statements src/db/batch.ts makes for the overlay's rows, computed by that code itself. */
export async function expectedInserts() {
  const entry = `
    export { insertStatements } from "./src/db/batch.ts";
    export { createDb } from "./src/db/client.ts";
    export { variants, customFields, crossSells } from "./src/db/schema.ts";
  `;
  const code = await importSource(entry);
  // Building statements needs no binding; only running them would.
  const db = code.createDb({});
  const inserts = (table, rows) =>
    code.insertStatements(
      db,
      table,
      Array.from({ length: rows }, () => ({})),
    ).length;
  return {
    variants: inserts(code.variants, benchSizes.publishVariants),
    customFields: inserts(code.customFields, benchSizes.publishCustomFields),
    crossSells: inserts(code.crossSells, benchSizes.publishCrossSells),
  };
}

export function publishSection(result, count, inserts, facts) {
  const largest = Math.max(...count.trips);
  const otherTrips = count.trips.length - 1;
  const insertTotal = inserts.variants + inserts.customFields + inserts.crossSells;
  // Guard, product update, three deletes, the inserts, the draft delete (src/products/publish.ts persistOverlay).
  const predictedBatch = 1 + 1 + 3 + insertTotal + 1;
  return [
    `Measured ${machineLine(facts)}.`,
    "",
    `Method: a product with ${benchSizes.publishVariants} variants, ${benchSizes.publishCustomFields} custom fields and ${benchSizes.publishCrossSells} cross-sells and a draft overlay of the same size (new names, prices, fields and offers; no wall, footer or player). Each run reloads it through \`POST /api/v1/_dev/fixtures\` (not timed), then times \`POST /products/{id}/publish\` over loopback through \`wrangler dev\`, response included; ${WARMUP} warm-up runs, then ${RUNS}. D1 statements: counted by the counting Worker (scripts/bench-worker.ts) over ${COUNTED_RUNS} publishes after an uncounted one (a new server's first request also verifies the token), which all ran the same statements.`,
    "",
    table(
      ["Figure", "Value"],
      [1],
      [
        ["Publish latency, median (min–max)", `${spread(result.latency)} ms`],
        ["D1 statements per publish request (measured)", String(count.statements)],
        [
          "D1 round trips per publish request (measured)",
          `${count.trips.length}: statements per trip ${count.trips.join(", ")}`,
        ],
        [
          "The atomic persist batch (measured)",
          `${largest} statements in one round trip; the other ${otherTrips} trips carry ${count.statements - largest}`,
        ],
        [
          "The persist batch by the code's own chunking rule (computed)",
          `${predictedBatch} = guard + product update + 3 deletes + inserts (${inserts.variants} for ${benchSizes.publishVariants} variants, ${inserts.customFields} for ${benchSizes.publishCustomFields} custom fields, ${inserts.crossSells} for ${benchSizes.publishCrossSells} cross-sells; at most 100 bound parameters each) + draft delete`,
        ],
      ],
    ),
  ].join("\n");
}

export const publishHeading = "## 5. Publish";

/** Part 5: the latency on the app's own entry, the statements on the counting Worker, the inserts predicted. */
export const publishPart = {
  title: "5. publish",
  block: "bench-publish",
  heading: publishHeading,
  limitMs: 7 * 60_000,
  measure: async () => ({
    result: await step("latency", 3 * 60_000, () => withBenchStore({}, measurePublish)),
    count: await step("statement counts", 3 * 60_000, () => withBenchStore({ counting: true }, countPublish)),
    inserts: await step("expected inserts", 60_000, () => expectedInserts()),
  }),
  section: ({ result, count, inserts }, facts) => publishSection(result, count, inserts, facts),
};

if (isMain(import.meta.url)) await runParts([publishPart], { watchdogMs: 8 * 60_000 });
