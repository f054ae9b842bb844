import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { productInput, seedStore, uuid } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";
import { readProduct } from "../support/products";

function storeDocument() {
  const storeId = uuid();
  const token = `fixture-token-${uuid()}`;
  const product = productInput(storeId, {
    custom_fields: [{ name: "nip", enabled: true }],
    cross_sells: [{ id: uuid(), title: "Incomplete" }],
    courses: [uuid()],
  });
  return {
    storeId,
    token,
    product,
    document: {
      stores: [{ id: storeId, name: "Fixture store", plan_active: true, platform: { connected: false } }],
      tokens: [{ token, store_ids: [storeId], abilities: ["*"] }],
      products: [product],
      subscriptions: [
        {
          id: uuid(),
          store_id: storeId,
          customer_id: uuid(),
          customer_name: "Łukasz Nowak",
          product_id: product.id,
          variant_id: uuid(),
        },
      ],
    },
  };
}

describe("POST /api/v1/_dev/fixtures", () => {
  it("loads a document and answers 201 with the counts", async () => {
    const { document, token, product } = storeDocument();
    const response = await api("/_dev/fixtures", { method: "POST", body: document });
    expect(await expectJson(response, 201)).toEqual({
      loaded: { stores: 1, tokens: 1, products: 1, cross_sells: 1, subscriptions: 1 },
    });
    await expectStatus(await api(`/products/${product.id}`, { token }), 200);
  });

  it("upserts by id, so loading the same document twice is harmless", async () => {
    const { document, token, product } = storeDocument();
    await expectStatus(await api("/_dev/fixtures", { method: "POST", body: document }), 201);
    const renamed = { ...document, products: [{ ...product, name: "Renamed" }] };
    await expectStatus(await api("/_dev/fixtures", { method: "POST", body: renamed }), 201);
    const body = await readProduct(product.id, token);
    expect(body.name).toBe("Renamed");
    expect(body.custom_fields).toEqual([{ name: "nip", enabled: true, order: 0 }]);
  });

  it("answers a document that does not match 422 {message, errors}", async () => {
    const response = await api("/_dev/fixtures", {
      method: "POST",
      body: {
        stores: [{ id: "not-a-uuid", name: "" }],
        tokens: [{ token: "short", store_ids: [], abilities: ["fly"] }],
      },
    });
    const body = await expectJson<{ message: string; errors: Record<string, string[]> }>(response, 422);
    expect(body.message).toBe("The given data was invalid.");
    expect(Object.keys(body.errors)).toEqual(
      expect.arrayContaining([
        "stores.0.id",
        "stores.0.name",
        "tokens.0.token",
        "tokens.0.store_ids",
        "tokens.0.abilities.0",
      ]),
    );
  });

  it("writes nothing when any part of the document is wrong (all or nothing)", async () => {
    const { document, token, product } = storeDocument();
    const broken = { ...document, products: [product, productInput(uuid())] };
    const response = await api("/_dev/fixtures", { method: "POST", body: broken });
    expect((await expectJson<{ errors: object }>(response, 422)).errors).toHaveProperty(["products.1.store_id"]);
    await expectStatus(await api(`/products/${product.id}`, { token }), 401);
  });

  it("refuses a slug held by another product of the store, writing nothing", async () => {
    const { storeId, token } = await seedStore();
    const first = productInput(storeId);
    await expectStatus(await api("/_dev/fixtures", { method: "POST", body: { products: [first] } }), 201);
    const clash = productInput(storeId, { slug: first.slug, name: "Clash" });
    const response = await api("/_dev/fixtures", { method: "POST", body: { products: [clash] } });
    await expectStatus(response, 422);
    await expectStatus(await api(`/products/${clash.id}`, { token }), 404);
  });

  it("answers malformed JSON 400 Malformed JSON body.", async () => {
    const response = await api("/_dev/fixtures", {
      method: "POST",
      rawBody: '{"stores": [',
      headers: { "Content-Type": "application/json" },
    });
    expect(await expectJson(response, 400)).toEqual({ message: "Malformed JSON body." });
  });

  it("answers a JSON body that is not an object 400 Malformed JSON body.", async () => {
    for (const raw of ["[]", '"text"', "42", "null"]) {
      const response = await api("/_dev/fixtures", {
        method: "POST",
        rawBody: raw,
        headers: { "Content-Type": "application/json" },
      });
      expect(await expectJson(response, 400, raw)).toEqual({ message: "Malformed JSON body." });
    }
  });

  it("refuses a body over the limit 413 without reading it", async () => {
    const response = await api("/_dev/fixtures", {
      method: "POST",
      rawBody: "x".repeat(33 * 1024 * 1024),
      headers: { "Content-Type": "application/json" },
    });
    expect(await expectJson(response, 413)).toEqual({ message: "Request body too large." });
  });
});

describe("GET /api/v1/_dev/products/{id}", () => {
  it("shows the stored truth the public shape does not carry", async () => {
    const { document, product } = storeDocument();
    await api("/_dev/fixtures", { method: "POST", body: document });
    const response = await api(`/_dev/products/${product.id}`);
    expect(await expectJson(response, 200)).toEqual({
      courses: product.courses,
      redirect_course_id: null,
      wall_id: null,
      footer_id: null,
      draft_version: null,
      custom_fields: [{ name: "nip", enabled: true, order: 0 }],
      waitlist_custom_fields: null,
      variants: [{ id: product.variants?.[0]?.id, custom_fields: null }],
    });
  });

  it("answers an unknown product 404", async () => {
    const id = uuid();
    const response = await api(`/_dev/products/${id}`);
    expect(await expectJson(response, 404)).toEqual({ message: `Product with ID ${id} not found` });
  });
});

describe("DEV_FIXTURES=off", () => {
  it("makes every _dev route answer like an unknown route", async () => {
    const app = createApp();
    const off = { ...env, DEV_FIXTURES: "off" };
    const load = await app.request("/api/v1/_dev/fixtures", { method: "POST", body: "{}" }, off);
    expect(await expectJson(load, 404)).toEqual({ message: "Not found." });
    const read = await app.request(`/api/v1/_dev/products/${uuid()}`, {}, off);
    await expectStatus(read, 404);
    const wrongMethod = await app.request("/api/v1/_dev/fixtures", { method: "GET" }, off);
    await expectStatus(wrongMethod, 404);
  });
});
