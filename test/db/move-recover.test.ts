import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type MoveStep, moveStore, recoverMove } from "../../src/db/move";
import { homeNames, shardNames } from "../../src/db/shards";
import { uuid } from "../support/factories";
import { expectJson, expectStatus, origin } from "../support/http";
import {
  app,
  call,
  directory,
  movingEnv,
  rows,
  type StoreWithRows,
  storeRowCount,
  storeWithRows,
} from "../support/moves";

const instantly = { tokenCacheSeconds: 0, marginMs: 0, sleep: async () => {} };

/**
 * Starts a move that stops for good after `at`, as when the Worker running it is gone: the step's hook never
 * returns, so nothing after it runs. Resolves once the move has reached the step.
 */
async function moveStoppedAfter(store: StoreWithRows, at: MoveStep) {
  await new Promise<void>((reached, failed) => {
    moveStore(movingEnv(), {
      ...instantly,
      storeId: store.storeId,
      to: store.to,
      onStep: (step) => {
        if (step !== at) return;
        reached();
        return new Promise<void>(() => {});
      },
    }).catch(failed);
  });
}

async function fences(storeId: string) {
  let found = 0;
  for (const home of homeNames(env))
    found += await rows(home, "SELECT count(*) AS n FROM store_fences WHERE store_id = ?", storeId);
  return found;
}

/** The store lives in `home` alone, with every row, no fence anywhere, and takes writes there. */
async function expectSettledIn(store: StoreWithRows, home: string) {
  expect(await directory(store.storeId)).toMatchObject({ shard: home, moving: 0 });
  expect(await fences(store.storeId)).toBe(0);
  expect(await storeRowCount(home, store.storeId)).toBe(256);
  for (const other of shardNames(env).filter((name) => name !== home))
    expect(await storeRowCount(other, store.storeId), other).toBe(0);
  const write = await call(`/products/${store.product.id}/custom-fields/field0`, {
    method: "DELETE",
    token: store.token,
  });
  await expectStatus(write.response, 204);
  expect(write.reached.filter((name) => name !== "DB")).toEqual([home]);
  const read = await call(`/products/${store.product.id}`, { token: store.token });
  await expectStatus(read.response, 200);
}

describe("a move that stops part-way (store:move --recover)", () => {
  const stops: {
    at: MoveStep;
    home: "from" | "to";
    found: "moving" | "settled";
    opened: boolean;
    cleaned: "none" | "from" | "to";
  }[] = [
    { at: "announced", home: "from", found: "moving", opened: false, cleaned: "none" },
    { at: "fenced", home: "from", found: "moving", opened: true, cleaned: "none" },
    { at: "copied", home: "from", found: "moving", opened: true, cleaned: "to" },
    { at: "switched", home: "to", found: "moving", opened: true, cleaned: "from" },
    { at: "opened", home: "to", found: "moving", opened: false, cleaned: "from" },
    { at: "settled", home: "to", found: "settled", opened: false, cleaned: "from" },
  ];
  it.each(stops)(
    "stopped after $at: the store stays in its directory home ($home), writable there, every row once, nothing elsewhere",
    async ({ at, home, found, opened, cleaned }) => {
      const store = await storeWithRows();
      await moveStoppedAfter(store, at);
      const report = await recoverMove(movingEnv(), { storeId: store.storeId, ...instantly });
      expect(report).toMatchObject({
        store_id: store.storeId,
        home: store[home],
        found,
        opened,
        cleaned: cleaned === "none" ? [] : [store[cleaned]],
      });
      await expectSettledIn(store, store[home]);
      // A second recovery finds nothing to do.
      expect(await recoverMove(movingEnv(), { storeId: store.storeId, ...instantly })).toMatchObject({
        found: "settled",
        opened: false,
        cleaned: [],
      });
    },
    20_000,
  );
});

describe("recovering a move that is still running, or through the _dev route", () => {
  it("a move still running when it is recovered fails at its next directory write; the store stays consistent", async () => {
    const store = await storeWithRows();
    let resume = () => {};
    let reached = () => {};
    const atCopied = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const running = moveStore(movingEnv(), {
      ...instantly,
      storeId: store.storeId,
      to: store.to,
      onStep: (step) => {
        if (step !== "copied") return;
        reached();
        return new Promise<void>((resolve) => {
          resume = resolve;
        });
      },
    });
    await atCopied;
    await recoverMove(movingEnv(), { storeId: store.storeId, ...instantly });
    resume();
    await expect(running).rejects.toThrow(/changed during its move/);
    await expectSettledIn(store, store.from);
  }, 20_000);

  it("the _dev route recovers a store, and refuses an unknown one", async () => {
    const store = await storeWithRows();
    await moveStoppedAfter(store, "fenced");
    const recover = (storeId: string) =>
      app.fetch(
        new Request(`${origin}/api/v1/_dev/stores/${storeId}/move/recover`, { method: "POST" }),
        { ...env, TOKEN_CACHE_SECONDS: "0" } as Env,
        createExecutionContext(),
      );
    expect(await expectJson(await recover(store.storeId), 200)).toMatchObject({ home: store.from, opened: true });
    await expectSettledIn(store, store.from);
    await expectStatus(await recover(uuid()), 404);
  }, 20_000);
});
