import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { browserAvailable, launchBrowser } from "../support/browser";
import { demo, demoDrafted, demoEvents, demoFailedEvent, demoPublished, demoStoreId, demoToken } from "../support/demo";
import { expectJson } from "../support/responses";

const baseUrl = inject("baseUrl");

const published = demoPublished;
const drafted = demoDrafted;

type Operation = { hash: string; method: string; path: string; pathIds?: Record<string, string>; store?: string };

/**
 * What a newcomer does on the reference page: open the operation from the sidebar's address, press its
 * "Test Request", type what the operation needs beyond the token (path ids, the store header), press Send.
 * Answers the response the page got and the client dialog it shows it in.
 */
async function testRequest(page: Page, operation: Operation) {
  await page.goto(`${baseUrl}/api/v1/docs#${operation.hash}`);
  await page
    .getByRole("button", { name: `Test Request (${operation.method} ${operation.path})` })
    .first()
    .click();
  const dialog = page.getByRole("dialog");
  // The demo token is already there (DEV_FIXTURES=on): nothing to type for authentication.
  const token = dialog.getByLabel("Bearer Token");
  await token.waitFor();
  expect(await token.inputValue()).toBe(demoToken);
  for (const [name, value] of Object.entries(operation.pathIds ?? {})) {
    await dialog.locator(`tr[id="${name}"]`).getByRole("combobox", { name: "Value" }).click();
    await page.keyboard.type(value);
  }
  if (operation.store !== undefined) {
    await dialog.locator('tr[id="X-Service-Store"]').getByRole("combobox", { name: "Value" }).click();
    await page.keyboard.type(operation.store);
  }
  const sentPath = `/api/v1${operation.path.replace(/\{(\w+)\}/g, (_, name: string) => operation.pathIds?.[name] ?? "")}`;
  const answered = page.waitForResponse(
    (response) => response.request().method() === "GET" && new URL(response.url()).pathname === sentPath,
  );
  // The address bar's Send (its accessible name says what it sends), not the "Send Request" shortcut hint.
  await dialog.getByRole("button", { name: `Send ${operation.method} request to` }).click();
  const response = await answered;
  await dialog.getByText("200 OK").waitFor();
  return { response, dialog };
}

let browser: Browser | undefined;

beforeAll(async () => {
  if (browserAvailable) browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
});

async function newPage() {
  if (!browser) throw new Error("no browser");
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  // Each step's own limit, below the test's, so a missing control fails naming its locator.
  page.setDefaultTimeout(10_000);
  return page;
}

type ListPage = { items: { id: string }[]; pagination: { total: number } };

/**
 * Sends a list operation's example and checks it answers data: a non-empty page, whose first item the
 * client dialog shows. Answers the page, the response and the dialog for the operation's own checks.
 */
async function listShown(operation: Operation) {
  const page = await newPage();
  const { response, dialog } = await testRequest(page, operation);
  const body = await expectJson<ListPage>(response, 200);
  expect(body.items.length, operation.path).toBeGreaterThan(0);
  expect(body.pagination.total, operation.path).toBeGreaterThan(0);
  await dialog
    .getByText(body.items[0]?.id ?? "missing", { exact: false })
    .first()
    .waitFor();
  return { page, response, body };
}

