import { describe, expect, it } from "vitest";
import { resolveStore } from "../../src/http/auth";
import { ApiError } from "../../src/http/errors";
import { bearerRoute } from "../../src/http/route";
import { seedProduct, seedStore, seedToken, uuid } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";

describe("authentication: 401 Unauthenticated.", () => {
  const cases: [string, Record<string, string>][] = [
    ["no Authorization header", {}],
    ["a Basic credential", { Authorization: "Basic dXNlcjpwYXNz" }],
    ["Bearer without a token", { Authorization: "Bearer" }],
    ["Bearer with only spaces", { Authorization: "Bearer    " }],
    ["an unknown token", { Authorization: "Bearer not-a-real-token-at-all" }],
    ["a token with a control character", { Authorization: "Bearer abc\tdef" }],
    ["an oversized token", { Authorization: `Bearer ${"x".repeat(5000)}` }],
  ];
  for (const [name, headers] of cases) {
    it(`refuses ${name}`, async () => {
      const response = await api(`/products/${uuid()}`, { headers });
      expect(await expectJson(response, 401)).toEqual({ message: "Unauthenticated." });
    });
  }

  it("accepts the scheme name in any case", async () => {
    const { token } = await seedStore();
    const response = await api(`/products/${uuid()}`, { headers: { Authorization: `bearer ${token}` } });
    await expectStatus(response, 404);
  });

  it("reports 401 before a malformed path id (order: 401 before 400)", async () => {
    const response = await api("/products/not-a-uuid");
    await expectStatus(response, 401);
  });
});

describe("stores: X-Service-Store", () => {
  it("answers a malformed store header 400 Invalid store ID.", async () => {
    const { token } = await seedStore();
    const response = await api(`/products/${uuid()}`, { token, store: "store-1" });
    expect(await expectJson(response, 400)).toEqual({ message: "Invalid store ID." });
  });

  it("reports a bad store header before a malformed path id", async () => {
    const { token } = await seedStore();
    const response = await api("/products/nope", { token, store: "nope" });
    expect(await expectJson(response, 400)).toEqual({ message: "Invalid store ID." });
  });

  it("answers a store the token may not act on 403 No API access to the requested store.", async () => {
    const { token } = await seedStore();
    const other = await seedStore();
    const response = await api(`/products/${uuid()}`, { token, store: other.storeId });
    expect(await expectJson(response, 403)).toEqual({ message: "No API access to the requested store." });
  });

  it("answers another store's product exactly like an unknown one", async () => {
    const mine = await seedStore();
    const theirs = await seedStore();
    const product = await seedProduct(theirs.storeId);
    const response = await api(`/products/${product.id}`, { token: mine.token });
    expect(await expectJson(response, 404)).toEqual({ message: `Product with ID ${product.id} not found` });
  });

  it("scopes a multi-store token without a header to the product's own store", async () => {
    const first = await seedStore();
    const second = await seedStore();
    const token = await seedToken([first.storeId, second.storeId]);
    const product = await seedProduct(second.storeId);
    await expectStatus(await api(`/products/${product.id}`, { token }), 200);
    const scoped = await api(`/products/${product.id}`, { token, store: first.storeId });
    await expectStatus(scoped, 404);
  });

  it("a route whose guard names an owner parameter its path lacks is refused when the route is built", () => {
    const route = (path: string) =>
      bearerRoute({
        method: "get",
        path,
        guard: { ability: "products:read", store: "optional", owner: { kind: "variant", param: "variantId" } },
        responses: { 204: { description: "Nothing" } },
      });
    expect(() => route("/product-variants/{id}")).toThrowError(
      "/product-variants/{id}: the guard's owner names {variantId}, which the path lacks",
    );
    expect(() => route("/product-variants/{variantId}")).not.toThrow();
  });

  it("accepts the store header in upper case", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    const response = await api(`/products/${product.id}`, { token, store: storeId.toUpperCase() });
    await expectStatus(response, 200);
  });

  it("resolves the store by the rules of docs/api.md (Authentication, stores, abilities)", () => {
    const a = uuid();
    const b = uuid();
    expect(resolveStore(undefined, [a], "optional")).toEqual({ scope: [a], storeId: a });
    expect(resolveStore(undefined, [a, b], "optional")).toEqual({ scope: [a, b], storeId: null });
    expect(resolveStore(b, [a, b], "optional")).toEqual({ scope: [b], storeId: b });
    expect(() => resolveStore(undefined, [a], "required")).toThrowError(
      new ApiError(400, "The X-Service-Store header is required."),
    );
    expect(() => resolveStore("", [a, b], "unambiguous")).toThrowError("The X-Service-Store header is required.");
    expect(resolveStore(undefined, [a], "unambiguous")).toEqual({ scope: [a], storeId: a });
  });
});

describe("abilities", () => {
  it("answers a token without the route's ability 403 This action is unauthorized.", async () => {
    const { storeId } = await seedStore();
    const token = await seedToken([storeId], ["subscriptions:read"]);
    const product = await seedProduct(storeId);
    const response = await api(`/products/${product.id}`, { token });
    expect(await expectJson(response, 403)).toEqual({ message: "This action is unauthorized." });
  });

  it("lets a token with exactly the route's ability through", async () => {
    const { storeId } = await seedStore();
    const token = await seedToken([storeId], ["products:read"]);
    const product = await seedProduct(storeId);
    await expectStatus(await api(`/products/${product.id}`, { token }), 200);
  });

  it("checks the store before the ability", async () => {
    const { storeId } = await seedStore();
    const other = await seedStore();
    const token = await seedToken([storeId], ["subscriptions:read"]);
    const response = await api(`/products/${uuid()}`, { token, store: other.storeId });
    expect(await expectJson(response, 403)).toEqual({ message: "No API access to the requested store." });
  });
});
