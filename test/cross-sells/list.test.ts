import { describe, expect, it } from "vitest";
import { CrossSell } from "../../src/products/cross-sells/resource";
import { type CrossSellInput, seedProduct, seedStore, seedToken, uuid } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";

type List = { items: { id: string; title: string; active: boolean }[]; pagination: Record<string, number> };

/** A complete cross-sell fixture; overrides may blank any field but its id. */
function crossSell(index: number, overrides: Partial<CrossSellInput> = {}): CrossSellInput {
  return {
    id: uuid(),
    product_id: uuid(),
    variant_id: uuid(),
    title: `Oferta ${index}`,
    amount: 990 + index,
    currency: "pln",
    validity_minutes: 15,
    ...overrides,
  };
}

async function productWith(count: number, extra: Record<string, unknown> = {}) {
  const { storeId, token } = await seedStore();
  const crossSells = Array.from({ length: count }, (_, i) => crossSell(i));
  const product = await seedProduct(storeId, { cross_sells: crossSells, ...extra });
  return { storeId, token, product, crossSells };
}

const list = (productId: string, token: string, query = "", draft = false) =>
  api(`/products/${productId}${draft ? "/draft" : ""}/cross-sells${query}`, { token });

describe("GET /products/{productId}/cross-sells: the items listed", () => {
  it("returns {items, pagination} with every field of the Cross-sell resource", async () => {
    const { storeId, token } = await seedStore();
    const item = crossSell(1, {
      parent_id: uuid(),
      main_description: "<p>Main</p>",
      description: { blocks: [] },
      button_text: "Dodaj",
      discount: 10,
      one_purchase: true,
      send_offer: true,
    });
    const product = await seedProduct(storeId, { cross_sells: [item] });
    const response = await list(product.id, token);
    const body = await expectJson<List>(response, 200);
    expect(body.items).toEqual([{ ...item, active: true }]);
    expect(Object.keys(body.items[0] ?? {}).sort()).toEqual(Object.keys(CrossSell.shape).sort());
    expect(body.pagination).toEqual({ current_page: 1, total_pages: 1, per_page: 25, total: 1 });
  });

  it("matches the product id case-insensitively: an upper-case id lists the product's cross-sells", async () => {
    const { token, product, crossSells } = await productWith(2);
    const response = await list(product.id.toUpperCase(), token);
    expect((await expectJson<List>(response, 200)).items.map((item) => item.id)).toEqual(
      crossSells.map((item) => item.id),
    );
  });

  it("list cross-sells rules 1 and 2 (docs/api.md, List cross-sells): includes inactive cross-sells, in display order", async () => {
    const { storeId, token } = await seedStore();
    const items = [crossSell(0), crossSell(1, { active: false }), crossSell(2)];
    const product = await seedProduct(storeId, { cross_sells: items });
    const body = await expectJson<List>(await list(product.id, token), 200);
    expect(body.items.map((i) => i.id)).toEqual(items.map((i) => i.id));
    expect(body.items.map((i) => i.active)).toEqual([true, false, true]);
  });

  it("list cross-sells rule 3 (docs/api.md, List cross-sells): omits incomplete cross-sells and does not count them, keeping order and totals right", async () => {
    const { storeId, token } = await seedStore();
    const required = ["product_id", "variant_id", "title", "amount", "currency", "validity_minutes"] as const;
    const incomplete = required.map((field, i) => {
      const item = crossSell(100 + i);
      delete item[field];
      return item;
    });
    const complete = [crossSell(0), crossSell(1), crossSell(2)];
    const mixed = [complete[0], incomplete[0], incomplete[1], complete[1], ...incomplete.slice(2), complete[2]].filter(
      (item) => item !== undefined,
    );
    const product = await seedProduct(storeId, { cross_sells: mixed });
    const firstPage = await expectJson<List>(await list(product.id, token, "?per_page=2"), 200);
    expect(firstPage.items.map((i) => i.id)).toEqual([complete[0]?.id, complete[1]?.id]);
    expect(firstPage.pagination).toEqual({ current_page: 1, total_pages: 2, per_page: 2, total: 3 });
    const secondPage = await expectJson<List>(await list(product.id, token, "?page=2&per_page=2"), 200);
    expect(secondPage.items.map((i) => i.id)).toEqual([complete[2]?.id]);
  });

  it("with no cross-sells: empty items and total_pages 1", async () => {
    const { token, product } = await productWith(0);
    const body = await expectJson<List>(await list(product.id, token), 200);
    expect(body).toEqual({ items: [], pagination: { current_page: 1, total_pages: 1, per_page: 25, total: 0 } });
  });
});

