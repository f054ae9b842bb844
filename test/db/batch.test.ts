import { env } from "cloudflare:workers";
import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { abortUnless, isGuardAbort, runAtomically } from "../../src/db/batch";
import { createDb } from "../../src/db/client";
import { stores } from "../../src/db/schema";
import { uuid } from "../support/factories";

describe("atomic batches", () => {
  it("abortUnless rolls back every statement of the batch when its condition is false", async () => {
    const db = createDb(env.DB);
    const id = uuid();
    const attempt = runAtomically(db, [
      db.insert(stores).values({ id, name: "Rolled back", planActive: true, createdAt: new Date() }),
      abortUnless(db, sql`1 = 0`),
    ]);
    const error = await attempt.then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(isGuardAbort(error)).toBe(true);
    expect(await db.select().from(stores).where(eq(stores.id, id))).toEqual([]);
  });

  it("abortUnless lets the batch through when its condition holds", async () => {
    const db = createDb(env.DB);
    const id = uuid();
    await runAtomically(db, [
      abortUnless(db, sql`1 = 1`),
      db.insert(stores).values({ id, name: "Kept", planActive: true, createdAt: new Date() }),
    ]);
    expect(await db.select({ name: stores.name }).from(stores).where(eq(stores.id, id))).toEqual([{ name: "Kept" }]);
  });
});
