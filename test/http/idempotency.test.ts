import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { claimKey } from "../../src/db/idempotency-keys";
import { moveStore } from "../../src/db/move";
import { shardNames } from "../../src/db/shards";
import { idempotencyMessages, keepable, requestFingerprint } from "../../src/http/idempotency";
import { runCron } from "../support/cron";
import { hookUrl, recordingQueue } from "../support/events";
import {
  customFields,
  seedProduct,
  seedStore,
  seedToken,
  storeD1,
  storeDb,
  storeHome,
  uuid,
} from "../support/factories";
import { api, type BindingOverrides, expectJson, expectStatus } from "../support/http";
import {
  coordinatorsDyingAfterChange,
  coordinatorUploads,
  dyingAfterChange,
  leasesRunOut,
  tracingD1,
} from "../support/idempotency";
import { captureServiceLogs } from "../support/logs";
import { pdf } from "../support/media-bytes";
import type { ApiCall } from "../support/request-init";
import { countRoundTrips } from "../support/round-trips";
import { putBytes, reserve } from "../support/uploads";

// The requests made to die after their change log their failure; captured.
captureServiceLogs();

type Call = ApiCall & { path: string };
/** A write ready to send, and what its change did so far (the same before and after a retry that runs nothing). */
type Write = { storeId: string; token: string; call: Call; effect: () => Promise<unknown> };

const send = (call: Call, key: string | null, overrides?: BindingOverrides) =>
  api(call.path, {
    ...call,
    headers: { ...call.headers, ...(key === null ? {} : { "Idempotency-Key": key }) },
    env: overrides,
  });

/** The rows a change writes in the store's home, as a snapshot. */
async function rows(storeId: string, query: string, ...values: unknown[]) {
  return (
    await (
      await storeD1(storeId)
    )
      .prepare(query)
      .bind(...values)
      .all()
  ).results;
}

const eventsOf = (storeId: string, productId: string) =>
  rows(
    storeId,
    "SELECT id, type, status, next_attempt_at FROM webhook_events WHERE product_id = ? ORDER BY id",
    productId,
  );

/** A hooked product (its changes make events) with fields on every list and a draft overlay if asked. */
async function hookedProduct(withDraft: boolean) {
  const { storeId, token } = await seedStore();
  const variantId = uuid();
  const fields = customFields("nip", "phone");
  const product = await seedProduct(storeId, {
    webhook_url: hookUrl(),
    custom_fields: fields,
    waitlist_custom_fields: fields,
    variants: [{ id: variantId, name: "V", amount: 100, currency: "pln", custom_fields: fields }],
    ...(withDraft ? { draft: { draft_version: 3, custom_fields: fields, waitlist_custom_fields: fields } } : {}),
  });
  const state = () =>
    Promise.all([
      eventsOf(storeId, product.id),
      rows(storeId, "SELECT owner_kind, name FROM custom_fields WHERE product_id = ? ORDER BY id", product.id),
      rows(storeId, "SELECT draft_version, document FROM drafts WHERE product_id = ?", product.id),
    ]);
  return { storeId, token, product, variantId, state };
}