describe("GET /products/{productId}/cross-sells: pages", () => {
  it("pages by 25 by default: exactly 25 is one page, 26 is two", async () => {
    const exact = await productWith(25);
    const one = await expectJson<List>(await list(exact.product.id, exact.token), 200);
    expect(one.items).toHaveLength(25);
    expect(one.pagination).toEqual({ current_page: 1, total_pages: 1, per_page: 25, total: 25 });

    const over = await productWith(26);
    const first = await expectJson<List>(await list(over.product.id, over.token), 200);
    expect(first.pagination).toEqual({ current_page: 1, total_pages: 2, per_page: 25, total: 26 });
    const second = await expectJson<List>(await list(over.product.id, over.token, "?page=2"), 200);
    expect(second.items.map((i) => i.id)).toEqual([over.crossSells[25]?.id]);
  });

  it("serves 101 items in two pages of per_page=100", async () => {
    const { token, product, crossSells } = await productWith(101);
    const first = await expectJson<List>(await list(product.id, token, "?per_page=100"), 200);
    expect(first.items).toHaveLength(100);
    expect(first.pagination).toEqual({ current_page: 1, total_pages: 2, per_page: 100, total: 101 });
    const second = await expectJson<List>(await list(product.id, token, "?per_page=100&page=2"), 200);
    expect(second.items.map((i) => i.id)).toEqual([crossSells[100]?.id]);
  });

  it("list cross-sells rule 4 (docs/api.md, List cross-sells): a page past the last returns empty items and the requested current_page", async () => {
    const { token, product } = await productWith(3);
    const body = await expectJson<List>(await list(product.id, token, "?page=101"), 200);
    expect(body).toEqual({ items: [], pagination: { current_page: 101, total_pages: 1, per_page: 25, total: 3 } });
  });

  it("treats empty page and per_page as absent", async () => {
    const { token, product } = await productWith(2);
    const body = await expectJson<List>(await list(product.id, token, "?page=&per_page="), 200);
    expect(body.pagination).toEqual({ current_page: 1, total_pages: 1, per_page: 25, total: 2 });
  });

  it("answers page and per_page that are not integers in range 422 with errors.page / errors.per_page", async () => {
    const { token, product } = await productWith(1);
    const cases: [string, string][] = [
      ["?page=0", "page"],
      ["?page=-1", "page"],
      ["?page=abc", "page"],
      ["?page=1.5", "page"],
      ["?page=99999999999999999999", "page"],
      ["?per_page=0", "per_page"],
      ["?per_page=101", "per_page"],
      ["?per_page=ten", "per_page"],
      ["?per_page=2e1", "per_page"],
    ];
    for (const [query, field] of cases) {
      const response = await list(product.id, token, query);
      const body = await expectJson<{ message: string; errors: Record<string, string[]> }>(response, 422, query);
      expect(body.message).toBe("The given data was invalid.");
      expect(Object.keys(body.errors), query).toEqual([field]);
    }
  });
});

describe("GET /products/{productId}/cross-sells: access and ids", () => {
  it("store rules: a store the token may not act on is 403 no API access; another store's product is 404", async () => {
    const { token, product } = await productWith(1);
    const other = await productWith(1);
    await expectStatus(await list(product.id, token), 200);
    const wrongStore = await api(`/products/${product.id}/cross-sells`, { token, store: other.storeId });
    expect(await expectJson(wrongStore, 403)).toEqual({ message: "No API access to the requested store." });
    const otherProduct = await list(other.product.id, token);
    expect(await expectJson(otherProduct, 404)).toEqual({ message: `Product with ID ${other.product.id} not found` });
  });

  it("answers a malformed product id 400 before query validation", async () => {
    const { token } = await productWith(0);
    const response = await api("/products/nope/cross-sells?page=abc", { token });
    expect(await expectJson(response, 400)).toEqual({ message: "Invalid product ID." });
  });

  it("needs products:read", async () => {
    const { storeId, product } = await productWith(1);
    const token = await seedToken([storeId], ["subscriptions:read"]);
    await expectStatus(await list(product.id, token), 403);
  });
});

describe("GET /products/{productId}/draft/cross-sells", () => {
  it("reads the overlay collection with the same item shape and rules", async () => {
    const { storeId, token } = await seedStore();
    const draftItems = [crossSell(0), { id: uuid(), title: "incomplete" }, crossSell(2, { active: false })];
    const product = await seedProduct(storeId, {
      cross_sells: [crossSell(9)],
      draft: { cross_sells: draftItems },
    });
    const body = await expectJson<List>(await list(product.id, token, "", true), 200);
    expect(body.items.map((i) => i.id)).toEqual([draftItems[0]?.id, draftItems[2]?.id]);
    expect(body.pagination).toEqual({ current_page: 1, total_pages: 1, per_page: 25, total: 2 });
    expect(CrossSell.array().safeParse(body.items).success).toBe(true);
    const past = await expectJson<List>(await list(product.id, token, "?page=3&per_page=1", true), 200);
    expect(past).toEqual({ items: [], pagination: { current_page: 3, total_pages: 2, per_page: 1, total: 2 } });
  });

  it("answers a product without a draft 404 has no draft", async () => {
    const { token, product } = await productWith(1);
    const response = await list(product.id, token, "", true);
    expect(await expectJson(response, 404)).toEqual({ message: `Product with ID ${product.id} has no draft.` });
  });
});
