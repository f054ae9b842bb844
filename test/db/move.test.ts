import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { type MoveStep, moveStore } from "../../src/db/move";
import { homeBinding } from "../../src/db/shards";
import { expectJson, expectStatus } from "../support/http";
import {
  call,
  client,
  directory,
  fieldNames,
  movingEnv,
  rows,
  type StoreWithRows,
  storeRowCount,
  storeWithRows,
  type Traced,
} from "../support/moves";
import { poll } from "../support/poll";

/**
 * Issue 24, item 3: a store moves to another shard while its API is in use (src/db/move.ts). The move runs
 * once, under a stream of reads and writes; each test below checks one rule on what that run recorded.
 */

type Read = Traced & { fields?: string[]; path: string };
/** What a write acknowledged, and when. */
type Deleted = { name: string; at: number };

const fieldsOf = async (traced: Traced) =>
  (await expectJson<{ custom_fields: { name: string }[] }>(traced.response.clone(), 200)).custom_fields.map(
    (field) => field.name,
  );

/**
 * Requests sent while the move waits at a step (after the copy and its check; just after the switch). Before
 * the switch a write is refused (503, Retry-After) and a read comes from the old home; just after it, an
 * isolate whose entry predates the switch still reads the old home, whose rows are the new home's (no write
 * lands anywhere yet), and its write is refused; refused, it reads the directory again and reaches the new
 * home, which refuses writes until every isolate has the new entry.
 */
async function probe(store: StoreWithRows, beforeSwitch: boolean) {
  const product = `/products/${store.product.id}`;
  const write = () => call(`${product}/custom-fields/${fieldNames.at(-1)}`, { method: "DELETE", token: store.token });
  if (beforeSwitch) {
    // The write first: refused, it makes the isolate read the token again, so the read after it leaves an
    // entry naming the old home in the cache for the switch.
    const staleWrite = await write();
    return { staleWrite, staleRead: await call(product, { token: store.token }) };
  }
  const staleRead = await call(product, { token: store.token });
  const staleWrite = await write();
  const freshRead = await call(product, { token: store.token });
  return { staleRead, staleWrite, freshRead, freshWrite: await write() };
}

type Probe = Awaited<ReturnType<typeof probe>>;

/** One round of the stream: a read, a custom field's delete while any is left, and every fifth a publish. */
function trafficRound(store: StoreWithRows, log: { held: number }) {
  const reads: Read[] = [];
  const deleted: Deleted[] = [];
  const published: string[] = [];
  const readPaths = [
    `/products/${store.product.id}`,
    `/products/${store.product.id}/cross-sells`,
    "/subscriptions?per_page=5",
  ];
  let tick = 0;
  const round = async () => {
    tick++;
    const path = readPaths[tick % readPaths.length] as string;
    const read = await client(path, { token: store.token }, log);
    const body = await expectJson<{ custom_fields?: { name: string }[] }>(read.response, 200);
    reads.push({ ...read, path, ...(body.custom_fields ? { fields: body.custom_fields.map((f) => f.name) } : {}) });
    const name = fieldNames[deleted.length];
    if (name !== undefined) {
      const path = `/products/${store.product.id}/custom-fields/${name}`;
      await expectStatus((await client(path, { method: "DELETE", token: store.token }, log)).response, 204);
      deleted.push({ name, at: Date.now() });
    }
    const draftedProduct = store.drafted[published.length];
    if (draftedProduct && tick % 5 === 0) {
      const path = `/products/${draftedProduct.id}/publish`;
      await expectStatus((await client(path, { method: "POST", token: store.token }, log)).response, 200);
      published.push(draftedProduct.id);
    }
  };
  return { round, reads, deleted, published };
}

/** Moves a fresh store under a stream of requests that goes on for five rounds after the move has ended. */
async function moveUnderTraffic() {
  const store = await storeWithRows();
  const before = await directory(store.storeId);
  const steps: Partial<Record<MoveStep, number>> = {};
  const log = { held: 0 };
  const probes: Partial<Record<"copied" | "switched", Probe>> = {};
  // Warm: this isolate's token cache names the old home when the move starts.
  await expectStatus((await call(`/products/${store.product.id}`, { token: store.token })).response, 200);
  let moving = true;
  const move = moveStore(movingEnv(), {
    storeId: store.storeId,
    to: store.to,
    tokenCacheSeconds: 1,
    onStep: async (step) => {
      steps[step] = Date.now();
      if (step === "copied") probes.copied = await probe(store, true);
      if (step === "switched") probes.switched = await probe(store, false);
    },
  }).finally(() => {
    moving = false;
  });
  const traffic = trafficRound(store, log);
  const stillMoving = async () => {
    await traffic.round();
    return moving;
  };
  await poll(stillMoving, (going) => !going, { intervalMs: 100, timeoutMs: 25_000, what: "the move's end" });
  for (let after = 0; after < 5; after++) await traffic.round();
  const { reads, deleted, published } = traffic;
  return { store, before, steps, held: log.held, probes, reads, deleted, published, report: await move };
}