/** Every write of the API (POST and DELETE under /api/v1), each on fresh data. */
const writes: Record<string, () => Promise<Write>> = {
  "publish (no draft)": async () => {
    const { storeId, token, product, state } = await hookedProduct(false);
    return { storeId, token, call: { method: "POST", path: `/products/${product.id}/publish`, token }, effect: state };
  },
  "publish (draft)": async () => {
    const { storeId, token, product, state } = await hookedProduct(true);
    return { storeId, token, call: { method: "POST", path: `/products/${product.id}/publish`, token }, effect: state };
  },
  "draft delete": async () => {
    const { storeId, token, product, state } = await hookedProduct(true);
    return { storeId, token, call: { method: "DELETE", path: `/products/${product.id}/draft`, token }, effect: state };
  },
  ...Object.fromEntries(
    (["custom-fields", "waitlist-custom-fields", "variant"] as const).flatMap((list) => [
      [
        `live ${list} delete`,
        async (): Promise<Write> => {
          const { storeId, token, product, variantId, state } = await hookedProduct(false);
          const path =
            list === "variant"
              ? `/product-variants/${variantId}/custom-fields/nip`
              : `/products/${product.id}/${list}/nip`;
          return { storeId, token, call: { method: "DELETE", path, token }, effect: state };
        },
      ],
      [
        `draft ${list} delete`,
        async (): Promise<Write> => {
          const { storeId, token, product, variantId, state } = await hookedProduct(true);
          const tail = list === "variant" ? `variants/${variantId}/custom-fields` : list;
          const path = `/products/${product.id}/draft/${tail}/nip`;
          return { storeId, token, call: { method: "DELETE", path, token, body: { draft_version: 3 } }, effect: state };
        },
      ],
    ]),
  ),
  "secret rotation": async () => {
    const { storeId, token } = await seedStore();
    await expectStatus(await api("/webhooks/secret", { token }), 200);
    const effect = () =>
      rows(storeId, "SELECT secret, previous_secret FROM webhook_secrets WHERE store_id = ?", storeId);
    return { storeId, token, call: { method: "POST", path: "/webhooks/secret/rotate", token }, effect };
  },
  redeliver: async () => {
    const { storeId, token, product } = await hookedProduct(false);
    await expectStatus(await api(`/products/${product.id}/custom-fields/phone`, { method: "DELETE", token }), 204);
    const [event] = (await eventsOf(storeId, product.id)) as { id: string }[];
    await (await storeD1(storeId))
      .prepare("UPDATE webhook_events SET status = 'failed' WHERE id = ?")
      .bind(event?.id)
      .run();
    const path = `/webhook-events/${event?.id}/redeliver`;
    return { storeId, token, call: { method: "POST", path, token }, effect: () => eventsOf(storeId, product.id) };
  },
  prepare: async () => {
    const { storeId, token } = await seedStore();
    const body = { filename: "a.pdf", content_type: "application/pdf", size: 100, type: "file" };
    const call = { method: "POST", path: "/media-uploads", token, store: storeId, body };
    return { storeId, token, call, effect: () => coordinatorUploads(storeId) };
  },
  complete: async () => {
    const { storeId, token } = await seedStore();
    const bytes = pdf();
    const reservation = await reserve(token, storeId, bytes, { content_type: "application/pdf", type: "file" });
    await expectStatus(await putBytes(reservation, bytes), 204);
    const call = { method: "POST", path: `/media-uploads/${reservation.id}/complete`, token, store: storeId };
    return { storeId, token, call, effect: () => coordinatorUploads(storeId) };
  },
};

const isUpload = (name: string) => name === "prepare" || name === "complete";

