import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { deliverEvent, handleDeliveryBatch } from "../../src/events/delivery";
import { insertEvent, newEvent } from "../../src/events/records";
import { isLocalHost, targetRefusal } from "../../src/events/targets";
import {
  callApi,
  deliveryDeps,
  eventsOf,
  fakeReceiver,
  pendingEvent,
  readEvent,
  recordingQueue,
  storedEvent,
} from "../support/events";
import { customFields, seedProduct, seedStore, storeDb, uuid } from "../support/factories";
import { expectJson, expectStatus } from "../support/http";
import { captureServiceLogs } from "../support/logs";

// The service logs what these tests provoke on purpose; captured, and checked where a test expects a line.
const logs = captureServiceLogs();

const deployed = () => false;
const development = () => true;

/** Hosts on this machine or a private network, in the spellings an attacker would try. */
const localTargets = [
  "https://127.0.0.1/hook",
  "https://127.255.255.254/",
  "https://127.0.0.1./",
  "https://2130706433/", // 127.0.0.1 as one number
  "https://0x7f.1/", // hex, and a short form
  "https://0x7f000001/",
  "https://127.1/",
  "https://0177.0.0.1/", // octal
  "https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", // full-width digits
  "https://0.0.0.0/",
  "https://0/",
  "https://10.0.0.1/",
  "https://10.255.255.255/",
  "https://172.16.0.1/",
  "https://172.31.255.255/",
  "https://192.168.0.1/",
  "https://169.254.169.254/latest/meta-data/", // cloud metadata
  "https://100.64.0.1/",
  "https://100.127.255.255/",
  "https://224.0.0.1/",
  "https://255.255.255.255/",
  "https://[::1]/",
  "https://[0:0:0:0:0:0:0:1]/",
  "https://[::]/",
  "https://[::ffff:127.0.0.1]/", // IPv4-mapped
  "https://[::ffff:7f00:1]/",
  "https://[::ffff:10.1.2.3]/",
  "https://[::127.0.0.1]/", // IPv4-compatible (deprecated)
  "https://[64:ff9b::a9fe:a9fe]/", // NAT64 of 169.254.169.254
  "https://[fc00::1]/",
  "https://[fdff:ffff::1]/",
  "https://[fe80::1]/",
  "https://[febf::1]/",
  "https://[fec0::1]/",
  "https://[ff02::1]/",
  "https://localhost/",
  "https://LOCALHOST./",
  "https://api.localhost/",
  "https://localhost:8443/",
];

/** Public hosts, some right beside a local block. */
const publicTargets = [
  "https://hooks.example.test/x",
  "https://8.8.8.8/",
  "https://1.0.0.1/",
  "https://9.255.255.255/",
  "https://11.0.0.0/",
  "https://126.255.255.255/",
  "https://128.0.0.1/",
  "https://172.15.255.255/",
  "https://172.32.0.1/",
  "https://192.167.255.255/",
  "https://192.169.0.1/",
  "https://169.253.255.255/",
  "https://169.255.0.1/",
  "https://100.63.255.255/",
  "https://100.128.0.0/",
  "https://223.255.255.255/",
  "https://[2606:4700:4700::1111]/",
  "https://[::ffff:8.8.8.8]/",
  "https://[64:ff9b::808:808]/",
  "https://[fbff::1]/",
  "https://[fe7f::1]/",
  "https://localhost.example.test/",
  "https://mylocalhost/",
  "https://127.0.0.1.example.test/",
];

describe("which URLs an event may go to (src/events/targets.ts)", () => {
  it("refuses hosts on this machine or a private network, however the address is spelt, unless WEBHOOK_ALLOW_HTTP=on", () => {
    for (const url of localTargets) {
      expect(isLocalHost(new URL(url).hostname), url).toBe(true);
      expect(targetRefusal(url, deployed), url).toMatch(/this machine or a private network/);
      expect(targetRefusal(url, development), url).toBeNull();
    }
  });

  it("allows public hosts, the neighbours of every local block included", () => {
    for (const url of publicTargets) {
      expect(isLocalHost(new URL(url).hostname), url).toBe(false);
      expect(targetRefusal(url, deployed), url).toBeNull();
    }
  });

  it("refuses a URL with credentials, even with WEBHOOK_ALLOW_HTTP=on: never sent with them or without them", () => {
    for (const url of [
      "https://user:pass@hooks.example.test/x",
      "https://user@hooks.example.test/x",
      "https://:pass@hooks.example.test/x",
      "http://user:pass@127.0.0.1:9/x",
    ]) {
      expect(targetRefusal(url, deployed), url).toBe("the URL carries credentials");
      expect(targetRefusal(url, development), url).toBe("the URL carries credentials");
    }
  });

  it("refuses plain http: unless WEBHOOK_ALLOW_HTTP=on, and what is not an http(s) URL always", () => {
    expect(targetRefusal("http://hooks.example.test/x", deployed)).toMatch(/plain http:/);
    expect(targetRefusal("http://hooks.example.test/x", development)).toBeNull();
    expect(targetRefusal("http://127.0.0.1:8788/webhooks", development)).toBeNull();
    expect(targetRefusal("ftp://hooks.example.test/x", development)).toBe("not an https: URL");
    expect(targetRefusal("not a url", development)).toBe("not a URL");
  });

  it("asks the setting only for a URL that needs it, so a malformed one fails only those", () => {
    const malformed = () => {
      throw new Error("WEBHOOK_ALLOW_HTTP is malformed");
    };
    expect(targetRefusal("https://hooks.example.test/x", malformed)).toBeNull();
    expect(targetRefusal("https://user@hooks.example.test/x", malformed)).toBe("the URL carries credentials");
    expect(() => targetRefusal("https://127.0.0.1/x", malformed)).toThrow("WEBHOOK_ALLOW_HTTP is malformed");
  });
});

