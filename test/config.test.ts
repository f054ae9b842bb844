import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { readConfig } from "../src/config";
import { migrateCommand } from "../src/http/errors";
import { seedProduct, seedStore, uuid } from "./support/factories";
import { api, expectJson, expectStatus, fetchApp, origin, withBindings } from "./support/http";

describe("configuration (docs/api.md, Configuration states: never a bare 500 for a configuration state)", () => {
  // A configuration problem is logged once per isolate as an error line; captured, and checked where expected.
  let errors: MockInstance<typeof console.error>;
  beforeEach(() => {
    errors = vi.spyOn(console, "error").mockImplementation(() => {});
  });
  afterEach(() => errors.mockRestore());
  const logged = (text: string) => expect(errors).toHaveBeenCalledWith(expect.stringContaining(text));

  it("reads every variable once with its default and names a malformed one", () => {
    const config = readConfig(withBindings({ MAX_IMAGE_EDGE: "abc", UPLOAD_TTL_SECONDS: "" }));
    expect(config.UPLOAD_TTL_SECONDS).toEqual({ ok: true, value: 900 });
    expect(config.MAX_IMAGE_EDGE.ok).toBe(false);
    expect(config.MAX_IMAGE_EDGE).toMatchObject({ problem: expect.stringContaining("MAX_IMAGE_EDGE must be") });
    expect(readConfig(withBindings({ MAX_IMAGE_EDGE: "4000" })).MAX_IMAGE_EDGE.ok).toBe(false); // above 2560
  });

  it("an unmigrated database answers 503 naming the migration command, on the first bearer call", async () => {
    const response = await api("/subscriptions", {
      token: "some-token-of-a-developer",
      env: { DB: env.UNMIGRATED_DB },
    });
    const body = await expectJson<{ message: string }>(response, 503);
    expect(body.message).toContain(migrateCommand);
    logged("database not migrated");
  });

  it("without FILE_SIGNING_SECRET a product read answers 200 with download_url null, and private links 503", async () => {
    const { storeId, token } = await seedStore();
    const locator = `${origin}/files/${storeId}/${crypto.randomUUID()}/faktura.pdf`;
    const product = await seedProduct(storeId, {
      file: { name: "faktura.pdf", url: locator, download_url: "stale" },
    });
    const read = await api(`/products/${product.id}`, { token, env: { FILE_SIGNING_SECRET: undefined } });
    const body = await expectJson<{ file: { url: string; download_url: string | null } }>(read, 200);
    expect(body.file).toMatchObject({ url: locator, download_url: null });
    const link = await fetchApp(new URL(locator).pathname, {}, { FILE_SIGNING_SECRET: "" });
    expect((await expectJson<{ message: string }>(link, 503)).message).toContain("FILE_SIGNING_SECRET");
    logged('"problem":"FILE_SIGNING_SECRET is not set"');
  });

  it("a malformed numeric variable makes only the routes that need it answer 503 naming it", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId);
    const malformed = { UPLOAD_TTL_SECONDS: "fifteen minutes" };
    const prepare = await api("/media-uploads", {
      method: "POST",
      token,
      store: storeId,
      body: { filename: "a.png", content_type: "image/png", size: 10 },
      env: malformed,
    });
    expect((await expectJson<{ message: string }>(prepare, 503)).message).toContain("UPLOAD_TTL_SECONDS");
    const read = await api(`/products/${product.id}`, { token, store: storeId, env: malformed });
    await expectStatus(read, 200);
    logged('"problem":"UPLOAD_TTL_SECONDS must be');
  });

  it("a publish that needs the project platform answers 503 naming PLATFORM_API_URL when none is configured; the draft stays", async () => {
    const { storeId, token } = await seedStore();
    const product = await seedProduct(storeId, {
      status: "draft",
      draft: { draft_version: 1, product: { name: "Draft name" }, wall_id: uuid() },
    });
    const unconfigured = { DEV_FIXTURES: "", PLATFORM_API_URL: "" };
    const response = await api(`/products/${product.id}/publish`, {
      method: "POST",
      token,
      store: storeId,
      env: unconfigured,
    });
    expect((await expectJson<{ message: string }>(response, 503)).message).toContain("PLATFORM_API_URL");
    await expectStatus(await api(`/products/${product.id}/draft`, { token, store: storeId, env: unconfigured }), 200);
  });
});
