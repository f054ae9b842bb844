import { beforeAll, describe, expect, it } from "vitest";
import committed from "../../openapi/openapi.json";
import { demoUnderNewIds } from "../support/demo";
import { readEvent } from "../support/events";
import { api, expectJson, expectStatus } from "../support/http";
import { type OpenApiDocument, operationsOf, type Parameter, resolve } from "../support/openapi";

type Page = {
  items: { id: string; status: string; attempts: number; last_attempt_at: string | null }[];
  pagination: { total: number };
};

// The demo under ids of its own: other files load the demo too, and publish in its store.
const demo = demoUnderNewIds();
const asDemo = (path: string) => api(path, { token: demo.token });
const document = committed as OpenApiDocument;

/** The demo ids a newcomer types into the reference page's path parameters, by operation path. */
const typedIds: Record<string, Record<string, string>> = {
  "/products/{productId}/cross-sells": { productId: demo.published.id },
  "/products/{productId}/draft/cross-sells": { productId: demo.drafted.id },
};

/**
 * The query the reference page's Test Request sends for an operation, as it fills each query parameter:
 * its default, else the first value of its enum, else nothing (the parameters carry no example:
 * test/openapi/document.test.ts).
 */
function exampleQuery(parameters: Parameter[]): string {
  const query = new URLSearchParams();
  for (const parameter of parameters.filter((candidate) => candidate.in === "query")) {
    const schema = resolve(document, parameter.schema ?? {});
    const value = schema.default ?? schema.enum?.[0];
    if (value !== undefined) query.set(parameter.name, String(value));
  }
  return query.size > 0 ? `?${query}` : "";
}

/** The GET operations of the document that answer a page (`{items, pagination}`). */
function listOperations() {
  return operationsOf(document).filter(({ method, operation }) => {
    const schema = operation.responses["200"]?.content?.["application/json"]?.schema;
    return method === "get" && schema !== undefined && resolve(document, schema).properties?.items !== undefined;
  });
}

/*
 * fixtures/demo.json as `npm run dev` loads it, seen with the demo token: what a newcomer's first requests
 * (the README's, the reference page's Test Request) answer before they change anything.
 */
describe("the demo fixture, loaded as npm run dev loads it", () => {
  beforeAll(async () => {
    await expectStatus(await api("/_dev/fixtures", { method: "POST", body: demo.document }), 201);
  });

  it("lists the demo store's webhook events, newest first, delivered, failed and pending, each with its attempts", async () => {
    const page = await expectJson<Page>(await asDemo("/webhook-events"), 200);
    expect(page.items.map((item) => item.id)).toEqual(demo.events.map((event) => event.id));
    expect(page.pagination.total).toBe(demo.events.length);
    expect(new Set(page.items.map((item) => item.status))).toEqual(new Set(["delivered", "failed", "pending"]));
    for (const item of page.items) {
      expect(item.attempts, item.id).toBeGreaterThan(0);
      expect(item.last_attempt_at, item.id).not.toBeNull();
    }
  });

  it("reads every demo event with its payload and one attempt-log line per attempt", async () => {
    for (const event of demo.events) {
      const detail = await readEvent(demo.token, event.id);
      expect(detail.payload, event.id).toMatchObject({ type: event.type, data: { store_id: demo.storeId } });
      expect(detail.attempt_log, event.id).toHaveLength(detail.attempts);
      expect(detail.attempt_log.map((line) => line.response_status)).toEqual(
        event.attempt_log.map((line) => line.response_status),
      );
    }
  });

  it("filters the demo events by status: the failed ones, one of them after the whole retry schedule", async () => {
    const page = await expectJson<Page>(await asDemo("/webhook-events?status=failed"), 200);
    expect(page.items.map((item) => item.id)).toEqual(
      demo.events.filter((event) => event.status === "failed").map((event) => event.id),
    );
    expect(page.items[0]?.id).toBe(demo.failedEvent.id);
    expect(Math.max(...page.items.map((item) => item.attempts))).toBe(10);
  });

  it("keeps every demo event within the retention (30 days) and the pending one due after the load", async () => {
    for (const event of demo.events) expect(event.age_seconds, event.id).toBeLessThan(30 * 86_400);
    const pending = await expectJson<Page & { items: { next_attempt_at: string | null }[] }>(
      await asDemo("/webhook-events?status=pending"),
      200,
    );
    expect(pending.items.length).toBeGreaterThan(0);
    for (const item of pending.items) expect(Date.parse(item.next_attempt_at ?? "")).toBeGreaterThan(Date.now());
  });

  it("answers every list example of the reference page a non-empty page, its query filled as Test Request fills it", async () => {
    const lists = listOperations();
    expect(lists.map(({ path }) => path)).toEqual(
      expect.arrayContaining(["/subscriptions", "/webhook-events", ...Object.keys(typedIds)]),
    );
    for (const { path, operation } of lists) {
      const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => typedIds[path]?.[name] ?? "");
      const page = await expectJson<Page>(await asDemo(`${filled}${exampleQuery(operation.parameters ?? [])}`), 200);
      expect(page.items.length, path).toBeGreaterThan(0);
    }
  });

  it("answers the demo token only its own store's data: the first store's subscriptions and products", async () => {
    const subscriptions = await expectJson<Page>(await asDemo("/subscriptions"), 200);
    const own = demo.document.subscriptions.filter((subscription) => subscription.store_id === demo.storeId);
    expect(subscriptions.pagination.total).toBe(own.length);
    expect(own.length).toBeLessThan(demo.document.subscriptions.length);
    const crossSells = await expectJson<Page>(await asDemo(`/products/${demo.published.id}/cross-sells`), 200);
    expect(crossSells.items.length).toBeGreaterThan(0);
  });
});
