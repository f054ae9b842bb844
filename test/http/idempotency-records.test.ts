import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runCron } from "../support/cron";
import { recordingQueue } from "../support/events";
import { seedStore, storeD1, storeHome, uuid } from "../support/factories";
import { api, expectStatus } from "../support/http";
import { tracingD1 } from "../support/idempotency";
import { hookedProduct, isUpload, rows, send, type Write, writes } from "../support/idempotent-writes";
import { captureServiceLogs } from "../support/logs";
import { pdf } from "../support/media-bytes";
import { countRoundTrips } from "../support/round-trips";
import { putBytes, reserve } from "../support/uploads";

// The requests made to die after their change log their failure; captured.
captureServiceLogs();

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
    // Before any record another file leaves (the test files share their databases, and a run deletes at most
    // 1000 a home): only this test's records are past their time then.
    const scheduledTime = Date.parse("2020-01-01T00:05:00Z");
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
