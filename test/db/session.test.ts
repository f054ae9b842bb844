import { describe, expect, it } from "vitest";
import { bookmarkHeader, sessionConstraint } from "../../src/db/session";
import { seedProduct, seedStore } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";

describe("D1 sessions (read replicas, read-your-writes)", () => {
  it("reads go to any replica unless the client sends a bookmark; writes go to the primary", () => {
    expect(sessionConstraint("GET", undefined)).toBe("first-unconstrained");
    expect(sessionConstraint("HEAD", "")).toBe("first-unconstrained");
    expect(sessionConstraint("GET", "00000001-0000000a-00004f6d-2d3f")).toBe("00000001-0000000a-00004f6d-2d3f");
    expect(sessionConstraint("DELETE", "00000001-0000000a-00004f6d-2d3f")).toBe("first-primary");
    expect(sessionConstraint("POST", undefined)).toBe("first-primary");
  });

  it("ignores a bookmark that is not shaped like one instead of failing the read", async () => {
    expect(sessionConstraint("GET", "'; DROP TABLE products; --")).toBe("first-unconstrained");
    expect(sessionConstraint("GET", "a".repeat(300))).toBe("first-unconstrained");
    const { token } = await seedStore();
    const product = await seedProduct((await seedStore()).storeId);
    const response = await api(`/products/${product.id}`, { token, headers: { [bookmarkHeader]: "not a bookmark" } });
    await expectStatus(response, 404);
  });

  it("a write answers a bookmark, and a read sent with it sees the write (read your own writes)", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, {
      custom_fields: [
        { name: "nip", enabled: true, order: 0 },
        { name: "phone", enabled: true, order: 1 },
      ],
    });
    const deleted = await api(`/products/${product.id}/custom-fields/nip`, { method: "DELETE", token });
    await expectStatus(deleted, 204);
    const bookmark = deleted.headers.get(bookmarkHeader);
    expect(bookmark).toBeTruthy();
    expect(sessionConstraint("GET", bookmark as string)).toBe(bookmark); // D1's own bookmarks pass the shape check
    const read = await api(`/products/${product.id}`, { token, headers: { [bookmarkHeader]: bookmark as string } });
    const body = await expectJson<{ custom_fields: { name: string }[] }>(read, 200);
    expect(read.headers.get(bookmarkHeader)).toBeTruthy();
    expect(body.custom_fields.map((field) => field.name)).toEqual(["phone"]);
  });
});

describe("X-D1-Bookmark from a browser", () => {
  it("is exposed to browser code on responses and allowed on requests of an allowed origin", async () => {
    const { createApp } = await import("../../src/app");
    const { env } = await import("cloudflare:workers");
    const origin = "https://shop.example";
    const bindings = { ...env, CORS_ORIGINS: origin };
    const { token } = await seedStore();
    const read = await createApp().request(
      "/api/v1/subscriptions",
      { headers: { Origin: origin, Authorization: `Bearer ${token}` } },
      bindings,
    );
    expect(read.headers.get("Access-Control-Expose-Headers") ?? "").toContain(bookmarkHeader);
    const preflight = await createApp().request(
      "/api/v1/subscriptions",
      {
        method: "OPTIONS",
        headers: {
          Origin: origin,
          "Access-Control-Request-Method": "GET",
          "Access-Control-Request-Headers": "x-d1-bookmark",
        },
      },
      bindings,
    );
    expect((preflight.headers.get("Access-Control-Allow-Headers") ?? "").toLowerCase()).toContain("x-d1-bookmark");
  });
});
