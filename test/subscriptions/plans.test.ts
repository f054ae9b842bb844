import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { listRequest, SubscriptionListQuery } from "../../src/subscriptions/filters";
import { listStatements } from "../../src/subscriptions/query";
import { uuid } from "../support/factories";

/*
 * The query plans D1 (workerd's SQLite) chooses for each filter shape. Without ANALYZE statistics the
 * planner decides from the schema alone, so these plans are the ones a store of any size gets;
 * `npm run bench` shows what they cost over 200,000 subscriptions.
 */

async function plan(statement: { toSQL(): { sql: string; params: unknown[] } }): Promise<string[]> {
  const { sql, params } = statement.toSQL();
  const result = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return result.results.map((row) => row.detail);
}

async function plans(params: Record<string, string>) {
  const request = listRequest(SubscriptionListQuery.parse(params));
  const { page, count } = listStatements(createDb(env.DB), uuid(), request);
  return { page: await plan(page), count: await plan(count) };
}

const month = { from: "2026-03-01", to: "2026-03-31" };
const created = { created_from: month.from, created_to: month.to };
const canceled = { canceled_from: month.from, canceled_to: month.to };
const periodEnd = { current_period_end_from: month.from, current_period_end_to: month.to };

/** Shape, its parameters, and the index that must drive its page. */
const shapes: [string, Record<string, string>, string][] = [
  ["no filter", {}, "subscriptions_store_created"],
  ["oldest first", { sort: "created_at" }, "subscriptions_store_created"],
  ["status", { status: "active" }, "subscriptions_store_status_created"],
  ["customer", { customer: uuid() }, "subscriptions_store_customer_created"],
  ["product", { product: uuid() }, "subscriptions_store_product_created"],
  ["variant", { variant: uuid() }, "subscriptions_store_variant_created"],
  ["created range", created, "subscriptions_store_created"],
  ["canceled range", canceled, "subscriptions_store_canceled"],
  ["current_period_end range", periodEnd, "subscriptions_store_period_end"],
  ["e-mail", { query: "Ewa@Example.com" }, "subscriptions_store_email"],
  ["status + created", { status: "canceled", ...created }, "subscriptions_store_status_created"],
  ["customer + status", { customer: uuid(), status: "active" }, "subscriptions_store_customer_created"],
  ["variant + current_period_end", { variant: uuid(), ...periodEnd }, "subscriptions_store_variant_created"],
  ["product + canceled", { product: uuid(), ...canceled }, "subscriptions_store_product_created"],
  [
    "product + status + created",
    { product: uuid(), status: "active", ...created },
    "subscriptions_store_product_created",
  ],
  ["e-mail + status", { query: "ewa@example.com", status: "active" }, "subscriptions_store_email"],
  ["variant + e-mail", { variant: uuid(), query: "ewa@example.com" }, "subscriptions_store_email"],
  [
    "customer + product + variant",
    { customer: uuid(), product: uuid(), variant: uuid() },
    "subscriptions_store_customer_created",
  ],
  ["product + text", { product: uuid(), query: "kowal" }, "subscriptions_store_product_created"],
];

describe("GET /subscriptions: query plans", () => {
  for (const [name, params, index] of shapes) {
    it(`${name}: the page is driven by ${index}, and nothing scans the table`, async () => {
      const { page, count } = await plans(params);
      expect(page[0], page.join(" | ")).toMatch(new RegExp(`^SEARCH subscriptions USING INDEX ${index} \\(`));
      for (const line of [...page, ...count]) expect(line).not.toMatch(/^SCAN subscriptions/);
      // A list index already holds the order; only a date-range index needs the rows sorted.
      const sorted = page.includes("USE TEMP B-TREE FOR ORDER BY");
      expect(sorted, page.join(" | ")).toBe(index === "subscriptions_store_canceled" || index.endsWith("_period_end"));
    });
  }

  it("each filter alone is counted from an index, without reading a single row", async () => {
    for (const [name, params] of shapes.slice(0, 10)) {
      const { count } = await plans(params);
      expect(count, name).toHaveLength(1);
      expect(count[0], name).toMatch(/^SEARCH subscriptions USING COVERING INDEX /);
    }
  });

  it("a status with a date range but no id still searches an index for both statements", async () => {
    for (const range of [canceled, periodEnd]) {
      const { page, count } = await plans({ status: "active", ...range });
      for (const line of [...page, ...count]) {
        expect(line).not.toMatch(/^SCAN subscriptions/);
        expect(line).not.toMatch(/\(store_id=\?\)$/);
      }
    }
  });

  it("free text shorter than three characters reads the store's entries of the list index in order, the names included in it", async () => {
    for (const query of ["ko", "ł", "🎸🎸"]) {
      const { page, count } = await plans({ query });
      expect(page, query).toEqual(["SEARCH subscriptions USING INDEX subscriptions_store_created (store_id=?)"]);
      expect(count, query).toEqual([
        "SEARCH subscriptions USING COVERING INDEX subscriptions_store_created (store_id=?)",
      ]);
    }
  });

  it("free text of three characters or more looks its hits up in the trigram index, the walk of the list index as the other half", async () => {
    const { page, count } = await plans({ query: "kowal" });
    expect(page).toEqual([
      "MERGE (UNION ALL)",
      "LEFT",
      "SEARCH subscriptions USING INTEGER PRIMARY KEY (rowid=?)",
      "LIST SUBQUERY 3",
      "MATERIALIZE subscription_hits",
      "SCAN subscriptions_search VIRTUAL TABLE INDEX 0:M1",
      "SCAN subscription_hits",
      "SCALAR SUBQUERY 2",
      "SCAN subscription_hits",
      "USE TEMP B-TREE FOR ORDER BY",
      "RIGHT",
      "SEARCH subscriptions USING INDEX subscriptions_store_created (store_id=?)",
      "SCALAR SUBQUERY 5",
      "SCAN subscription_hits",
    ]);
    // The hits are listed once per statement, and the count reads the same two halves.
    expect(page.filter((line) => line.startsWith("MATERIALIZE"))).toHaveLength(1);
    expect(count).toContain("SEARCH subscriptions USING INTEGER PRIMARY KEY (rowid=?)");
    expect(count).toContain("SCAN subscriptions_search VIRTUAL TABLE INDEX 0:M1");
    expect(count).toContain("SEARCH subscriptions USING COVERING INDEX subscriptions_store_created (store_id=?)");
    expect(count.filter((line) => line.startsWith("MATERIALIZE"))).toHaveLength(1);
  });

  it("indexed text with a status or a date range: hits looked up by rowid, the walk on that filter's index", async () => {
    for (const [params, walked] of [
      [{ query: "kowal", status: "active" }, "subscriptions_store_status_created (store_id=? AND status=?)"],
      [
        { query: "kowal", ...canceled },
        "subscriptions_store_canceled (store_id=? AND canceled_at>? AND canceled_at<?)",
      ],
      [{ query: "kowal", ...created }, "subscriptions_store_created (store_id=? AND created_at>? AND created_at<?)"],
    ] as const) {
      const { page, count } = await plans(params);
      expect(page[2], JSON.stringify(params)).toBe("SEARCH subscriptions USING INTEGER PRIMARY KEY (rowid=?)");
      expect(page).toContain("SCAN subscriptions_search VIRTUAL TABLE INDEX 0:M1");
      expect(page.slice(page.indexOf("RIGHT") + 1)[0]).toBe(`SEARCH subscriptions USING INDEX ${walked}`);
      for (const line of [...page, ...count]) expect(line).not.toMatch(/^SCAN subscriptions\b/);
    }
  });
});
