// The data of the subscriptions bench (part 4), written straight into the D1 file of a persist directory: two
// stores of Polish-named customers, products and variants, and 250,000 subscriptions in realistic states.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { seededRandom } from "./bench-fixture.mjs";

export const MAIN_ROWS = 200_000;
export const OTHER_ROWS = 50_000;
export const MAIN_STORE = "0b9f3c2e-5a41-4d7e-9c1a-2f6e8d4b7a10";
const OTHER_STORE = "7c2d9e14-3b8a-4f61-a5d2-9e0b1c4f8a23";

const DAY = 86_400_000;
const CREATED_FROM = Date.parse("2025-01-01T00:00:00Z");
const CREATED_UNTIL = Date.parse("2026-11-01T00:00:00Z");
const NOW = CREATED_UNTIL;

const FIRST_NAMES = [
  "Anna",
  "Maria",
  "Katarzyna",
  "Małgorzata",
  "Agnieszka",
  "Barbara",
  "Ewa",
  "Krystyna",
  "Elżbieta",
  "Zofia",
  "Jan",
  "Andrzej",
  "Piotr",
  "Krzysztof",
  "Stanisław",
  "Tomasz",
  "Paweł",
  "Józef",
  "Łukasz",
  "Michał",
  "Grzegorz",
  "Jerzy",
  "Tadeusz",
  "Adam",
  "Zbigniew",
  "Ryszard",
  "Dariusz",
  "Henryk",
  "Mariusz",
  "Kazimierz",
  "Oksana",
  "Olena",
  "Jörg",
  "Søren",
  "Νίκος",
  "Αλέξανδρος",
  "Иван",
  "Ольга",
  "José",
  "Zoë",
];
const LAST_NAMES = [
  "Nowak",
  "Kowalski",
  "Wiśniewski",
  "Wójcik",
  "Kowalczyk",
  "Kamiński",
  "Lewandowski",
  "Zieliński",
  "Szymański",
  "Woźniak",
  "Dąbrowski",
  "Kozłowski",
  "Jankowski",
  "Mazur",
  "Kwiatkowski",
  "Krawczyk",
  "Piotrowski",
  "Grabowski",
  "Nowakowski",
  "Pawłowski",
  "Michalski",
  "Nowicki",
  "Adamczyk",
  "Dudek",
  "Zając",
  "Wieczorek",
  "Jabłoński",
  "Król",
  "Majewski",
  "Olszewski",
  "Żółkiewski",
  "Straße",
  "Παπαδόπουλος",
  "Петренко",
];
const PRODUCT_NAMES = [
  "Klub Fotografa",
  "Akademia Ceramiki",
  "Kurs Excela",
  "Joga w domu",
  "Szkoła Gitary",
  "Pisanie bez tajemnic",
  "Dietetyka na co dzień",
  "Programowanie w Pythonie",
  "Kuchnia włoska",
  "Marketing 50%_off",
  "Trening siłowy",
  "Język hiszpański",
  "Rysunek dla dorosłych",
  "Finanse osobiste",
  "Ogród przez cały rok",
  "Żeglarstwo teoria",
  "Mindfulness",
  "Podcast Premium",
  "Newsletter Inwestora",
  "Fotografia mobilna",
];
const VARIANT_NAMES = ["Miesięcznie", "Kwartalnie", "Rocznie"];
const INTERVALS = [
  ["month", 1],
  ["month", 3],
  ["year", 1],
];
const STATUS_WEIGHTS = [
  ["active", 62],
  ["trialing", 7],
  ["past_due", 7],
  ["canceled", 14],
  ["incomplete", 4],
  ["incomplete_expired", 3],
  ["unpaid", 3],
];

function weighted(rng, weights) {
  const total = weights.reduce((sum, [, weight]) => sum + weight, 0);
  let roll = rng.next() * total;
  for (const [value, weight] of weights) {
    roll -= weight;
    if (roll < 0) return value;
  }
  return weights.at(-1)[0];
}

function asciiSlug(text) {
  return text
    .normalize("NFKD")
    .replace(/[łŁ]/g, "l")
    .replace(/[^\x20-\x7e]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "");
}

/** One store's catalogue and customers, and a generator of its subscriptions. */
export function storeWorld(rng, storeId, customerCount) {
  const products = PRODUCT_NAMES.map((name) => ({
    id: rng.uuid(),
    name,
    variants: VARIANT_NAMES.map((variantName, i) => ({
      id: rng.uuid(),
      name: variantName,
      amount: [4900, 13900, 49900][i],
      interval: INTERVALS[i],
    })),
  }));
  const customers = Array.from({ length: customerCount }, (_, i) => {
    const first = rng.pick(FIRST_NAMES);
    const last = rng.pick(LAST_NAMES);
    const local = `${asciiSlug(first) || "klient"}.${asciiSlug(last) || "x"}${i}`;
    return { id: rng.uuid(), name: `${first} ${last}`, email: `${local}@example${i % 7}.pl` };
  });
  return { storeId, products, customers };
}

