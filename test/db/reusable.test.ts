import { env } from "cloudflare:workers";
import { and, eq, gte, inArray, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { bound, ReusableQuery } from "../../src/db/reusable";
import { stores } from "../../src/db/schema";
import { uuid } from "../support/factories";

/*
 * Statements built once per isolate for each shape and bound per request (src/db/reusable.ts). The rule they
 * rest on: the builder sees only the shape, every value is a placeholder filled per request, so a cached
 * statement answers each request with that request's values and nothing of another's.
 */

async function seedStores(...names: string[]) {
  const db = createDb(env.DB);
  const rows = names.map((name, i) => ({
    id: uuid(),
    name,
    planActive: i % 2 === 0,
    createdAt: new Date(Date.UTC(2026, 0, 1 + i)),
  }));
  await db.insert(stores).values(rows);
  return rows;
}

/** A store by id, created at or after `since`: a text and a timestamp placeholder, the limit one too. */
const storeSince = () =>
  new ReusableQuery((db) =>
    db
      .select()
      .from(stores)
      .where(and(eq(stores.id, bound("id", stores.id)), gte(stores.createdAt, bound("since", stores.createdAt))))
      .limit(sql.placeholder("limit")),
  );

describe("reusable statements", () => {
  it("answer each request with its own values from the one statement built for the shape", async () => {
    const [first, second] = await seedStores("First", "Second");
    if (!first || !second) throw new Error("seeded");
    const query = storeSince();
    const db = createDb(env.DB);
    const since = new Date(Date.UTC(2025, 0, 1));

    const alone = await query.bind(db, null, { id: first.id, since, limit: 1 });
    const [a, b] = await db.batch([
      query.bind(db, null, { id: first.id, since, limit: 1 }),
      query.bind(db, null, { id: second.id, since, limit: 1 }),
    ]);

    expect(query.builds).toBe(1);
    expect(alone.map((row) => row.name)).toEqual(["First"]);
    expect(a.map((row) => row.name)).toEqual(["First"]);
    expect(b.map((row) => row.name)).toEqual(["Second"]);
    // A value only a later request has (a bound that excludes the row) reaches the cached statement too.
    expect(await query.bind(db, null, { id: second.id, since: new Date(Date.UTC(2027, 0, 1)), limit: 1 })).toEqual([]);
  });

  it("map rows and encode values as the statement built with the values in it does", async () => {
    const [store] = await seedStores("Mapped");
    if (!store) throw new Error("seeded");
    const db = createDb(env.DB);
    const since = new Date(Date.UTC(2025, 0, 1));
    const literal = db
      .select()
      .from(stores)
      .where(and(eq(stores.id, store.id), gte(stores.createdAt, since)))
      .limit(1);
    const reused = storeSince().bind(db, null, { id: store.id, since, limit: 1 });

    expect(reused.toSQL()).toEqual(literal.toSQL());
    const [fromReused] = await reused;
    const [fromLiteral] = await literal;
    expect(fromReused).toEqual(fromLiteral);
    expect(fromReused?.createdAt).toBeInstanceOf(Date);
    // Same keys in the same order: the JSON a route answers from them is the same bytes.
    expect(JSON.stringify(fromReused)).toBe(JSON.stringify(fromLiteral));
  });

  it("build a shape once, build each other shape on its own, and keep at most maxShapes of them", async () => {
    const rows = await seedStores("One", "Two", "Three");
    const ids = rows.map((row) => row.id);
    const byIds = (maxShapes?: number) =>
      new ReusableQuery(
        (db, count: number) =>
          db
            .select({ name: stores.name })
            .from(stores)
            .where(
              inArray(
                stores.id,
                Array.from({ length: count }, (_, i) => bound(`id${i}`, stores.id)),
              ),
            )
            .orderBy(stores.name),
        maxShapes,
      );
    const values = (list: string[]) => Object.fromEntries(list.map((id, i) => [`id${i}`, id]));
    const db = createDb(env.DB);

    const query = byIds();
    expect((await query.bind(db, 1, values(ids.slice(0, 1)))).map((row) => row.name)).toEqual(["One"]);
    expect((await query.bind(db, 2, values(ids.slice(1)))).map((row) => row.name)).toEqual(["Three", "Two"]);
    expect((await query.bind(db, 1, values(ids.slice(2)))).map((row) => row.name)).toEqual(["Three"]);
    expect(query.builds).toBe(2);

    const bounded = byIds(1);
    for (const count of [1, 2, 1]) await bounded.bind(db, count, values(ids.slice(0, count)));
    expect(bounded.builds).toBe(3);
  });

  it("refuse a request that lacks a value of the statement's placeholders", async () => {
    const db = createDb(env.DB);
    expect(() => storeSince().bind(db, null, { id: uuid(), limit: 1 }).toSQL()).toThrow(/since/);
  });
});
