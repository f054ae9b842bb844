import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { claimKey } from "../../src/db/idempotency-keys";
import { moveStore } from "../../src/db/move";
import { shardNames } from "../../src/db/shards";
import { idempotencyMessages, keepable, requestFingerprint } from "../../src/http/idempotency";
import { seedProduct, seedStore, seedToken, storeD1, storeDb, storeHome, uuid } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";
import { coordinatorsDyingAfterChange, dyingAfterChange, leasesRunOut } from "../support/idempotency";
import {
  eventsOf,
  hookedProduct,
  isUpload,
  rows,
  send,
  tokenHash,
  type Write,
  writes,
} from "../support/idempotent-writes";
import { captureServiceLogs } from "../support/logs";

// The requests made to die after their change log their failure; captured.
captureServiceLogs();

describe("Idempotency-Key (docs/api.md, Idempotency-Key): a retry is answered from the first request", () => {
  it.each(Object.keys(writes))(
    "every write takes a key: a retry of %s with the same key gets the first answer byte for byte with Idempotent-Replayed: true, and nothing runs again",
    async (name) => {
      const write = await (writes[name] as () => Promise<Write>)();
      const key = `k-${uuid()}`;
      const first = await send(write.call, key);
      const firstBody = await first.text();
      expect(first.status, firstBody).toBeLessThan(300);
      expect(first.headers.get("Idempotent-Replayed")).toBeNull();
      const after = await write.effect();
      // A retry right away may find the first request's answer still being written: it is told to wait.
      let retry = await send(write.call, key);
      for (let tries = 0; retry.status === 409 && tries < 50; tries++) retry = await send(write.call, key);
      expect(retry.status).toBe(first.status);
      expect(await retry.text()).toBe(firstBody);
      expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
      expect(retry.headers.get("Content-Type")).toBe(first.headers.get("Content-Type"));
      expect(await write.effect()).toEqual(after);
    },
  );

  it.each(Object.keys(writes))(
    "atomic with the change: %s whose request dies right after its change (answer lost) is not made again by a retry, which answers as the first would have",
    async (name) => {
      const write = await (writes[name] as () => Promise<Write>)();
      const home = await storeHome(write.storeId);
      const dying = isUpload(name)
        ? coordinatorsDyingAfterChange(env.STORE_COORDINATOR)
        : dyingAfterChange(env[home as "DB"] as D1Database);
      const key = `k-${uuid()}`;
      const lost = await send(
        write.call,
        key,
        isUpload(name) ? { STORE_COORDINATOR: dying.binding } : { [home]: dying.binding },
      );
      expect(dying.died(), `${name}: the change was recorded with its key`).toBe(true);
      // Whatever it answered (a 500 where the route still read after its change) never reached the client.
      await lost.body?.cancel();
      const after = await write.effect();
      await leasesRunOut(await storeD1(write.storeId), write.storeId);
      const retry = await send(write.call, key);
      const body = await retry.text();
      expect(retry.status, body).toBeLessThan(300);
      expect(await write.effect()).toEqual(after);
      // And the same answer once more, kept now.
      const again = await send(write.call, key);
      expect([again.status, await again.text(), again.headers.get("Idempotent-Replayed")]).toEqual([
        retry.status,
        body,
        "true",
      ]);
    },
  );

  it("a publish retried after a lost answer makes no second product.published event", async () => {
    const { storeId, token, product } = await hookedProduct(true);
    const home = await storeHome(storeId);
    const dying = dyingAfterChange(env[home as "DB"] as D1Database);
    const call = { method: "POST", path: `/products/${product.id}/publish`, token };
    await send(call, "publish-1", { [home]: dying.binding });
    await leasesRunOut(await storeD1(storeId), storeId);
    const retry = await expectJson<{ name: string; has_draft: boolean }>(await send(call, "publish-1"), 200);
    expect(retry.has_draft).toBe(false);
    expect((await eventsOf(storeId, product.id)).map((event) => event.type)).toEqual(["product.published"]);
  });

  it("a replay carries the first answer's kept headers: Content-Type and X-D1-Bookmark", async () => {
    const { token, product } = await hookedProduct(false);
    const call = { method: "POST", path: `/products/${product.id}/publish`, token };
    const first = await send(call, "headers");
    await expectStatus(first, 200);
    let retry = await send(call, "headers");
    for (let tries = 0; retry.status === 409 && tries < 50; tries++) retry = await send(call, "headers");
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(first.headers.get("X-D1-Bookmark")).toBeTruthy();
    expect(retry.headers.get("X-D1-Bookmark")).toBe(first.headers.get("X-D1-Bookmark"));
    expect(retry.headers.get("Content-Type")).toBe(first.headers.get("Content-Type"));
  });
});

