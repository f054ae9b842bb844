import { describe, expect, it } from "vitest";
import { customFieldMessages } from "../../src/products/custom-fields";
import { draftMessages } from "../../src/products/drafts";
import { customFields, seedProduct, seedStore, seedToken, storeD1, uuid, variantInput } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";
import { readDraft, readProduct, storedProduct } from "../support/products";

const names = (list: unknown) => (list as { name: string; order: number }[]).map((f) => `${f.order}:${f.name}`);

async function liveProduct(overrides = {}) {
  const { storeId, token } = await seedStore();
  const variant = variantInput({ custom_fields: customFields("size", "colour") });
  const product = await seedProduct(storeId, {
    custom_fields: customFields("nip", "phone", "company"),
    waitlist_custom_fields: customFields("email", "city"),
    variants: [variant],
    ...overrides,
  });
  return { storeId, token, product, variantId: variant.id as string };
}

async function productWithDraft() {
  const { storeId, token } = await seedStore();
  const draftVariant = variantInput({ status: "draft", custom_fields: customFields("size", "colour") });
  const product = await seedProduct(storeId, {
    custom_fields: customFields("live-only"),
    draft: {
      draft_version: 2,
      custom_fields: customFields("nip", "phone", "company"),
      waitlist_custom_fields: customFields("email", "city"),
      variants: [draftVariant],
    },
  });
  return { storeId, token, product, variantId: draftVariant.id as string };
}

const del = (path: string, token: string, body?: unknown) => api(path, { method: "DELETE", token, body });

describe("live custom-field deletes: the delete rules", () => {
  it("delete custom field rule 1 (docs/api.md, Delete custom field): deletes a product field with 204 and an empty body, renumbering the rest 0..n-1", async () => {
    const { token, product } = await liveProduct();
    const response = await del(`/products/${product.id}/custom-fields/phone`, token);
    await expectStatus(response, 204);
    expect(await response.text()).toBe("");
    const body = await readProduct(product.id, token);
    expect(names(body.custom_fields)).toEqual(["0:nip", "1:company"]);
  });

  it("delete custom field rule 1 (docs/api.md, Delete custom field): deletes a waitlist field and renumbers", async () => {
    const { token, product } = await liveProduct();
    await expectStatus(await del(`/products/${product.id}/waitlist-custom-fields/email`, token), 204);
    const body = await readProduct(product.id, token);
    expect(names(body.waitlist_custom_fields)).toEqual(["0:city"]);
    expect(names(body.custom_fields)).toEqual(["0:nip", "1:phone", "2:company"]);
  });

  it("delete custom field rule 1 (docs/api.md, Delete custom field): deletes a variant field and renumbers", async () => {
    const { token, product, variantId } = await liveProduct();
    await expectStatus(await del(`/product-variants/${variantId}/custom-fields/size`, token), 204);
    const body = await readProduct(product.id, token);
    expect(names((body.variants as { custom_fields: unknown }[])[0]?.custom_fields)).toEqual(["0:colour"]);
  });

  it("matches path ids case-insensitively: upper-case product and variant ids delete their fields", async () => {
    const { token, product, variantId } = await liveProduct();
    await expectStatus(await del(`/products/${product.id.toUpperCase()}/custom-fields/phone`, token), 204);
    await expectStatus(await del(`/product-variants/${variantId.toUpperCase()}/custom-fields/size`, token), 204);
    const body = await readProduct<{ custom_fields: unknown; variants: { custom_fields: unknown }[] }>(
      product.id,
      token,
    );
    expect(names(body.custom_fields)).toEqual(["0:nip", "1:company"]);
    expect(names(body.variants[0]?.custom_fields)).toEqual(["0:colour"]);
  });

  it("delete custom field rule 2 (docs/api.md, Delete custom field): a second delete of the same name returns 404 Custom field with name <name> not found", async () => {
    const { token, product } = await liveProduct();
    await expectStatus(await del(`/products/${product.id}/custom-fields/nip`, token), 204);
    const again = await del(`/products/${product.id}/custom-fields/nip`, token);
    expect(await expectJson(again, 404)).toEqual({ message: "Custom field with name nip not found" });
  });

  it("delete custom field rule 3 (docs/api.md, Delete custom field): deleting the last variant field leaves an empty stored array, read as [] not null", async () => {
    const { token, product, variantId } = await liveProduct();
    await del(`/product-variants/${variantId}/custom-fields/size`, token);
    await expectStatus(await del(`/product-variants/${variantId}/custom-fields/colour`, token), 204);
    const body = await readProduct(product.id, token);
    expect((body.variants as { custom_fields: unknown }[])[0]?.custom_fields).toEqual([]);
    const stored = await storedProduct(product.id);
    expect(stored.variants).toEqual([{ id: variantId, custom_fields: [] }]);
  });

  it("delete custom field rule 4 (docs/api.md, Delete custom field): a live delete while the product has a draft returns 409 and deletes nothing", async () => {
    const { token, product } = await productWithDraft();
    const response = await del(`/products/${product.id}/custom-fields/live-only`, token);
    expect(await expectJson(response, 409)).toEqual({ message: customFieldMessages.productHasDraft });
    expect((await storedProduct(product.id)).custom_fields).toEqual(customFields("live-only"));
  });

  it("delete custom field rule 4 (docs/api.md, Delete custom field): the has-draft 409 comes before the unknown-field 404", async () => {
    const { token, product } = await productWithDraft();
    await expectStatus(await del(`/products/${product.id}/custom-fields/never-existed`, token), 409);
  });
});