describe("Idempotency-Key (docs/api.md, Idempotency-Key)", () => {
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

  it("a malformed key (empty, 256 characters, a control or non-ASCII character) answers 400 Invalid Idempotency-Key. and runs nothing", async () => {
    const { storeId, token, product, state } = await hookedProduct(false);
    const before = await state();
    for (const key of ["", "x".repeat(256), "a\tb", "zażółć"]) {
      const response = await api(`/products/${product.id}/custom-fields/nip`, {
        method: "DELETE",
        token,
        headers: { "Idempotency-Key": key },
      });
      expect(await expectJson(response, 400), JSON.stringify(key)).toEqual({ message: idempotencyMessages.invalid });
    }
    expect(await state()).toEqual(before);
    // 1 and 255 characters of printable ASCII, space and tilde included, are keys.
    for (const key of ["~", `${"x ".repeat(127)}y`]) {
      const response = await api(`/products/${product.id}/publish`, {
        method: "POST",
        token,
        headers: { "Idempotency-Key": key },
      });
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

  it("a 4xx is kept: a retry gets the first 409 even once the request would now succeed", async () => {
    const { token, product, state } = await hookedProduct(true);
    const call = { method: "DELETE", path: `/products/${product.id}/custom-fields/nip`, token };
    const first = await send(call, "has-draft");
    const firstBody = await first.text();
    expect(first.status).toBe(409);
    await expectStatus(await api(`/products/${product.id}/draft`, { method: "DELETE", token }), 204);
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

describe("Idempotency-Key from a browser", () => {
  it("a listed origin may send Idempotency-Key (the preflight allows it) and read Idempotent-Replayed", async () => {
    const shop = "https://shop.example";
    const vars = { CORS_ORIGINS: shop };
    const preflight = await api("/products/x/publish", {
      method: "OPTIONS",
      headers: {
        Origin: shop,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "idempotency-key",
      },
      env: vars,
    });
    expect(preflight.headers.get("Access-Control-Allow-Headers")).toContain("Idempotency-Key");
    const { token, product } = await hookedProduct(false);
    const call = { method: "POST", path: `/products/${product.id}/publish`, token, headers: { Origin: shop } };
    await expectStatus(await send(call, "browser", vars), 200);
    const replay = await send(call, "browser", vars);
    expect(replay.headers.get("Access-Control-Expose-Headers")).toContain("Idempotent-Replayed");
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
  });
});

describe("Idempotency-Key records past their time (IDEMPOTENCY_TTL_SECONDS)", () => {
  it("the cron deletes the records past their time of every home at the minutes it drops expired events, not a fenced store's", async () => {
    const kept = await hookedProduct(false);
    const lapsed = await hookedProduct(false);
    const fenced = await hookedProduct(false);
    for (const { token, product } of [kept, lapsed, fenced]) {
      await expectStatus(await send({ method: "POST", path: `/products/${product.id}/publish`, token }, "old"), 200);
    }
    const scheduledTime = Date.parse("2030-01-01T00:05:00Z");
    for (const { storeId } of [lapsed, fenced]) {
      await (await storeD1(storeId))
        .prepare("UPDATE idempotency_keys SET expires_at = ? WHERE store_id = ?")
        .bind(scheduledTime - 1, storeId)
        .run();
    }
    const fences = await storeD1(fenced.storeId);
    await fences
      .prepare("INSERT INTO store_fences (store_id, state, since) VALUES (?, 'outgoing', 0)")
      .bind(fenced.storeId)
      .run();
    await (await storeD1(kept.storeId))
      .prepare("UPDATE idempotency_keys SET expires_at = ? WHERE store_id = ?")
      .bind(scheduledTime + 1, kept.storeId)
      .run();
    await runCron({ WEBHOOK_QUEUE: recordingQueue().queue }, scheduledTime);
    await fences.prepare("DELETE FROM store_fences WHERE store_id = ?").bind(fenced.storeId).run();
    const left = async (storeId: string) =>
      (await rows(storeId, "SELECT key FROM idempotency_keys WHERE store_id = ?", storeId)).length;
    expect([await left(kept.storeId), await left(lapsed.storeId), await left(fenced.storeId)]).toEqual([1, 0, 1]);
  });

  it("a store coordinator's alarm deletes its upload keys past their time, and is set for the first of them", async () => {
    const storeId = uuid();
    const stub = env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));
    const now = Date.now();
    const result = await runInDurableObject(stub, async (instance, state) => {
      const scope = { storeId, tokenHash: "t", key: "k" };
      await instance.claimKey(scope, { fingerprint: "f", now, ttlMs: 60_000 });
      const alarm = await state.storage.getAlarm();
      const before = await instance.removeLapsed(500, now + 59_999);
      const stillThere = state.storage.sql.exec("SELECT key FROM idempotency_keys").toArray().length;
      await instance.removeLapsed(500, now + 60_000);
      return {
        alarm,
        before,
        stillThere,
        after: state.storage.sql.exec("SELECT key FROM idempotency_keys").toArray().length,
      };
    });
    expect(result).toEqual({ alarm: now + 60_000, before: 0, stillThere: 1, after: 0 });
  });
});

describe("round trips of a write with an Idempotency-Key (docs/latency.md)", () => {
  it("a keyed delete or publish makes two D1 round trips more, the claim beside its first read and the answer's write after it; a replay makes one", async () => {
    const { token, product } = await hookedProduct(true);
    await countRoundTrips(`/products/${uuid()}`, { token }); // the token verified and cached
    const plain = await countRoundTrips(`/products/${product.id}/draft/custom-fields/nip`, {
      method: "DELETE",
      token,
      body: JSON.stringify({ draft_version: 3 }),
    });
    await expectStatus(plain.response, 204);
    const keyedCall = {
      method: "DELETE",
      token,
      body: JSON.stringify({ draft_version: 4 }),
      headers: { "Idempotency-Key": "trips" },
    };
    const keyed = await countRoundTrips(`/products/${product.id}/draft/custom-fields/phone`, keyedCall);
    await expectStatus(keyed.response, 204);
    expect(keyed.trips).toEqual({ d1: plain.trips.d1 + 2, durableObjects: plain.trips.durableObjects });
    const replay = await countRoundTrips(`/products/${product.id}/draft/custom-fields/phone`, keyedCall);
    expect(replay.response.headers.get("Idempotent-Replayed")).toBe("true");
    expect(replay.trips.d1).toBe(plain.trips.d1 - 1);
  });

  it("a keyed complete makes no coordinator call of its own before its begin: the claim is made in the begin, and the answer is kept after the response", async () => {
    const trips = async (key: string | null) => {
      const { storeId, token } = await seedStore();
      const bytes = pdf();
      const reservation = await reserve(token, storeId, bytes, { content_type: "application/pdf", type: "file" });
      await expectStatus(await putBytes(reservation, bytes), 204);
      await countRoundTrips(`/products/${uuid()}`, { token }); // the token verified and cached
      const counted = await countRoundTrips(`/media-uploads/${reservation.id}/complete`, {
        method: "POST",
        token,
        store: storeId,
        headers: key ? { "Idempotency-Key": key } : {},
      });
      await expectStatus(counted.response, 201);
      return counted.trips;
    };
    const plain = await trips(null);
    expect(await trips("complete-trips")).toEqual({ d1: plain.d1, durableObjects: plain.durableObjects + 1 });
  });

  it.each(Object.keys(writes).filter((name) => !isUpload(name)))(
    "%s with a key adds no sequential D1 round trip: the claim runs beside the route's first read, and the answer is kept after the change",
    async (name) => {
      const write = await (writes[name] as () => Promise<Write>)();
      const home = await storeHome(write.storeId);
      const tracing = tracingD1(env[home as "DB"] as D1Database);
      const response = await send(write.call, `trips-${uuid()}`, { [home]: tracing.binding });
      expect(response.status).toBeLessThan(300);
      const claim = tracing.trips.find((trip) =>
        trip.queries.some((query) => /insert into "idempotency_keys"/i.test(query)),
      );
      const change = tracing.trips.find((trip) =>
        trip.queries.some((query) => /update "idempotency_keys" set "changed"/i.test(query)),
      );
      expect(claim, "the claim").toBeDefined();
      expect(change, "the change, with its record").toBeDefined();
      // Some other trip (the first read) started before the claim ended: they overlapped.
      const beside = tracing.trips.filter(
        (trip) => trip !== claim && trip.started < (claim?.ended ?? 0) && trip.ended > (claim?.started ?? 0),
      );
      expect(beside.length, JSON.stringify(tracing.trips)).toBeGreaterThan(0);
    },
  );
});

async function tokenHash(token: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}