describe("Idempotency-Key (docs/api.md, Idempotency-Key): a key that cannot be used", () => {
  it("a malformed key (empty, 256 characters, a control or non-ASCII character) answers 400 Invalid Idempotency-Key. and runs nothing", async () => {
    const { storeId, token, product, state } = await hookedProduct(false);
    const before = await state();
    for (const key of ["", "x".repeat(256), "a\tb", "zażółć"]) {
      const response = await send({ method: "DELETE", path: `/products/${product.id}/custom-fields/nip`, token }, key);
      expect(await expectJson(response, 400), JSON.stringify(key)).toEqual({ message: idempotencyMessages.invalid });
    }
    expect(await state()).toEqual(before);
    // 1 and 255 characters of printable ASCII, space and tilde included, are keys.
    for (const key of ["~", `${"x ".repeat(127)}y`]) {
      const response = await send({ method: "POST", path: `/products/${product.id}/publish`, token }, key);
      await expectStatus(response, 200);
    }
    expect(storeId).toBeTruthy();
  });

  it("a malformed key is checked after 401 and 403, like other validation", async () => {
    const { storeId } = await seedStore();
    const product = await seedProduct(storeId);
    const reader = await seedToken([storeId], ["products:read"]);
    const headers = { "Idempotency-Key": "" };
    await expectStatus(await api(`/products/${product.id}/publish`, { method: "POST", headers }), 401);
    await expectStatus(await api(`/products/${product.id}/publish`, { method: "POST", token: reader, headers }), 403);
  });

  it("the same key for a different request (body, path or method) answers 422 and runs nothing", async () => {
    const { token, product, state } = await hookedProduct(true);
    const first = {
      method: "DELETE",
      path: `/products/${product.id}/draft/custom-fields/nip`,
      token,
      body: { draft_version: 3 },
    };
    await expectStatus(await send(first, "shared"), 204);
    const after = await state();
    for (const other of [
      { ...first, body: { draft_version: 4 } },
      { ...first, path: `/products/${product.id}/draft/custom-fields/phone` },
      { ...first, method: "POST", path: `/products/${product.id}/publish`, body: undefined },
    ]) {
      const response = await send(other, "shared");
      expect(await expectJson(response, 422)).toEqual({ message: idempotencyMessages.mismatch });
    }
    expect(await state()).toEqual(after);
  });

  it("the same key while the first request still runs answers 409 with Retry-After: 1 and runs nothing", async () => {
    const { storeId, token, product, state } = await hookedProduct(false);
    const path = `/products/${product.id}/custom-fields/nip`;
    // The first request has claimed the key and not answered yet.
    const fingerprint = await requestFingerprint("DELETE", `/api/v1${path}`, new Uint8Array());
    const claimed = await claimKey(
      await storeDb(storeId),
      { store: storeId, tokenHash: await tokenHash(token), key: "running" },
      { fingerprint, now: Date.now(), ttlMs: 60_000 },
    );
    expect(claimed.kind).toBe("run");
    const before = await state();
    const response = await send({ method: "DELETE", path, token }, "running");
    expect(await expectJson(response, 409)).toEqual({ message: idempotencyMessages.running });
    expect(response.headers.get("Retry-After")).toBe("1");
    expect(await state()).toEqual(before);
  });

  it("a 5xx is not kept: a retry with the same key after the platform is back runs anew", async () => {
    const wall = uuid();
    const { storeId, token } = await seedStore({
      store: { platform: { connected: true, projects: [wall], courses: [] } },
    });
    const product = await seedProduct(storeId, { draft: { draft_version: 1, wall_id: wall } });
    const faults = async (mode: string) =>
      expectStatus(await api("/_dev/platform/faults", { method: "POST", body: { store_id: storeId, mode } }), 204);
    const call = { method: "POST", path: `/products/${product.id}/publish`, token };
    await faults("down");
    await expectStatus(await send(call, "after-outage"), 502);
    await faults("up");
    const retry = await send(call, "after-outage");
    await expectStatus(retry, 200);
    expect(retry.headers.get("Idempotent-Replayed")).toBeNull();
  });

  it("kept answers are 2xx and 4xx but 401, 403 and 429; a 5xx, 401, 403 or 429 is not kept", () => {
    expect([200, 201, 202, 204, 400, 404, 409, 410, 422].map(keepable)).toEqual(Array(9).fill(true));
    expect([401, 403, 429, 500, 502, 503].map(keepable)).toEqual(Array(6).fill(false));
  });
});