export function subscriptionRow(rng, world, searchText) {
  const product = rng.pick(world.products);
  const variant = rng.pick(product.variants);
  const customer = rng.pick(world.customers);
  const status = weighted(rng, STATUS_WEIGHTS);
  const created = CREATED_FROM + Math.floor(rng.next() * (CREATED_UNTIL - CREATED_FROM));
  const [interval, intervalCount] = variant.interval;
  const periodDays = interval === "year" ? 365 : 30 * intervalCount;
  const periodsSince = Math.max(1, Math.ceil((NOW - created) / (periodDays * DAY)));
  const periodEnd = created + periodsSince * periodDays * DAY;
  let canceledAt = null;
  let cancelAt = null;
  if (status === "canceled" || (status === "active" && rng.chance(0.1))) {
    canceledAt = created + Math.floor(rng.next() * Math.max(DAY, NOW - created));
    cancelAt = status === "canceled" ? canceledAt : periodEnd;
  }
  return {
    id: rng.uuid(),
    store_id: world.storeId,
    customer_id: customer.id,
    customer_name: customer.name,
    customer_email: customer.email,
    customer_email_key: customer.email.toLowerCase(),
    product_id: product.id,
    variant_id: variant.id,
    hidden_by_customer: rng.chance(0.025) ? 1 : 0,
    remote_id: `sub_${rng.uuid().replaceAll("-", "").slice(0, 14)}`,
    provider: "stripe",
    status,
    variant_name: variant.name,
    product_name: product.name,
    recurring_amount: variant.amount,
    currency: "pln",
    interval,
    interval_count: intervalCount,
    quantity: 1,
    current_period_end: status === "incomplete" ? null : periodEnd,
    cancel_at: cancelAt,
    canceled_at: canceledAt,
    created_at: created,
    search_text: searchText({ customer: customer.name, product: product.name, variant: variant.name }),
  };
}

/** The D1 database file of the persist directory (miniflare keeps one SQLite file per database). */
export async function d1File(persistTo) {
  const dir = join(persistTo, "v3/d1/miniflare-D1DatabaseObject");
  const files = (await readdir(dir)).filter((name) => name.endsWith(".sqlite") && name !== "metadata.sqlite");
  if (files.length !== 1) throw new Error(`expected one D1 database file in ${dir}, found ${files.join(", ")}`);
  return join(dir, files[0]);
}

/** Writes both stores and their subscriptions into the migrated file; returns facts the shapes use. */
export function loadData(file, searchText) {
  const rng = seededRandom(20261101);
  const main = storeWorld(rng, MAIN_STORE, 60_000);
  const other = storeWorld(rng, OTHER_STORE, 15_000);
  const db = new DatabaseSync(file);
  const columns = db
    .prepare("PRAGMA table_info(subscriptions)")
    .all()
    .map((column) => column.name);
  const insert = db.prepare(
    `INSERT INTO subscriptions (${columns.map((c) => `"${c}"`).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
  );
  const customerCounts = new Map();
  const fileBytes = () =>
    db.prepare("PRAGMA page_count").get().page_count * db.prepare("PRAGMA page_size").get().page_size;
  const emptyBytes = fileBytes();
  db.exec("BEGIN");
  const insertStore = db.prepare(
    "INSERT INTO stores (id, name, plan_active, upload_limit_bytes, created_at) VALUES (?, ?, 1, NULL, ?)",
  );
  insertStore.run(MAIN_STORE, "Bench main store", CREATED_FROM);
  insertStore.run(OTHER_STORE, "Bench other store", CREATED_FROM);
  for (const [world, count] of [
    [main, MAIN_ROWS],
    [other, OTHER_ROWS],
  ]) {
    let previousCreated = null;
    for (let i = 0; i < count; i++) {
      const row = subscriptionRow(rng, world, searchText);
      // Every 25th subscription shares its creation time with the one before, as bulk imports do.
      if (previousCreated !== null && i % 25 === 0) row.created_at = previousCreated;
      previousCreated = row.created_at;
      const missing = columns.filter((column) => !(column in row));
      if (missing.length > 0) throw new Error(`the bench does not fill subscriptions columns: ${missing.join(", ")}`);
      insert.run(...columns.map((column) => row[column]));
      if (world === main) customerCounts.set(row.customer_id, (customerCounts.get(row.customer_id) ?? 0) + 1);
    }
  }
  db.exec("COMMIT");
  // What a subscription costs a database with every index of the schema (docs/scaling.md sizes shards by it).
  const bytesPerSubscription = (fileBytes() - emptyBytes) / (MAIN_ROWS + OTHER_ROWS);
  db.close();

  // The busiest customer of the main store, so the customer filter returns a realistic handful.
  const [busiestCustomer] = [...customerCounts.entries()].sort((a, b) => b[1] - a[1])[0];
  const customer = main.customers.find((c) => c.id === busiestCustomer);
  return { main, customer, bytesPerSubscription };
}