describe("moving a store between shards under traffic", () => {
  let run: Awaited<ReturnType<typeof moveUnderTraffic>>;
  beforeAll(async () => {
    run = await moveUnderTraffic();
  }, 30_000);

  it("runs through every step and leaves the directory naming the new home, three versions on", async () => {
    const { store, before, steps, report } = run;
    expect(Object.keys(steps)).toEqual(["announced", "fenced", "copied", "switched", "opened", "settled", "cleaned"]);
    expect(report).toMatchObject({ store_id: store.storeId, from: store.from, to: store.to });
    expect(await directory(store.storeId)).toEqual({ shard: store.to, version: (before?.version ?? 0) + 3, moving: 0 });
  });

  it("answers no 5xx but a 503 with Retry-After, the retry gets past, to writes from the fence until the target opens", () => {
    const { steps, deleted, held } = run;
    expect(
      deleted.some((write) => write.at < (steps.fenced ?? 0)),
      "a write before the fence",
    ).toBe(true);
    expect(
      deleted.some((write) => write.at > (steps.opened ?? 0)),
      "a write after the opening",
    ).toBe(true);
    expect(held, "writes held").toBeGreaterThan(0);
  });

  it("refuses a write at the copy and just after the switch: 503 with Retry-After 2", () => {
    const { copied, switched } = run.probes;
    for (const write of [copied?.staleWrite, switched?.staleWrite, switched?.freshWrite]) {
      expect(write?.response.status).toBe(503);
      expect(write?.response.headers.get("Retry-After")).toBe("2");
    }
  });

  it("at the copy and just after the switch, reads the home its cached entry names and misses no acknowledged write", async () => {
    const { store, deleted } = run;
    const { copied, switched } = run.probes;
    expect(copied?.staleRead.reached.filter((name) => name !== "DB")).toEqual([store.from]);
    expect(switched?.staleRead.reached.filter((name) => name !== "DB")).toEqual([store.from]);
    expect(switched?.freshRead?.reached.filter((name) => name !== "DB")).toEqual([store.to]);
    for (const read of [copied?.staleRead, switched?.staleRead, switched?.freshRead]) {
      if (!read) throw new Error("a probe did not run");
      const gone = deleted.filter((write) => write.at <= read.startedAt).map((write) => write.name);
      expect((await fieldsOf(read)).filter((name) => gone.includes(name))).toEqual([]);
      expect(await fieldsOf(read)).toContain(fieldNames.at(-1));
    }
  });

  it("loses no write: every acknowledged write is in the new home, and the old home holds nothing of the store", async () => {
    const { store, deleted, published } = run;
    const left = await homeBinding(env, store.to)
      .prepare("SELECT name FROM custom_fields WHERE product_id = ? AND owner_kind = 'product' ORDER BY position")
      .bind(store.product.id)
      .all<{ name: string }>();
    expect(left.results.map((row) => row.name)).toEqual(fieldNames.slice(deleted.length));
    for (const id of published) {
      expect(await rows(store.to, "SELECT count(*) AS n FROM drafts WHERE product_id = ?", id)).toBe(0);
    }
    expect(published.length).toBeGreaterThan(0);
    expect(await rows(store.to, "SELECT count(*) AS n FROM subscriptions WHERE store_id = ?", store.storeId)).toBe(250);
    expect(await storeRowCount(store.from, store.storeId)).toBe(0);
  });

  // A read that began once writes could land in the new home reached only it (and DB, for a token read
  // again); no read missed a write acknowledged before it began.
  it("reads no stale shard: once the target opens reads reach only it, and no read misses an earlier write", () => {
    const { store, steps, reads, deleted } = run;
    for (const read of reads) {
      if (read.startedAt >= (steps.opened ?? Number.POSITIVE_INFINITY)) {
        expect(
          read.reached.filter((name) => name !== "DB"),
          `${read.path} at ${read.startedAt - (steps.opened ?? 0)} ms after opening`,
        ).toEqual([store.to]);
      }
      if (read.fields) {
        const gone = deleted.filter((write) => write.at <= read.startedAt).map((write) => write.name);
        expect(
          read.fields.filter((name) => gone.includes(name)),
          read.path,
        ).toEqual([]);
      }
    }
    expect(
      reads.some((read) => read.reached.includes(store.from)),
      "reads of the old home",
    ).toBe(true);
    expect(
      reads.some((read) => read.reached.includes(store.to)),
      "reads of the new home",
    ).toBe(true);
  });
});
