import { env } from "cloudflare:workers";
import { and, eq, getTableColumns, gte, inArray, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { bound, boundList, computed, ReusableQuery, readTogether } from "../../src/db/reusable";
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
  new ReusableQuery(getTableColumns(stores), (db, columns) =>
    db
      .select(columns)
      .from(stores)
      .where(and(eq(stores.id, bound("id", stores.id)), gte(stores.createdAt, bound("since", stores.createdAt))))
      .limit(sql.placeholder("limit")),
  );

describe("reusable statements: values, rows and shapes", () => {
  it("answer each request with its own values from the one statement built for the shape", async () => {
    const [first, second] = await seedStores("First", "Second");
    if (!first || !second) throw new Error("seeded");
    const query = storeSince();
    const db = createDb(env.DB);
    const since = new Date(Date.UTC(2025, 0, 1));

    const alone = await query.bind(db, null, { id: first.id, since, limit: 1 }).all();
    const [a, b] = await readTogether(db, [
      query.bind(db, null, { id: first.id, since, limit: 1 }),
      query.bind(db, null, { id: second.id, since, limit: 1 }),
    ]);

    expect(query.builds).toBe(1);
    expect(alone.map((row) => row.name)).toEqual(["First"]);
    expect(a.map((row) => row.name)).toEqual(["First"]);
    expect(b.map((row) => row.name)).toEqual(["Second"]);
    // A value only a later request has (a bound that excludes the row) reaches the cached statement too.
    expect(
      await query.bind(db, null, { id: second.id, since: new Date(Date.UTC(2027, 0, 1)), limit: 1 }).all(),
    ).toEqual([]);
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
    const [fromReused] = await reused.all();
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
        { name: stores.name },
        (db, columns, count: number) =>
          db
            .select(columns)
            .from(stores)
            .where(inArray(stores.id, boundList(Array.from({ length: count }, (_, i) => bound(`id${i}`, stores.id)))))
            .orderBy(stores.name),
        maxShapes,
      );
    const values = (list: string[]) => Object.fromEntries(list.map((id, i) => [`id${i}`, id]));
    const db = createDb(env.DB);

    const query = byIds();
    expect((await query.bind(db, 1, values(ids.slice(0, 1))).all()).map((row) => row.name)).toEqual(["One"]);
    expect((await query.bind(db, 2, values(ids.slice(1))).all()).map((row) => row.name)).toEqual(["Three", "Two"]);
    expect((await query.bind(db, 1, values(ids.slice(2))).all()).map((row) => row.name)).toEqual(["Three"]);
    expect(query.builds).toBe(2);

    const bounded = byIds(1);
    for (const count of [1, 2, 1]) await bounded.bind(db, count, values(ids.slice(0, count))).all();
    expect(bounded.builds).toBe(3);
  });
});

describe("reusable statements: placeholders, decoders and NULL columns", () => {
  it("refuse a request that lacks a value of the statement's placeholders", async () => {
    const db = createDb(env.DB);
    expect(() => storeSince().bind(db, null, { id: uuid(), limit: 1 }).toSQL()).toThrow(/since/);
  });

  it("decode a computed field with the decoder it declares, alone and in a batch, as Drizzle's mapWith does", async () => {
    const [store] = await seedStores("Counted");
    if (!store) throw new Error("seeded");
    const db = createDb(env.DB);
    const counted = new ReusableQuery(
      { total: computed(sql<string>`count(*)`, (raw) => `${Number(raw)} stores`) },
      (db, total) =>
        db
          .select(total)
          .from(stores)
          .where(eq(stores.id, bound("id", stores.id))),
    );
    const literal = await db
      .select({ total: sql<string>`count(*)`.mapWith((raw) => `${Number(raw)} stores`) })
      .from(stores)
      .where(eq(stores.id, store.id));

    expect(await counted.bind(db, null, { id: store.id }).all()).toEqual(literal);
    const [inBatch] = await readTogether(db, [counted.bind(db, null, { id: store.id })]);
    expect(inBatch).toEqual([{ total: "1 stores" }]);
  });

  it("answer NULL columns as null and keep the selection's key order in a batch", async () => {
    const db = createDb(env.DB);
    const id = uuid();
    await db.insert(stores).values({ id, name: "Nulls", planActive: false, createdAt: new Date() });
    const query = new ReusableQuery(getTableColumns(stores), (db, columns) =>
      db
        .select(columns)
        .from(stores)
        .where(eq(stores.id, bound("id", stores.id))),
    );
    const [[fromBatch]] = await readTogether(db, [query.bind(db, null, { id })]);
    const [literal] = await db.select().from(stores).where(eq(stores.id, id));

    expect(JSON.stringify(fromBatch)).toBe(JSON.stringify(literal));
  });
});