/** A store and a live product (a field to delete, a variant) whose webhook_url is `url`. */
async function hookedProduct(url: string) {
  const { storeId, token } = await seedStore();
  const product = await seedProduct(storeId, { webhook_url: url, custom_fields: customFields("nip") });
  return { storeId, token, product };
}

describe("no event is made for a refused target", () => {
  it("a publish or a live field delete of a product whose webhook_url is local or carries credentials answers as usual and makes no event", async () => {
    for (const url of [
      "https://127.0.0.1/hook",
      "https://[::ffff:10.0.0.1]/",
      "https://user:pass@hooks.example.test/",
    ]) {
      const { token, product } = await hookedProduct(url);
      const { sent, queue } = recordingQueue();
      await expectStatus(
        await callApi(`/products/${product.id}/custom-fields/nip`, { method: "DELETE", token }, queue),
        204,
        url,
      );
      await expectStatus(await callApi(`/products/${product.id}/publish`, { method: "POST", token }, queue), 200, url);
      expect(await eventsOf(token, product.id), url).toEqual([]);
      expect(sent, url).toEqual([]);
    }
  });

  it("with WEBHOOK_ALLOW_HTTP=on a local https: target makes its event (receivers on the developer's machine)", async () => {
    const url = "https://127.0.0.1:9/hook";
    const { token, product } = await hookedProduct(url);
    const { queue } = recordingQueue();
    const response = await callApi(`/products/${product.id}/publish`, { method: "POST", token }, queue, {
      WEBHOOK_ALLOW_HTTP: "on",
    });
    await expectStatus(response, 200);
    expect((await eventsOf(token, product.id)).map((event) => event.url)).toEqual([url]);
  });
});

describe("an event stored with a refused target is never fetched", () => {
  it("the consumer ends it failed without a request, acks it, and says why in the attempt log", async () => {
    const { event } = await pendingEvent({ url: "https://169.254.169.254/latest/meta-data/" });
    const receiver = fakeReceiver(() => new Response(null, { status: 204 }));
    const batch = createMessageBatch("storefront-checkout-webhooks", [
      { id: "m1", timestamp: new Date(), attempts: 1, body: { id: event.id } },
    ]);
    const ctx = createExecutionContext();
    await handleDeliveryBatch(batch, deliveryDeps({ fetch: receiver.fetch }));
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["m1"]);
    expect(receiver.received).toEqual([]);
    const stored = await storedEvent(event.id);
    expect(stored).toMatchObject({ status: "failed", attempts: 0, nextAttemptAt: null, leaseUntil: null });
    expect(stored?.attemptLog).toEqual([
      {
        at: expect.any(String),
        response_status: null,
        error: expect.stringMatching(/^not sent: the host is this machine or a private network/),
        duration_ms: 0,
      },
    ]);
    logs.expectLogged("warn", { message: "webhook event: target refused, not sent", event_id: event.id });
  });

  it("a URL with credentials is refused at delivery too, not sent without them", async () => {
    const { event } = await pendingEvent({ url: "https://user:pass@hooks.example.test/x" });
    const receiver = fakeReceiver(() => new Response(null, { status: 204 }));
    expect(await deliverEvent(deliveryDeps({ fetch: receiver.fetch }), event.id)).toEqual({ kind: "failed" });
    expect(receiver.received).toEqual([]);
    expect((await storedEvent(event.id))?.attemptLog[0]?.error).toBe("not sent: the URL carries credentials");
  });
});

describe("redeliver of an event with a refused target", () => {
  it("answers 422 saying why and leaves the event as it was", async () => {
    const { storeId, token, product } = await hookedProduct("https://hooks.example.test/x");
    const event = newEvent({ id: product.id, storeId }, "product.custom_field.deleted", "https://10.0.0.7/hook", {
      store_id: storeId,
      product_id: product.id,
      variant_id: null,
      list: "custom_fields",
      name: uuid(),
    });
    await insertEvent(await storeDb(storeId), event);
    const { sent, queue } = recordingQueue();
    const response = await callApi(`/webhook-events/${event.id}/redeliver`, { method: "POST", token }, queue);
    expect(await expectJson(response, 422)).toEqual({
      message:
        "The event's url may not be sent to: the host is this machine or a private network (allowed only with WEBHOOK_ALLOW_HTTP=on).",
    });
    expect(sent).toEqual([]);
    expect(await readEvent(token, event.id)).toMatchObject({ status: "pending", attempts: 0 });
  });
});
