import { describe, expect, it } from "vitest";
import committed from "../../openapi/openapi.json";
import { api, expectJson, origin } from "../support/http";
import { type OpenApiDocument, operationsOf, type Parameter, resolve, type Schema } from "../support/openapi";

const served = async () => expectJson<OpenApiDocument>(await api("/openapi.json"), 200);

describe("the committed OpenAPI document", () => {
  it("is the document the Worker serves, with the server relative to the origin (else: npm run openapi)", async () => {
    const document = await served();
    expect(document.servers).toEqual([{ url: `${origin}/api/v1` }]);
    expect({ ...document, servers: [{ url: "/api/v1" }] }).toEqual(committed);
  });
});

describe("OpenAPI conventions a client generator relies on", () => {
  it("gives no optional query parameter an example: the reference page's Test Request sends every example, and a filter example narrows the demo's answer", async () => {
    for (const { operation, method, path } of operationsOf(await served())) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== "query" || parameter.required) continue;
        const withExample = parameter as Parameter & { example?: unknown; schema?: { example?: unknown } };
        expect(
          withExample.example ?? withExample.schema?.example,
          `${method.toUpperCase()} ${path} ?${parameter.name}`,
        ).toBeUndefined();
      }
    }
  });

  it("gives every operation a unique camelCase operationId", async () => {
    const ids = operationsOf(await served()).map(({ operation, method, path }) => {
      expect(operation.operationId, `${method.toUpperCase()} ${path}`).toMatch(/^[a-z][a-zA-Z0-9]*$/);
      return operation.operationId;
    });
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("puts bearer security and the X-Service-Store header on every route but the byte PUTs", async () => {
    const document = await served();
    for (const { operation, method, path } of operationsOf(document)) {
      const name = `${method.toUpperCase()} ${path}`;
      if (isBytePut(document, operation)) continue;
      expect(operation.security, name).toEqual([{ bearerAuth: [] }]);
      const store = (operation.parameters ?? []).find((parameter) => parameter.name === "X-Service-Store");
      expect(store, name).toMatchObject({ in: "header", schema: { type: "string", format: "uuid" } });
    }
    // The routes whose guard refuses a call without the header declare it required.
    const required = operationsOf(document)
      .filter(({ operation }) => headerOf(operation, "X-Service-Store")?.required)
      .map(({ operation }) => operation.operationId);
    expect(required).toEqual(expect.arrayContaining(["prepareMediaUpload", "completeMediaUpload"]));
  });

  it("documents Idempotency-Key on every POST and DELETE (optional, with its 400, 409 and 422) and on nothing else", async () => {
    const document = await served();
    const keyed = operationsOf(document).filter(({ operation }) => headerOf(operation, "Idempotency-Key"));
    expect(keyed.map(({ method }) => method).sort()).toEqual(
      operationsOf(document)
        .map(({ method }) => method)
        .filter((method) => method === "post" || method === "delete")
        .sort(),
    );
    for (const { operation, method, path } of keyed) {
      const name = `${method.toUpperCase()} ${path}`;
      expect(headerOf(operation, "Idempotency-Key"), name).toMatchObject({ in: "header", required: false });
      for (const status of ["400", "409", "422"])
        expect(operation.responses[status], `${name} ${status}`).toBeDefined();
      const success = Object.entries(operation.responses).find(([status]) => status.startsWith("2"))?.[1];
      expect(success?.headers, name).toHaveProperty("Idempotent-Replayed");
    }
  });

  it("authorizes the byte PUTs with the upload token alone, in X-Upload-Token, and types their body as binary", async () => {
    const document = await served();
    expect(document.components?.securitySchemes?.uploadToken).toEqual(
      expect.objectContaining({ type: "apiKey", in: "header", name: "X-Upload-Token" }),
    );
    const puts = operationsOf(document).filter(({ operation }) => isBytePut(document, operation));
    expect(puts.length).toBeGreaterThan(0);
    for (const { operation, path } of puts) {
      expect(operation.security, path).toEqual([{ uploadToken: [] }]);
      expect(headerOf(operation, "X-Upload-Token"), path).toMatchObject({ required: true });
    }
  });

  it("leaves a request field with a default optional, and lists it as required where only responses use it", async () => {
    const document = await served();
    const prepare = operationsOf(document).find(({ operation }) => operation.operationId === "prepareMediaUpload");
    const body = resolve(document, prepare?.operation.requestBody?.content?.["application/json"]?.schema ?? {});
    expect(body.properties?.type).toMatchObject({ default: "image" });
    expect(body.required).not.toContain("type");
    // The Product resource always carries its defaulted fields, so a client need not expect them absent.
    const product = document.components?.schemas?.Product as Schema;
    expect(product.properties?.description).toMatchObject({ default: null });
    expect(product.required).toContain("description");
  });
});

function headerOf(operation: { parameters?: Parameter[] }, name: string) {
  return operation.parameters?.find((parameter) => parameter.in === "header" && parameter.name === name);
}

function isBytePut(document: OpenApiDocument, operation: ReturnType<typeof operationsOf>[number]["operation"]) {
  const content = operation.requestBody?.content ?? {};
  return Object.values(content).some((media) => resolve(document, media.schema ?? {}).format === "binary");
}