describe("Idempotency-Key (docs/api.md, Idempotency-Key): what is kept, for whom and how long", () => {
  it("a 4xx is kept: a retry gets the first 409 even once the request would now succeed", async () => {
    const { token, product, state } = await hookedProduct(true);
    const call = { method: "DELETE", path: `/products/${product.id}/custom-fields/nip`, token };
    const first = await send(call, "has-draft");
    const firstBody = await first.text();
    expect(first.status).toBe(409);
    await expectStatus(await send({ method: "DELETE", path: `/products/${product.id}/draft`, token }, null), 204);
    const after = await state();
    let retry = await send(call, "has-draft");
    for (
      let tries = 0;
      retry.status === 409 && retry.headers.get("Idempotent-Replayed") === null && tries < 50;
      tries++
    ) {
      retry = await send(call, "has-draft");
    }
    expect([retry.status, await retry.text(), retry.headers.get("Idempotent-Replayed")]).toEqual([
      409,
      firstBody,
      "true",
    ]);
    expect(await state()).toEqual(after);
  });

  it("keys are scoped to the token: another token of the store with the same key runs its own request", async () => {
    const { storeId, token, product } = await hookedProduct(false);
    const other = await seedToken([storeId]);
    const call = (by: string) => ({ method: "POST", path: `/products/${product.id}/publish`, token: by });
    await expectStatus(await send(call(token), "shared"), 200);
    const second = await send(call(other), "shared");
    await expectStatus(second, 200);
    expect(second.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await eventsOf(storeId, product.id)).toHaveLength(2);
  });

  it("keys are scoped to the store: the same key on another store (X-Service-Store, or the product's store without it) runs its own request", async () => {
    const one = await hookedProduct(false);
    const two = await hookedProduct(false);
    const token = await seedToken([one.storeId, two.storeId]);
    const publish = (productId: string, store?: string) =>
      send({ method: "POST", path: `/products/${productId}/publish`, token, ...(store ? { store } : {}) }, "per-store");
    await expectStatus(await publish(one.product.id), 200);
    const other = await publish(two.product.id, two.storeId);
    await expectStatus(other, 200);
    expect(other.headers.get("Idempotent-Replayed")).toBeNull();
    // The first store's request again, now naming its store: the same key and request there, replayed.
    const again = await publish(one.product.id, one.storeId);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
  });

  it("an answer is kept for IDEMPOTENCY_TTL_SECONDS: the record's time is the setting, and a key past it is a new key", async () => {
    const { storeId, token, product } = await hookedProduct(false);
    const call = { method: "POST", path: `/products/${product.id}/publish`, token };
    const started = Date.now();
    await expectStatus(await send(call, "ttl", { IDEMPOTENCY_TTL_SECONDS: "120" }), 200);
    const [record] = (await rows(storeId, "SELECT expires_at FROM idempotency_keys WHERE key = 'ttl'")) as {
      expires_at: number;
    }[];
    expect(record?.expires_at).toBeGreaterThanOrEqual(started + 120_000);
    expect(record?.expires_at).toBeLessThanOrEqual(Date.now() + 120_000);
    await (await storeD1(storeId))
      .prepare("UPDATE idempotency_keys SET expires_at = ? WHERE key = 'ttl'")
      .bind(Date.now() - 1)
      .run();
    const later = await send(call, "ttl");
    await expectStatus(later, 200);
    expect(later.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await eventsOf(storeId, product.id)).toHaveLength(2);
  });

  it("records move with their store: a retry after the store moved to another shard is still replayed", async () => {
    const { storeId, token, product } = await hookedProduct(false);
    const call = { method: "DELETE", path: `/products/${product.id}/custom-fields/nip`, token };
    const vars = { TOKEN_CACHE_SECONDS: "0", READ_CACHE_MS: "0" };
    await expectStatus(await send(call, "moving", vars), 204);
    const from = await storeHome(storeId);
    const to = shardNames(env).find((name) => name !== from) as string;
    const report = await moveStore({ ...env, ...vars } as Env, {
      storeId,
      to,
      tokenCacheSeconds: 0,
      sleep: async () => {},
    });
    expect(report.tables.find((table) => table.table === "idempotency_keys")?.rows).toBe(1);
    const retry = await send(call, "moving", vars);
    await expectStatus(retry, 204);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
  });
});
