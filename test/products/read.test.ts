import { describe, expect, it } from "vitest";
import { DraftProduct, Product, Variant } from "../../src/products/resource";
import { productInput, seed, seedProduct, seedStore, uuid, variantInput } from "../support/factories";
import { api, expectJson, expectStatus, origin } from "../support/http";
import { readDraft, readProduct } from "../support/products";

describe("GET /products/{id}", () => {
  it("returns the Product resource with every field of the specification, null-valued ones as null", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { description: "Opis", refund_days: 14 });
    const response = await api(`/products/${product.id}`, { token });
    const body = await expectJson(response, 200);
    expect(Object.keys(body).sort()).toEqual(Object.keys(Product.shape).sort());
    expect(body).toMatchObject({ id: product.id, status: "published", description: "Opis", refund_days: 14 });
    expect(body.delegation_label).toBeNull();
    expect(body.styles).toBeNull();
    expect(body.footer_text).toBe("");
    expect(body.delivery_address_optional).toBe(true);
    expect(body.has_draft).toBe(false);
    const [variant] = body.variants as Record<string, unknown>[];
    expect(Object.keys(variant ?? {}).sort()).toEqual(Object.keys(Variant.shape).sort());
    expect(variant).toMatchObject({ type: "one_time", recurring_options: null, upsells: [], custom_fields: null });
    expect(Product.safeParse(body).success).toBe(true);
  });

  it("matches the product id case-insensitively: an upper-case id of an existing product finds it", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    const response = await api(`/products/${product.id.toUpperCase()}`, { token });
    expect((await expectJson(response, 200)).id).toBe(product.id);
  });

  it("lists custom fields as {name, enabled, order, ...definition} sorted by order", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, {
      custom_fields: [
        { name: "nip", enabled: true, order: 1, label: "NIP" },
        { name: "phone", enabled: false, order: 0 },
      ],
      variants: [variantInput({ custom_fields: [] }), variantInput()],
    });
    const body = await readProduct(product.id, token);
    expect(body.custom_fields).toEqual([
      { name: "phone", enabled: false, order: 0 },
      { name: "nip", enabled: true, order: 1, label: "NIP" },
    ]);
    expect(body.waitlist_custom_fields).toBeNull();
    const variants = body.variants as { custom_fields: unknown }[];
    expect(variants.map((variant) => variant.custom_fields)).toEqual([[], null]);
  });

  it("answers archived products like unknown ones (404)", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { status: "archived" });
    const response = await api(`/products/${product.id}`, { token });
    expect(await expectJson(response, 404)).toEqual({ message: `Product with ID ${product.id} not found` });
  });

  it("answers an unknown product 404 with the specification's message", async () => {
    const { token } = await seedStore();
    const id = uuid();
    const response = await api(`/products/${id}`, { token });
    expect(await expectJson(response, 404)).toEqual({ message: `Product with ID ${id} not found` });
  });

  it("answers a malformed product id 400 Invalid product ID.", async () => {
    const { token } = await seedStore();
    for (const bad of ["123", "not-a-uuid", "%20", `${uuid()}x`]) {
      const response = await api(`/products/${bad}`, { token });
      expect(await expectJson(response, 400, bad)).toEqual({ message: "Invalid product ID." });
    }
  });

  it("shows has_draft true while an overlay exists", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, { draft: { draft_version: 3 } });
    const body = await readProduct(product.id, token);
    expect(body.has_draft).toBe(true);
  });
});

describe("GET /products/{id}/draft", () => {
  it("returns the overlay in the Product shape plus draft_version, with an ETag carrying it", async () => {
    const { storeId, token } = await seedStore();
    const draftVariant = variantInput({ name: "Draft-only variant", status: "draft" });
    const product = productInput(storeId, {
      name: "Live name",
      custom_fields: [{ name: "live-field", enabled: true }],
      draft: {
        draft_version: 4,
        product: { name: "Draft name", description: "Nowy opis" },
        custom_fields: [{ name: "draft-field", enabled: true }],
        variants: [draftVariant],
      },
    });
    await seed({ products: [product] });
    const response = await api(`/products/${product.id}/draft`, { token });
    const body = await expectJson(response, 200);
    expect(response.headers.get("ETag")).toBe('"4"');
    expect(DraftProduct.safeParse(body).success).toBe(true);
    expect(body).toMatchObject({
      id: product.id,
      name: "Draft name",
      description: "Nowy opis",
      slug: product.slug,
      draft_version: 4,
      has_draft: true,
      custom_fields: [{ name: "draft-field", enabled: true, order: 0 }],
    });
    expect((body.variants as { id: string }[]).map((variant) => variant.id)).toEqual([draftVariant.id]);

    const live = await readProduct(product.id, token);
    expect(live).toMatchObject({ name: "Live name", custom_fields: [{ name: "live-field", enabled: true, order: 0 }] });
  });

  it("answers a product without a draft 404 'Product with ID <id> has no draft.'", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    const response = await api(`/products/${product.id}/draft`, { token });
    expect(await expectJson(response, 404)).toEqual({ message: `Product with ID ${product.id} has no draft.` });
  });
});

