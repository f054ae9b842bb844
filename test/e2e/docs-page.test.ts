import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { browserAvailable, launchBrowser } from "../support/browser";
import { expectJson, expectStatus } from "../support/responses";
import { serverApi } from "../support/server";

const baseUrl = inject("baseUrl");

type Document = { paths: Record<string, Record<string, { summary?: string; operationId?: string }>> };

describe.skipIf(!browserAvailable)("the API reference page offline (headless Chromium)", () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("renders every operation of the document with every host but the service blocked", async () => {
    const document = await expectJson<Document>(await serverApi("/openapi.json"), 200);
    const summaries = Object.values(document.paths).flatMap((operations) =>
      Object.values(operations).map((operation) => operation.summary ?? ""),
    );
    expect(summaries.length).toBeGreaterThan(10);

    const context = await browser.newContext();
    const blocked: string[] = [];
    const served: string[] = [];
    const service = new URL(baseUrl).origin;
    // Anything not from the service fails as if the machine were offline; what was attempted is recorded.
    await context.route("**/*", async (route) => {
      const url = route.request().url();
      if (url.startsWith("data:") || url.startsWith("blob:") || new URL(url).origin === service) {
        served.push(url);
        return route.continue();
      }
      blocked.push(url);
      return route.abort("internetdisconnected");
    });
    const refused: string[] = [];
    const page = await context.newPage();
    page.on("console", (message) => {
      if (/Content Security Policy|Failed to load resource/.test(message.text())) refused.push(message.text());
    });
    page.on("pageerror", (error) => refused.push(`page error: ${error.message}`));

    const response = await page.goto(`${baseUrl}/api/v1/docs`);
    expect(response?.status()).toBe(200);
    for (const summary of summaries) {
      await page.getByText(summary, { exact: true }).first().waitFor({ state: "attached", timeout: 20_000 });
    }
    // The page's own sources: the reference script from the pinned package and the document.
    expect(served).toContain(`${service}/vendor/scalar/standalone.js`);
    expect(served).toContain(`${service}/api/v1/openapi.json`);
    expect(blocked).toEqual([]);
    expect(refused).toEqual([]);
    await context.close();
  });

  it("serves the reference script itself, from the pinned package, as JavaScript", async () => {
    const response = await fetch(`${baseUrl}/vendor/scalar/standalone.js`);
    await expectStatus(response, 200);
    expect(response.headers.get("Content-Type")).toMatch(/javascript/);
    const html = await (await fetch(`${baseUrl}/api/v1/docs`)).text();
    expect(html).toContain('src="/vendor/scalar/standalone.js"');
    expect(html).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/);
  });
});
