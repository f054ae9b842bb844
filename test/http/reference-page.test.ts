import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import demo from "../../fixtures/demo.json";
import { createApp } from "../../src/app";
import { api, expectStatus } from "../support/http";

const demoToken = demo.tokens[0]?.token ?? "";

/** The configuration object the page passes to Scalar, as served. */
function referenceConfiguration(html: string): Record<string, unknown> {
  const call = /Scalar\.createApiReference\('#app', (\{[\s\S]*\})\)\s*<\/script>/.exec(html);
  expect(call).not.toBeNull();
  return JSON.parse(call?.[1] ?? "") as Record<string, unknown>;
}

describe("GET /api/v1/docs: the demo token in Test Request", () => {
  it("is pre-filled for the bearer scheme with DEV_FIXTURES=on", async () => {
    const response = await api("/docs");
    await expectStatus(response, 200);
    const configuration = referenceConfiguration(await response.text());
    expect(configuration.authentication).toEqual({
      preferredSecurityScheme: "bearerAuth",
      securitySchemes: { bearerAuth: { token: demoToken } },
    });
    expect(configuration.url).toBe("/api/v1/openapi.json");
  });

  it("is absent with DEV_FIXTURES off, unset or malformed: a deployment's page carries no token", async () => {
    const app = createApp();
    for (const value of ["off", "", undefined, "yes"]) {
      const response = await app.request("/api/v1/docs", {}, { ...env, DEV_FIXTURES: value });
      await expectStatus(response, 200);
      const html = await response.text();
      const configuration = referenceConfiguration(html);
      expect(configuration).not.toHaveProperty("authentication");
      expect(configuration.url).toBe("/api/v1/openapi.json");
      for (const token of demo.tokens) expect(html).not.toContain(token.token);
    }
  });
});