describe("live custom-field deletes: refusals and names", () => {
  it("answers unknown, archived and other-store products 404 with the product message", async () => {
    const { token, storeId } = await liveProduct();
    const archived = await seedProduct(storeId, { status: "archived", custom_fields: customFields("nip") });
    const other = await liveProduct();
    for (const id of [uuid(), archived.id, other.product.id]) {
      const response = await del(`/products/${id}/custom-fields/nip`, token);
      expect(await expectJson(response, 404)).toEqual({ message: `Product with ID ${id} not found` });
    }
    expect((await storedProduct(other.product.id)).custom_fields).toHaveLength(3);
  });

  it("answers unknown and other-store variants 404 Variant with ID <id> not found", async () => {
    const { token } = await liveProduct();
    const other = await liveProduct();
    for (const id of [uuid(), other.variantId]) {
      const response = await del(`/product-variants/${id}/custom-fields/size`, token);
      expect(await expectJson(response, 404)).toEqual({ message: `Variant with ID ${id} not found` });
    }
  });

  it("answers malformed ids 400 before any lookup", async () => {
    const { token } = await liveProduct();
    const product = await del("/products/123/custom-fields/nip", token);
    expect(await expectJson(product, 400)).toEqual({ message: "Invalid product ID." });
    const variant = await del("/product-variants/abc/custom-fields/nip", token);
    expect(await expectJson(variant, 400)).toEqual({ message: "Invalid variant ID." });
  });

  it("needs products:write (403 This action is unauthorized.)", async () => {
    const { storeId, product } = await liveProduct();
    const reader = await seedToken([storeId], ["products:read"]);
    const response = await del(`/products/${product.id}/custom-fields/nip`, reader);
    expect(await expectJson(response, 403)).toEqual({ message: "This action is unauthorized." });
  });

  it("treats names that cannot be slugs as simply not found", async () => {
    const { token, product } = await liveProduct();
    const odd = ["Łódź-żółw", "%2F", "a%2Fb", "with%20space", "x".repeat(200), "%E2%9C%93", "...", "%25", "NIP"];
    for (const name of odd) {
      const response = await del(`/products/${product.id}/custom-fields/${name}`, token);
      expect((await expectJson<{ message: string }>(response, 404, name)).message, name).toMatch(
        /^Custom field with name .* not found$/,
      );
    }
  });

  it("decodes a percent-encoded name once", async () => {
    const { token, product } = await liveProduct({ custom_fields: customFields("a b", "c%41") });
    await expectStatus(await del(`/products/${product.id}/custom-fields/a%20b`, token), 204);
    const literal = await del(`/products/${product.id}/custom-fields/c%2541`, token);
    await expectStatus(literal, 204);
  });
});

