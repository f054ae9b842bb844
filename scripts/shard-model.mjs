// A model of the platform target in docs/scaling.md: how many D1 shards it needs, what a shard carries, and
// what breaks first. Store sizes follow a Zipf distribution (the i-th largest store ∝ 1 / i^s), scaled so the
// mean is the target's; traffic follows size. Bytes per subscription are bench-subscriptions.mjs's measure
// (row and every index of the schema). Nothing is started: it is arithmetic over published limits.
//
//   npm run model:shards                 writes its block in docs/benchmarks.md (section 9)
//   npm run model:shards -- --print      prints it instead
import { num, table, writeBlock } from "./lib/bench-report.mjs";
import { isMain, runMain } from "./lib/bench-run.mjs";

/** The target of docs/scaling.md. */
export const TARGET = {
  stores: 100_000,
  meanSubscriptions: 10_000,
  /** Completes per second worldwide, the busiest write path. */
  completesPerSecond: 1_000,
};

/** Measured by `npm run bench:subscriptions` (docs/benchmarks.md, section 4): the file's growth per row. */
export const BYTES_PER_SUBSCRIPTION = 1691;
/** What a store holds besides subscriptions (products, variants, fields, drafts, events), generously. */
export const OTHER_BYTES_PER_STORE = 2 * 1024 * 1024;

/**
 * Cloudflare's published limits (Workers Paid), as read 2026-11-25 on developers.cloudflare.com
 * (d1/platform/limits, durable-objects/platform/limits, workers/platform/limits).
 */
export const LIMITS = {
  databaseBytes: 10e9,
  databasesPerAccount: 50_000,
  accountStorageBytes: 1e12,
  bindingsPerWorker: 5_000,
  durableObjectStorageBytes: 10e9,
  /** A Durable Object is single-threaded; Cloudflare's guidance is about 1,000 requests a second per object. */
  durableObjectRequestsPerSecond: 1_000,
};

/** A shard is filled to this share of its limit, leaving room to grow between moves. */
export const SHARD_FILL = 0.6;
/** Coordinator (Durable Object) calls a complete makes (docs/benchmarks.md, section 6). */
const OBJECT_CALLS_PER_COMPLETE = 4;

/** Store sizes (subscriptions), largest first, Zipf with exponent s, mean `mean`. */
export function zipfSizes(stores, mean, s) {
  const weights = Array.from({ length: stores }, (_, i) => 1 / (i + 1) ** s);
  const total = weights.reduce((sum, w) => sum + w, 0);
  return weights.map((w) => (w / total) * stores * mean);
}

/**
 * Places stores largest first, each on the newest shard while it has room, else on a new one (next fit: with
 * sizes falling, the newest shard is the only one with room worth looking at). A store larger than a shard
 * gets one of its own and is reported as over. Answers the shards' bytes and the stores over.
 */
export function place(storeBytes, shardCapacity) {
  const shards = [];
  const over = [];
  for (const bytes of storeBytes) {
    if (bytes > shardCapacity) {
      over.push(bytes);
      shards.push(bytes);
      continue;
    }
    const last = shards.length - 1;
    if (last >= 0 && shards[last] + bytes <= shardCapacity) shards[last] += bytes;
    else shards.push(bytes);
  }
  return { shards, over };
}

/** The model for one Zipf exponent. */
export function model(s, target = TARGET) {
  const sizes = zipfSizes(target.stores, target.meanSubscriptions, s);
  const storeBytes = sizes.map((n) => n * BYTES_PER_SUBSCRIPTION + OTHER_BYTES_PER_STORE);
  const totalBytes = storeBytes.reduce((sum, b) => sum + b, 0);
  const capacity = LIMITS.databaseBytes * SHARD_FILL;
  const { shards, over } = place(storeBytes, capacity);
  const largestShare = sizes[0] / (target.stores * target.meanSubscriptions);
  const largestStoreCompletes = target.completesPerSecond * largestShare;
  return {
    s,
    totalSubscriptions: target.stores * target.meanSubscriptions,
    totalBytes,
    largestStore: { subscriptions: sizes[0], bytes: storeBytes[0], share: largestShare },
    storesOverOneDatabase: over.length,
    subscriptionsThatFitOneShard: Math.floor((capacity - OTHER_BYTES_PER_STORE) / BYTES_PER_SUBSCRIPTION),
    shards: shards.length,
    largestStoreCompletesPerSecond: largestStoreCompletes,
    largestStoreObjectCallsPerSecond: largestStoreCompletes * OBJECT_CALLS_PER_COMPLETE,
    accountsForStorage: Math.ceil(totalBytes / LIMITS.accountStorageBytes),
  };
}

const gb = (bytes) => `${num(bytes / 1e9)} GB`;
const count = (value) => Math.round(value).toLocaleString("en");

export function modelSection(rows) {
  return [
    `Inputs: ${count(TARGET.stores)} stores, ${count(TARGET.meanSubscriptions)} subscriptions each on average (${count(rows[0].totalSubscriptions)} in all), ${count(TARGET.completesPerSecond)} completes a second worldwide; ${count(BYTES_PER_SUBSCRIPTION)} bytes per subscription (row and every index, measured by section 4's bench) plus ${OTHER_BYTES_PER_STORE / 1024 / 1024} MiB per store for the rest; store sizes Zipf-distributed (the i-th largest ∝ 1/i^s), traffic following size; a shard filled to ${SHARD_FILL * 100} % of D1's ${gb(LIMITS.databaseBytes)}. Limits (Workers Paid, read 2026-11-25): ${count(LIMITS.databasesPerAccount)} databases and ${gb(LIMITS.accountStorageBytes)} of D1 storage per account, about ${count(LIMITS.bindingsPerWorker)} bindings per Worker, a Durable Object ~${count(LIMITS.durableObjectRequestsPerSecond)} requests a second. Script: [shard-model.mjs](../scripts/shard-model.mjs).`,
    "",
    table(
      [
        "Zipf s",
        "Data",
        "Largest store",
        "Its share",
        "Stores over one database",
        "Shards",
        "Accounts for the storage",
        "Largest store: completes/s, coordinator calls/s",
      ],
      [1, 2, 3, 4, 5, 6, 7],
      rows.map((row) => [
        String(row.s),
        gb(row.totalBytes),
        `${count(row.largestStore.subscriptions)} subscriptions, ${gb(row.largestStore.bytes)}`,
        `${num(row.largestStore.share * 100)} %`,
        count(row.storesOverOneDatabase),
        count(row.shards),
        String(row.accountsForStorage),
        `${num(row.largestStoreCompletesPerSecond)}, ${num(row.largestStoreObjectCallsPerSecond)}`,
      ]),
    ),
    "",
    `A shard at ${SHARD_FILL * 100} % holds one store of up to ${count(rows[0].subscriptionsThatFitOneShard)} subscriptions; "Stores over one database" counts the stores larger than that, which no placement of whole stores can host (docs/scaling.md, "What breaks first").`,
  ].join("\n");
}

export const modelHeading = "## 9. Shards: a model of the target";

if (isMain(import.meta.url)) {
  await runMain(async () => {
    const rows = [0.6, 0.8, 1.0].map((s) => model(s));
    const section = modelSection(rows);
    if (process.argv.includes("--print")) console.log(section);
    else await writeBlock("shard-model", modelHeading, section);
  });
}
