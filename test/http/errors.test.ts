import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it, vi } from "vitest";
import type { AppEnv } from "../../src/env";
import { ApiError, renderError } from "../../src/http/errors";
import { seedStore, uuid } from "../support/factories";
import { api, expectJson, origin } from "../support/http";

describe("addresses and shapes", () => {
  it("answers unknown routes 404 Not found.", async () => {
    for (const path of ["/nope", "/products", `/products/${uuid()}/unknown`]) {
      const response = await api(path);
      expect(await expectJson(response, 404, path)).toEqual({ message: "Not found." });
    }
  });

  it("answers paths outside /api/v1 404", async () => {
    const { exports } = await import("cloudflare:workers");
    const response = await exports.default.fetch(`${origin}/products/${uuid()}`);
    expect(await expectJson(response, 404)).toEqual({ message: "Not found." });
  });

  it("answers a known path with another method 405 Method not allowed. with Allow, before authentication", async () => {
    const response = await api(`/products/${uuid()}`, { method: "PATCH" });
    expect(await expectJson(response, 405)).toEqual({ message: "Method not allowed." });
    expect(response.headers.get("Allow")).toBe("GET, HEAD");
  });

  it("puts X-Request-Id on every response, taken from CF-Ray when present", async () => {
    const plain = await api("/nope");
    expect(plain.headers.get("X-Request-Id")).toMatch(/^[0-9a-f-]{36}$/);
    const ray = await api("/nope", { headers: { "CF-Ray": "8f1a2b3c4d5e6f70-WAW" } });
    expect(ray.headers.get("X-Request-Id")).toBe("8f1a2b3c4d5e6f70-WAW");
    const { token } = await seedStore();
    const authed = await api(`/products/${uuid()}`, { token });
    expect(authed.headers.get("X-Request-Id")).toBeTruthy();
  });

  it("never answers an unexpected error with a stack or {}: 500 Server error. and a log line naming the request id", async () => {
    const app = new Hono<AppEnv>();
    app.use(async (c, next) => {
      c.set("requestId", "req-123");
      await next();
    });
    app.get("/boom", () => {
      throw new TypeError("secret internals");
    });
    app.onError(renderError);
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const response = await app.request("/boom", {}, env);
    expect(await expectJson(response, 500)).toEqual({ message: "Server error." });
    const line = JSON.parse(String(log.mock.calls[0]?.[0]));
    expect(line).toMatchObject({ level: "error", request_id: "req-123", error: "secret internals" });
    log.mockRestore();
  });

  it("renders validation errors as {message, errors}", async () => {
    const app = new Hono();
    app.get("/v", () => {
      throw new ApiError(422, "The given data was invalid.", { size: ["Too big."] });
    });
    app.onError(renderError);
    const response = await app.request("/v");
    expect(await expectJson(response, 422)).toEqual({
      message: "The given data was invalid.",
      errors: { size: ["Too big."] },
    });
  });
});

describe("CORS on bearer routes", () => {
  it("allows only origins listed in CORS_ORIGINS", async () => {
    const { createApp } = await import("../../src/app");
    const app = createApp();
    const preflight = (requestOrigin: string) =>
      app.request(
        `/api/v1/products/${uuid()}`,
        {
          method: "OPTIONS",
          headers: { Origin: requestOrigin, "Access-Control-Request-Method": "GET" },
        },
        { ...env, CORS_ORIGINS: "https://shop.example, https://admin.example" },
      );
    const allowed = await preflight("https://admin.example");
    expect(allowed.headers.get("Access-Control-Allow-Origin")).toBe("https://admin.example");
    expect(allowed.headers.get("Access-Control-Allow-Headers")).toContain("X-Service-Store");
    const refused = await preflight("https://evil.example");
    expect(refused.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });

  it("exposes the rate-limit headers, Retry-After and X-Request-Id to browser code", async () => {
    const { token } = await seedStore();
    const { createApp } = await import("../../src/app");
    const response = await createApp().request(
      `/api/v1/products/${uuid()}`,
      { headers: { Origin: "https://shop.example", Authorization: `Bearer ${token}` } },
      { ...env, CORS_ORIGINS: "https://shop.example" },
    );
    expect(response.headers.get("Access-Control-Allow-Origin")).toBe("https://shop.example");
    const exposed = response.headers.get("Access-Control-Expose-Headers") ?? "";
    for (const header of ["Retry-After", "RateLimit", "RateLimit-Policy", "X-Request-Id"])
      expect(exposed).toContain(header);
  });
});
