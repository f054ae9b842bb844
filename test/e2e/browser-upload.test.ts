import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { browserAvailable, launchBrowser } from "../support/browser";
import { demoStoreId, demoToken } from "../support/demo";
import { png } from "../support/media-bytes";

const baseUrl = inject("baseUrl");
const pageUrl = inject("uploadPageUrl");

describe.skipIf(!browserAvailable)("uploading from the development page in a browser (headless Chromium)", () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("prepares, PUTs with progress across origins (CORS preflight), completes and shows the WebP", async () => {
    const page = await browser.newPage();
    const puts: { status: number; origin: string; token: boolean }[] = [];
    page.on("response", async (response) => {
      const request = response.request();
      if (request.method() !== "PUT") return;
      const headers = await request.allHeaders();
      puts.push({
        status: response.status(),
        origin: new URL(request.url()).origin,
        token: "x-upload-token" in headers,
      });
    });
    const query = new URLSearchParams({
      api: `${baseUrl}/api/v1`,
      token: demoToken,
      store: demoStoreId,
    });
    await page.goto(`${pageUrl}/?${query}`);

    const photo = Buffer.from(await png(640, 480));
    await page.setInputFiles("#file", { name: "zdjęcie.png", mimeType: "image/png", buffer: photo });
    await page.click("#submit");

    const image = page.locator("#hosted-image");
    await image.waitFor({ state: "visible", timeout: 20_000 });
    const src = await image.getAttribute("src");
    expect(src).toMatch(new RegExp(`^${baseUrl}/media/${demoStoreId}/[0-9a-f-]{36}\\.webp$`));
    // Evaluated in the page; written as strings because this file is typed for Node, not the DOM.
    await page.waitForFunction(
      'document.getElementById("hosted-image")?.complete && document.getElementById("hosted-image").naturalWidth > 0',
    );
    const size = await page.evaluate(
      '[document.getElementById("hosted-image").naturalWidth, document.getElementById("hosted-image").naturalHeight]',
    );
    expect(size).toEqual([640, 480]);
    expect(await page.evaluate('document.getElementById("progress").value')).toBe(100);
    expect(await page.locator("#status").textContent()).toBe("Hosted: zdjęcie.png");
    // A cross-origin PUT with X-Upload-Token is not a simple request: the browser sends it only after
    // the API's preflight allowed it, so its 204 proves the preflight was exercised and answered.
    expect(new URL(pageUrl).origin).not.toBe(new URL(baseUrl).origin);
    expect(puts).toEqual([{ status: 204, origin: new URL(baseUrl).origin, token: true }]);
    await page.close();
  });

  it("the Worker's own upload page loads Uppy from the Worker's assets and hosts a file", async () => {
    const page = await browser.newPage();
    const scripts: { url: string; status: number }[] = [];
    const writes: { path: string; key: string | undefined }[] = [];
    page.on("response", (response) => {
      if (response.url().includes("/vendor/")) scripts.push({ url: response.url(), status: response.status() });
      const request = response.request();
      if (request.method() === "POST") {
        writes.push({ path: new URL(request.url()).pathname, key: request.headers()["idempotency-key"] });
      }
    });
    const query = new URLSearchParams({ token: demoToken, store: demoStoreId });
    await page.goto(`${baseUrl}/api/v1/_dev/upload?${query}`);
    const photo = Buffer.from(await png(320, 200));
    await page.setInputFiles("#file", { name: "logo.png", mimeType: "image/png", buffer: photo });
    await page.click("#submit");
    await page.locator("#hosted-image").waitFor({ state: "visible", timeout: 20_000 });
    expect(await page.locator("#status").textContent()).toBe("Hosted: logo.png");
    expect(scripts).toEqual([{ url: `${baseUrl}/vendor/uppy/uppy.min.mjs`, status: 200 }]);
    // Prepare and complete each with an Idempotency-Key of its own, so a step sent again after a lost answer runs once.
    expect(writes.map(({ path }) => path.replace(/[0-9a-f-]{36}/, "{id}"))).toEqual([
      "/api/v1/media-uploads",
      "/api/v1/media-uploads/{id}/complete",
    ]);
    const [prepareKey, completeKey] = writes.map(({ key }) => key);
    expect(prepareKey).toMatch(/^[\x20-\x7e]{1,255}$/);
    expect(completeKey).toMatch(/^[\x20-\x7e]{1,255}$/);
    expect(completeKey).not.toBe(prepareKey);
    await page.close();
  });
});