describe("draft overlay fields", () => {
  it("keeps live values for product fields the draft leaves out", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, {
      image_url: "https://cdn.example/cover.webp",
      refund_days: 30,
      draft: { product: { description: "Only this changes" } },
    });
    const body = await readDraft(product.id, token);
    expect(body).toMatchObject({
      description: "Only this changes",
      image_url: "https://cdn.example/cover.webp",
      refund_days: 30,
    });
  });
});

describe("file download links", () => {
  it("gives private files a signed, expiring download_url that the file route accepts", async () => {
    const { env, exports } = await import("cloudflare:workers");
    const { privateFileKey } = await import("../../src/storage/keys");
    const { storeId, token } = await seedStore();
    const uploadId = uuid();
    const locator = `https://checkout.test/files/${storeId}/${uploadId}/ebook.pdf`;
    await env.BUCKET.put(privateFileKey(storeId, uploadId), "PDF bytes", {
      customMetadata: { filename: "ebook.pdf", kind: "file" },
    });
    const product = await seedProduct(storeId, {
      file: { name: "ebook.pdf", url: locator, download_url: "stale" },
      files: [
        { name: "elsewhere.pdf", url: "https://cdn.example/elsewhere.pdf", download_url: "https://cdn.example/dl" },
      ],
    });
    const body = await readProduct<{ file: { download_url: string }; files: { download_url: string }[] }>(
      product.id,
      token,
    );
    const link = new URL(body.file.download_url);
    expect(link.origin + link.pathname).toBe(locator);
    expect(Number(link.searchParams.get("expires")) * 1000).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect(link.searchParams.get("signature")).toMatch(/^[0-9a-f]{64}$/);
    expect(body.files[0]?.download_url).toBe("https://cdn.example/dl");
    const download = await exports.default.fetch(body.file.download_url);
    await expectStatus(download, 200);
    expect(await download.text()).toBe("PDF bytes");
  });

  it("signs only locators of the product's own store on this origin; another store's locator and a foreign host stay as stored", async () => {
    const { storeId, token } = await seedStore();
    const otherStoreId = uuid();
    const ownLocator = `${origin}/files/${storeId}/${uuid()}/own.pdf`;
    const otherStore = {
      name: "theirs.pdf",
      url: `${origin}/files/${otherStoreId}/${uuid()}/theirs.pdf`,
      download_url: "stored-other-store",
    };
    const foreignHost = {
      name: "foreign.pdf",
      url: `https://evil.example/files/${storeId}/${uuid()}/foreign.pdf`,
      download_url: "stored-foreign-host",
    };
    const variantFile = {
      name: "variant.pdf",
      url: `https://evil.example/files/${storeId}/${uuid()}/v.pdf`,
      download_url: "",
    };
    const product = await seedProduct(storeId, {
      files: [{ name: "own.pdf", url: ownLocator, download_url: "stale" }, otherStore, foreignHost],
      variants: [variantInput({ file: variantFile })],
    });
    const body = await readProduct<{
      files: { name: string; url: string; download_url: string }[];
      variants: { file: { download_url: string } }[];
    }>(product.id, token);
    const [own, theirs, foreign] = body.files;
    const signed = new URL(own?.download_url ?? "");
    expect(signed.origin + signed.pathname).toBe(ownLocator);
    expect(signed.searchParams.get("signature")).toMatch(/^[0-9a-f]{64}$/);
    expect(theirs).toEqual(otherStore);
    expect(foreign).toEqual(foreignHost);
    expect(body.variants[0]?.file.download_url).toBe("");
  });
});