describe.skipIf(!browserAvailable)("Test Request on the reference page lists the demo data (headless Chromium)", () => {
  it("lists the demo store's subscriptions with the pre-filled token and the defaults sent unchanged", async () => {
    const { page, response, body } = await listShown({
      hash: "tag/subscriptions/GET/subscriptions",
      method: "get",
      path: "/subscriptions",
    });
    expect(await response.request().headerValue("authorization")).toBe(`Bearer ${demoToken}`);
    // The same query from outside the page: the panel shows what the API answers for the demo token.
    const direct = await fetch(response.url(), { headers: { Authorization: `Bearer ${demoToken}` } });
    expect((await expectJson<typeof body>(direct, 200)).pagination.total).toBe(body.pagination.total);
    await page.close();
  });

  it("lists a demo product's cross-sells with the product id and the store typed in", async () => {
    const productId = published?.id ?? "";
    const { page, response } = await listShown({
      hash: "tag/cross-sells/GET/products/{productId}/cross-sells",
      method: "get",
      path: "/products/{productId}/cross-sells",
      pathIds: { productId },
      store: demoStoreId,
    });
    expect(new URL(response.url()).pathname).toBe(`/api/v1/products/${productId}/cross-sells`);
    expect(await response.request().headerValue("x-service-store")).toBe(demoStoreId);
    await page.close();
  });

  it("lists the cross-sells of the demo product's draft", async () => {
    const productId = drafted?.id ?? "";
    const { page, response } = await listShown({
      hash: "tag/cross-sells/GET/products/{productId}/draft/cross-sells",
      method: "get",
      path: "/products/{productId}/draft/cross-sells",
      pathIds: { productId },
    });
    expect(new URL(response.url()).pathname).toBe(`/api/v1/products/${productId}/draft/cross-sells`);
    await page.close();
  });

  it("lists the demo store's webhook events that match the filters the page fills in (their first values)", async () => {
    const { page, response, body } = await listShown({
      hash: "tag/webhooks/GET/webhook-events",
      method: "get",
      path: "/webhook-events",
    });
    // The page sends each enum filter's first value (status=pending, type=product.published): the demo's
    // retrying publish answers it.
    const sent = new URL(response.url()).searchParams;
    const matches = (value: string, filter: string | null) => filter === null || filter === "" || value === filter;
    const expected = demoEvents.filter(
      (event) => matches(event.status, sent.get("status")) && matches(event.type, sent.get("type")),
    );
    expect(body.items.map((item) => item.id)).toEqual(expected.map((event) => event.id));
    await page.close();
  });
});

describe.skipIf(!browserAvailable)("Test Request on the reference page reads the demo data (headless Chromium)", () => {
  it("reads a demo product", async () => {
    const page = await newPage();
    const productId = published?.id ?? "";
    const { response, dialog } = await testRequest(page, {
      hash: "tag/products/GET/products/{id}",
      method: "get",
      path: "/products/{id}",
      pathIds: { id: productId },
    });
    expect(await expectJson(response, 200)).toMatchObject({ id: productId, name: published?.name });
    await dialog
      .getByText(published?.name ?? "missing")
      .first()
      .waitFor();
    await page.close();
  });

  it("reads the draft of the demo product that has one", async () => {
    const page = await newPage();
    const productId = drafted?.id ?? "";
    const { response, dialog } = await testRequest(page, {
      hash: "tag/products/GET/products/{id}/draft",
      method: "get",
      path: "/products/{id}/draft",
      pathIds: { id: productId },
    });
    expect(new URL(response.url()).pathname).toBe(`/api/v1/products/${productId}/draft`);
    expect(await expectJson(response, 200)).toMatchObject({ id: productId, name: drafted?.draft?.product.name });
    await dialog
      .getByText(drafted?.draft?.product.name ?? "missing")
      .first()
      .waitFor();
    await page.close();
  });

  it("reads a failed demo event with its payload and attempt log, the event id typed in", async () => {
    const page = await newPage();
    const { response, dialog } = await testRequest(page, {
      hash: "tag/webhooks/GET/webhook-events/{id}",
      method: "get",
      path: "/webhook-events/{id}",
      pathIds: { id: demoFailedEvent.id },
    });
    const event = await expectJson<{ status: string; attempts: number; attempt_log: unknown[]; payload: unknown }>(
      response,
      200,
    );
    expect(event).toMatchObject({ status: "failed", attempts: demoFailedEvent.attempt_log.length });
    expect(event.attempt_log).toHaveLength(event.attempts);
    expect(event.payload).not.toBeNull();
    await dialog.getByText(demoFailedEvent.id, { exact: false }).first().waitFor();
    await page.close();
  });

  it("reads the demo store's webhook signing secret", async () => {
    const page = await newPage();
    const { response, dialog } = await testRequest(page, {
      hash: "tag/webhooks/GET/webhooks/secret",
      method: "get",
      path: "/webhooks/secret",
    });
    const secret = demo.stores[0]?.webhook_secret ?? "missing";
    expect(await expectJson(response, 200)).toEqual({ secret });
    await dialog.getByText(secret, { exact: false }).first().waitFor();
    await page.close();
  });
});
