import createClient, { type Middleware } from "openapi-fetch";
import { assert, describe, expect, inject, it } from "vitest";
import type { paths } from "../../openapi/schema";
import { demoPublished, demoStoreId, demoToken } from "../support/demo";
import { png } from "../support/media-bytes";
import { expectStatus } from "../support/responses";

const baseUrl = inject("baseUrl");
const token = demoToken;
const storeId = demoStoreId;
const productId = demoPublished.id;

/**
 * The bearer token on every call but the byte PUTs, which carry the upload's own X-Upload-Token: a client
 * generated from the document keeps the API token away from the upload URL.
 */
const bearer: Middleware = {
  onRequest({ request }) {
    if (!request.headers.has("X-Upload-Token")) request.headers.set("Authorization", `Bearer ${token}`);
    return request;
  },
};

/** Every request the client sends, as the server receives its headers. */
function recorder() {
  const sent: { method: string; url: string; authorization: boolean }[] = [];
  const middleware: Middleware = {
    onRequest({ request }) {
      sent.push({ method: request.method, url: request.url, authorization: request.headers.has("Authorization") });
    },
  };
  return { sent, middleware };
}

describe("the typed client's reads (docs/development.md) with a client generated from the OpenAPI document (openapi-fetch, wrangler dev): typed data and typed errors", () => {
  it("reads a product", async () => {
    const api = createClient<paths>({ baseUrl: `${baseUrl}/api/v1` });
    api.use(bearer);
    const { data, error, response } = await api.GET("/products/{id}", { params: { path: { id: productId } } });
    expect(error).toBeUndefined();
    await expectStatus(response, 200);
    assert(data);
    expect(data.id).toBe(productId);
    expect(data.has_draft).toBe(false);
    expect(data.variants.length).toBeGreaterThan(0);
  });

  it("answers an unknown product with the typed error body", async () => {
    const api = createClient<paths>({ baseUrl: `${baseUrl}/api/v1` });
    api.use(bearer);
    const unknown = "00000000-0000-4000-8000-000000000000";
    const { data, error, response } = await api.GET("/products/{id}", { params: { path: { id: unknown } } });
    expect(data).toBeUndefined();
    await expectStatus(response, 404);
    assert(error);
    expect(error.message).toBe(`Product with ID ${unknown} not found`);
  });

  it("lists subscriptions with typed query parameters", async () => {
    const api = createClient<paths>({ baseUrl: `${baseUrl}/api/v1` });
    api.use(bearer);
    const { data, response } = await api.GET("/subscriptions", {
      params: { query: { status: "active", per_page: 2, sort: "created_at" } },
    });
    await expectStatus(response, 200);
    assert(data);
    expect(data.pagination.per_page).toBe(2);
    expect(data.items.length).toBeGreaterThan(0);
    expect(data.items.length).toBeLessThanOrEqual(2);
    for (const subscription of data.items) expect(subscription.status).toBe("active");
  });
});

describe("the typed client's upload (docs/development.md) with a client generated from the OpenAPI document: three steps, the API token kept from the PUT", () => {
  it("uploads an image in three steps (prepare, PUT the bytes, complete) without sending the API token to the PUT", async () => {
    const api = createClient<paths>({ baseUrl: `${baseUrl}/api/v1` });
    const { sent, middleware } = recorder();
    api.use(bearer, middleware);
    const file = new Blob([await png(320, 200)], { type: "image/png" });

    // `type` has a default (image): a prepare body without it compiles against the generated types. One
    // Idempotency-Key per step, as the typed client of docs/development.md sends them.
    const key = crypto.randomUUID();
    const prepared = await api.POST("/media-uploads", {
      params: { header: { "X-Service-Store": storeId, "Idempotency-Key": `${key}-prepare` } },
      body: { filename: "okladka.png", content_type: file.type, size: file.size },
    });
    await expectStatus(prepared.response, 201);
    assert(prepared.data);
    const { id, upload_request: upload } = prepared.data;

    const put = await api.PUT("/media-uploads/{id}", {
      params: {
        path: { id },
        header: {
          "X-Upload-Token": upload.headers["X-Upload-Token"],
          "Content-Type": upload.headers["Content-Type"],
          "Content-Length": String(file.size),
        },
      },
      body: file,
      // The body is the file's bytes as they are, not JSON.
      bodySerializer: (body) => body,
    });
    expect(put.error).toBeUndefined();
    await expectStatus(put.response, 204);

    const complete = () =>
      api.POST("/media-uploads/{id}/complete", {
        params: { path: { id }, header: { "X-Service-Store": storeId, "Idempotency-Key": `${key}-complete` } },
      });
    const completed = await complete();
    await expectStatus(completed.response, 201);
    assert(completed.data);
    expect(completed.data).toMatchObject({ name: "okladka.png", type: "image" });
    expect(completed.data.file_url).toMatch(new RegExp(`/media/${storeId}/${id}\\.webp$`));
    const hosted = await fetch(completed.data.file_url);
    await expectStatus(hosted, 200);
    expect(hosted.headers.get("Content-Type")).toBe("image/webp");

    // A complete sent again with its key (its answer lost on the way) answers the same file, replayed.
    const again = await complete();
    await expectStatus(again.response, 201);
    expect(again.response.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.data).toEqual(completed.data);

    expect(sent.map(({ method, authorization }) => [method, authorization])).toEqual([
      ["POST", true],
      ["PUT", false],
      ["POST", true],
      ["POST", true],
    ]);
    expect(sent[1]?.url).toBe(upload.url);
  });
});
