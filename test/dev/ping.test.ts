import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { api, expectJson, expectStatus } from "../support/http";

describe("GET /api/v1/_dev/ping", () => {
  it("answers 204 with no body, without a token", async () => {
    const response = await api("/_dev/ping");
    await expectStatus(response, 204);
    expect(await response.text()).toBe("");
    expect(response.headers.get("X-Request-Id")).toBeTruthy();
  });

  it("answers 405 to other methods", async () => {
    const response = await api("/_dev/ping", { method: "POST" });
    await expectStatus(response, 405);
  });

  it("is an unknown route with DEV_FIXTURES=off", async () => {
    const off = { ...env, DEV_FIXTURES: "off" };
    const response = await createApp().request("/api/v1/_dev/ping", {}, off);
    expect(await expectJson(response, 404)).toEqual({ message: "Not found." });
  });
});
