import { compileErrors, validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { demoPublished, demoToken } from "../support/demo";
import { expectJson, expectStatus } from "../support/responses";
import { serverApi } from "../support/server";

/** What the validator reads: an OpenAPI document as an object. */
type ValidatorInput = Exclude<Parameters<typeof validate>[0], string>;

describe("the API over real HTTP (wrangler dev)", () => {
  it("serves a demo product to the demo token", async () => {
    const response = await serverApi(`/products/${demoPublished.id}`, { token: demoToken });
    const body = await expectJson(response, 200);
    expect(body).toMatchObject({ id: demoPublished.id, name: demoPublished.name, has_draft: false });
    expect(response.headers.get("X-Request-Id")).toBeTruthy();
  });

  it("answers 401 without a token, 404 for unknown routes and 405 with Allow for a wrong method", async () => {
    await expectStatus(await serverApi(`/products/${demoPublished.id}`), 401);
    const unknown = await serverApi("/no-such-route");
    expect(await expectJson(unknown, 404)).toEqual({ message: "Not found." });
    const wrongMethod = await serverApi(`/products/${demoPublished.id}`, { method: "PUT", token: demoToken });
    await expectStatus(wrongMethod, 405);
    expect(wrongMethod.headers.get("Allow")).toContain("GET");
  });

  it("publishes an OpenAPI 3.1 document that passes a real validator", async () => {
    const response = await serverApi("/openapi.json");
    const document = await expectJson<ValidatorInput & { openapi: string; paths: Record<string, unknown> }>(
      response,
      200,
    );
    expect(document.openapi).toBe("3.1.0");
    expect(Object.keys(document.paths)).toContain("/products/{id}");
    const result = await validate(document);
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
  });

  it("serves the API reference page", async () => {
    const response = await serverApi("/docs");
    await expectStatus(response, 200);
    expect(response.headers.get("Content-Type")).toContain("text/html");
    expect(await response.text()).toContain("/api/v1/openapi.json");
  });
});