describe("live custom-field deletes: the change record and races", () => {
  it("records the change of the fields section only when a field was deleted", async () => {
    const { token, product } = await liveProduct();
    const home = await storeD1(product.store_id);
    const fieldsChangedAt = async () =>
      (
        await home
          .prepare("SELECT fields_updated_at AS at FROM products WHERE id = ?")
          .bind(product.id)
          .first<{ at: number }>()
      )?.at;
    expect(await fieldsChangedAt()).toBe(0);
    await expectStatus(await del(`/products/${product.id}/custom-fields/unknown`, token), 404);
    expect(await fieldsChangedAt()).toBe(0);
    const before = Date.now();
    await expectStatus(await del(`/products/${product.id}/custom-fields/nip`, token), 204);
    expect(await fieldsChangedAt()).toBeGreaterThanOrEqual(before);
  });

  it("race: two concurrent deletes of different fields both succeed and leave order contiguous", async () => {
    const { token, product } = await liveProduct();
    const results = await Promise.all([
      del(`/products/${product.id}/custom-fields/nip`, token),
      del(`/products/${product.id}/custom-fields/company`, token),
    ]);
    expect(results.map((r) => r.status)).toEqual([204, 204]);
    const body = await readProduct(product.id, token);
    expect(names(body.custom_fields)).toEqual(["0:phone"]);
  });

  it("race: two concurrent deletes of the same field give one 204 and one 404", async () => {
    const { token, product } = await liveProduct();
    const results = await Promise.all([
      del(`/products/${product.id}/custom-fields/phone`, token),
      del(`/products/${product.id}/custom-fields/phone`, token),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([204, 404]);
    const body = await readProduct(product.id, token);
    expect(names(body.custom_fields)).toEqual(["0:nip", "1:company"]);
  });
});

describe("draft custom-field deletes: the delete rules on the overlay", () => {
  it("delete custom field rule 1 (docs/api.md, Delete custom field): deletes on the overlay only, renumbers, and bumps draft_version by one", async () => {
    const { token, product } = await productWithDraft();
    const response = await del(`/products/${product.id}/draft/custom-fields/phone`, token, { draft_version: 2 });
    await expectStatus(response, 204);
    expect(await response.text()).toBe("");
    const draft = await api(`/products/${product.id}/draft`, { token });
    const body = await expectJson(draft, 200);
    expect(draft.headers.get("ETag")).toBe('"3"');
    expect(body.draft_version).toBe(3);
    expect(names(body.custom_fields)).toEqual(["0:nip", "1:company"]);
    const live = await readProduct(product.id, token);
    expect(names(live.custom_fields)).toEqual(["0:live-only"]);
  });

  it("deletes waitlist and variant fields of the overlay, including an unpublished draft variant", async () => {
    const { token, product, variantId } = await productWithDraft();
    await expectStatus(
      await del(`/products/${product.id}/draft/waitlist-custom-fields/city`, token, { draft_version: 2 }),
      204,
    );
    await expectStatus(
      await del(`/products/${product.id}/draft/variants/${variantId}/custom-fields/size`, token, { draft_version: 3 }),
      204,
    );
    const body = await readDraft(product.id, token);
    expect(names(body.waitlist_custom_fields)).toEqual(["0:email"]);
    expect(names((body.variants as { custom_fields: unknown }[])[0]?.custom_fields)).toEqual(["0:colour"]);
  });

  it("delete custom field rule 3 (docs/api.md, Delete custom field) on the draft: deleting the last variant field leaves []", async () => {
    const { token, product, variantId } = await productWithDraft();
    await del(`/products/${product.id}/draft/variants/${variantId}/custom-fields/size`, token, { draft_version: 2 });
    await del(`/products/${product.id}/draft/variants/${variantId}/custom-fields/colour`, token, { draft_version: 3 });
    const body = await readDraft(product.id, token);
    expect((body.variants as { custom_fields: unknown }[])[0]?.custom_fields).toEqual([]);
  });

  it("delete custom field rule 2 (docs/api.md, Delete custom field) on the draft: a second delete of the same name returns 404", async () => {
    const { token, product } = await productWithDraft();
    await del(`/products/${product.id}/draft/custom-fields/nip`, token, { draft_version: 2 });
    const again = await del(`/products/${product.id}/draft/custom-fields/nip`, token, { draft_version: 3 });
    expect(await expectJson(again, 404)).toEqual({ message: "Custom field with name nip not found" });
  });

  it("delete custom field rule 5 (docs/api.md, Delete custom field): a stale draft_version returns 409 and changes nothing", async () => {
    const { token, product } = await productWithDraft();
    for (const version of [1, 3]) {
      const response = await del(`/products/${product.id}/draft/custom-fields/nip`, token, { draft_version: version });
      expect(await expectJson(response, 409)).toEqual({ message: draftMessages.stale });
    }
    const body = await readDraft(product.id, token);
    expect(body.draft_version).toBe(2);
    expect(names(body.custom_fields)).toEqual(["0:nip", "1:phone", "2:company"]);
  });
});

describe("draft custom-field deletes: draft_version and the order of refusals", () => {
  it("delete custom field rule 6 (docs/api.md, Delete custom field): a missing draft_version returns 422 with errors.draft_version", async () => {
    const { token, product } = await productWithDraft();
    const bodies: (string | undefined)[] = [
      undefined,
      "",
      "{}",
      "not json",
      "[]",
      "[1]",
      "null",
      '"2"',
      '{"draft_version": null}',
    ];
    for (const raw of bodies) {
      const response = await api(`/products/${product.id}/draft/custom-fields/nip`, {
        method: "DELETE",
        token,
        rawBody: raw,
        headers: raw === undefined ? {} : { "Content-Type": "application/json" },
      });
      const body = await expectJson<{ message: string; errors: Record<string, string[]> }>(response, 422, String(raw));
      expect(body.message).toBe("The given data was invalid.");
      expect(Object.keys(body.errors)).toEqual(["draft_version"]);
    }
  });

  it("delete custom field rule 6 (docs/api.md, Delete custom field): a draft_version that is not an integer >= 1 returns 422 with errors.draft_version", async () => {
    const { token, product } = await productWithDraft();
    for (const version of ["2", 2.5, 0, -1, 1e20, true, {}, [2]]) {
      const response = await del(`/products/${product.id}/draft/custom-fields/nip`, token, { draft_version: version });
      expect(await expectJson(response, 422, JSON.stringify(version))).toEqual({
        message: "The given data was invalid.",
        errors: { draft_version: [draftMessages.versionInvalid] },
      });
    }
  });

  it("order: no draft (404) before the version check (422)", async () => {
    const { token, product } = await liveProduct();
    const response = await del(`/products/${product.id}/draft/custom-fields/nip`, token);
    expect(await expectJson(response, 404)).toEqual({ message: `Product with ID ${product.id} has no draft.` });
  });

  it("order: stale version (409) before the unknown field (404)", async () => {
    const { token, product } = await productWithDraft();
    expect((await del(`/products/${product.id}/draft/custom-fields/ghost`, token, { draft_version: 9 })).status).toBe(
      409,
    );
    expect((await del(`/products/${product.id}/draft/custom-fields/ghost`, token, { draft_version: 2 })).status).toBe(
      404,
    );
  });
});

describe("draft custom-field deletes: variants, other stores and races", () => {
  it("answers a variant not in the overlay 404 Variant with ID <id> not found", async () => {
    const { token, product } = await productWithDraft();
    const id = uuid();
    const response = await del(`/products/${product.id}/draft/variants/${id}/custom-fields/size`, token, {
      draft_version: 2,
    });
    expect(await expectJson(response, 404)).toEqual({ message: `Variant with ID ${id} not found` });
  });

  it("answers other-store products exactly like unknown ones", async () => {
    const mine = await seedStore();
    const { product } = await productWithDraft();
    const response = await del(`/products/${product.id}/draft/custom-fields/nip`, mine.token, { draft_version: 2 });
    expect(await expectJson(response, 404)).toEqual({ message: `Product with ID ${product.id} not found` });
  });

  it("race: two concurrent deletes with the same version give exactly one 204 and one 409", async () => {
    const { token, product } = await productWithDraft();
    const results = await Promise.all([
      del(`/products/${product.id}/draft/custom-fields/nip`, token, { draft_version: 2 }),
      del(`/products/${product.id}/draft/custom-fields/company`, token, { draft_version: 2 }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([204, 409]);
    const body = await readDraft(product.id, token);
    expect(body.draft_version).toBe(3);
    expect((body.custom_fields as unknown[]).length).toBe(2);
    expect((body.custom_fields as { order: number }[]).map((f) => f.order)).toEqual([0, 1]);
  });
});

describe("DELETE /products/{id}/draft", () => {
  it("drops the overlay: 204, has_draft false, live writes possible again", async () => {
    const { token, product } = await productWithDraft();
    const response = await api(`/products/${product.id}/draft`, { method: "DELETE", token, body: { ignored: true } });
    await expectStatus(response, 204);
    expect(await response.text()).toBe("");
    expect((await readProduct(product.id, token)).has_draft).toBe(false);
    await expectStatus(await del(`/products/${product.id}/custom-fields/live-only`, token), 204);
  });

  it("answers 404 Product with ID <id> has no draft. when there is none", async () => {
    const { token, product } = await liveProduct();
    const response = await api(`/products/${product.id}/draft`, { method: "DELETE", token });
    expect(await expectJson(response, 404)).toEqual({ message: `Product with ID ${product.id} has no draft.` });
  });

  it("makes a draft write with the old version answer 404 no draft", async () => {
    const { token, product } = await productWithDraft();
    await api(`/products/${product.id}/draft`, { method: "DELETE", token });
    const response = await del(`/products/${product.id}/draft/custom-fields/nip`, token, { draft_version: 2 });
    await expectStatus(response, 404);
  });

  it("needs products:write", async () => {
    const { storeId, product } = await productWithDraft();
    const reader = await seedToken([storeId], ["products:read"]);
    await expectStatus(await api(`/products/${product.id}/draft`, { method: "DELETE", token: reader }), 403);
  });
});
