import { describe, expect, it } from "vitest";
import { Subscription } from "../../src/subscriptions/resource";
import { seedStore, seedToken } from "../support/factories";
import { api, expectJson, expectStatus } from "../support/http";
import { listSubscriptions, minutesApart, type SubscriptionList, seedSubscriptions } from "../support/subscriptions";

const ids = (body: SubscriptionList) => body.items.map((item) => item.id);

describe("GET /subscriptions: the list: every field of the resource", () => {
  it("returns {items, pagination} with every field of the Subscription resource, values and types as stored", async () => {
    const { storeId, token } = await seedStore();
    const [full] = await seedSubscriptions(storeId, [
      {
        customer_email: "ewa.zielinska@example.com",
        remote_id: "sub_1NzKx2LkdIwHu7ix",
        status: "active",
        variant_name: "Miesięcznie",
        product_name: "Klub Fotografa",
        recurring_amount: 4900,
        currency: "pln",
        interval: "month",
        interval_count: 1,
        quantity: 2,
        current_period_end: "2026-04-01T10:00:00+02:00",
        cancel_at: "2026-04-01T08:00:00Z",
        canceled_at: "2026-03-15T09:30:00.250Z",
        created_at: "2026-03-01T10:00:00Z",
      },
    ]);
    const response = await listSubscriptions(token);
    const body = await expectJson<SubscriptionList>(response, 200);
    expect(body.items).toEqual([
      {
        id: full?.id,
        remote_id: "sub_1NzKx2LkdIwHu7ix",
        provider: "stripe",
        status: "active",
        variant_name: "Miesięcznie",
        product_name: "Klub Fotografa",
        recurring_amount: 4900,
        currency: "pln",
        interval: "month",
        interval_count: 1,
        quantity: 2,
        customer_email: "ewa.zielinska@example.com",
        // Offsets are normalised to UTC.
        current_period_end: "2026-04-01T08:00:00.000Z",
        cancel_at: "2026-04-01T08:00:00.000Z",
        canceled_at: "2026-03-15T09:30:00.250Z",
        created_at: "2026-03-01T10:00:00.000Z",
      },
    ]);
    expect(Object.keys(body.items[0] ?? {}).sort()).toEqual(Object.keys(Subscription.shape).sort());
    expect(body.pagination).toEqual({ current_page: 1, total_pages: 1, per_page: 10, total: 1 });
  });

  it("renders every nullable field of the resource as null when it is unset", async () => {
    const { storeId, token } = await seedStore();
    const [bare] = await seedSubscriptions(storeId, [{ status: null }]);
    const body = await expectJson<SubscriptionList>(await listSubscriptions(token), 200);
    expect(body.items).toEqual([
      {
        id: bare?.id,
        remote_id: null,
        provider: "stripe",
        status: null,
        variant_name: null,
        product_name: null,
        recurring_amount: null,
        currency: null,
        interval: null,
        interval_count: null,
        quantity: 1,
        customer_email: null,
        current_period_end: null,
        cancel_at: null,
        canceled_at: null,
        created_at: "2026-03-01T10:00:00.000Z",
      },
    ]);
    expect(Subscription.array().safeParse(body.items).success).toBe(true);
  });
});

describe("GET /subscriptions: the list: order and pages", () => {
  it("list subscriptions rule 1 (docs/api.md, List subscriptions): lists newest first by default", async () => {
    const { storeId, token } = await seedStore();
    const times = minutesApart(4);
    const seeded = await seedSubscriptions(storeId, [
      { created_at: times[1] },
      { created_at: times[3] },
      { created_at: times[0] },
      { created_at: times[2] },
    ]);
    const body = await expectJson<SubscriptionList>(await listSubscriptions(token), 200);
    expect(ids(body)).toEqual([seeded[1]?.id, seeded[3]?.id, seeded[0]?.id, seeded[2]?.id]);
  });

  it("sort: created_at is oldest first, -created_at newest first, equal times ordered by id the same way", async () => {
    const { storeId, token } = await seedStore();
    const [early, late] = minutesApart(2);
    const seeded = await seedSubscriptions(storeId, [
      { created_at: late },
      { created_at: early },
      { created_at: early },
      { created_at: late },
    ]);
    const byTime = (time: string | undefined) =>
      seeded
        .filter((s) => s.created_at === time)
        .map((s) => s.id)
        .sort();
    const ascending = [...byTime(early), ...byTime(late)];

    const oldestFirst = await listSubscriptions(token, { sort: "created_at" });
    expect(ids(await expectJson<SubscriptionList>(oldestFirst, 200))).toEqual(ascending);

    const newestFirst = await listSubscriptions(token, { sort: "-created_at" });
    expect(ids(await expectJson<SubscriptionList>(newestFirst, 200))).toEqual([...ascending].reverse());
  });

  it("per_page defaults to 10 and pages follow on; total_pages is ceil(total / per_page)", async () => {
    const { storeId, token } = await seedStore();
    const seeded = await seedSubscriptions(
      storeId,
      minutesApart(23).map((created_at) => ({ created_at })),
    );
    const newestFirst = seeded.map((s) => s.id).reverse();

    const first = await listSubscriptions(token);
    const firstBody = await expectJson<SubscriptionList>(first, 200);
    expect(ids(firstBody)).toEqual(newestFirst.slice(0, 10));
    expect(firstBody.pagination).toEqual({ current_page: 1, total_pages: 3, per_page: 10, total: 23 });

    const third = await expectJson<SubscriptionList>(await listSubscriptions(token, { page: "3" }), 200);
    expect(ids(third)).toEqual(newestFirst.slice(20));
    expect(third.pagination).toEqual({ current_page: 3, total_pages: 3, per_page: 10, total: 23 });

    const bySeven = await expectJson<SubscriptionList>(
      await listSubscriptions(token, { per_page: "7", page: "2" }),
      200,
    );
    expect(ids(bySeven)).toEqual(newestFirst.slice(7, 14));
    expect(bySeven.pagination).toEqual({ current_page: 2, total_pages: 4, per_page: 7, total: 23 });
  });

  it("per_page accepts both ends of 1..100", async () => {
    const { storeId, token } = await seedStore();
    await seedSubscriptions(
      storeId,
      minutesApart(101).map((created_at) => ({ created_at })),
    );
    const hundred = await listSubscriptions(token, { per_page: "100" });
    const body = await expectJson<SubscriptionList>(hundred, 200);
    expect(body.items).toHaveLength(100);
    expect(body.pagination).toEqual({ current_page: 1, total_pages: 2, per_page: 100, total: 101 });
    const one = await expectJson<SubscriptionList>(await listSubscriptions(token, { per_page: "1", page: "101" }), 200);
    expect(one.items).toHaveLength(1);
    expect(one.pagination).toEqual({ current_page: 101, total_pages: 101, per_page: 1, total: 101 });
  });
});

describe("GET /subscriptions: the list: pages past the last, counts and paging stability", () => {
  it("a page past the last returns no items and echoes the requested page, even a huge one", async () => {
    const { storeId, token } = await seedStore();
    await seedSubscriptions(storeId, [{}, {}]);
    const past = await listSubscriptions(token, { page: "3", per_page: "1" });
    expect(await expectJson(past, 200)).toEqual({
      items: [],
      pagination: { current_page: 3, total_pages: 2, per_page: 1, total: 2 },
    });

    const huge = await listSubscriptions(token, { page: String(Number.MAX_SAFE_INTEGER), per_page: "100" });
    expect(await expectJson(huge, 200)).toEqual({
      items: [],
      pagination: { current_page: Number.MAX_SAFE_INTEGER, total_pages: 1, per_page: 100, total: 2 },
    });
  });

  it("total_pages is 0 when nothing matches", async () => {
    const { token } = await seedStore();
    const response = await listSubscriptions(token);
    expect(await expectJson(response, 200)).toEqual({
      items: [],
      pagination: { current_page: 1, total_pages: 0, per_page: 10, total: 0 },
    });
  });

  it("list subscriptions rule 5 (docs/api.md, List subscriptions): per_page=1 gives the filtered total as a count", async () => {
    const { storeId, token } = await seedStore();
    await seedSubscriptions(storeId, [
      ...Array.from({ length: 7 }, () => ({ status: "past_due" as const })),
      ...Array.from({ length: 5 }, () => ({ status: "active" as const })),
    ]);
    const response = await listSubscriptions(token, { per_page: "1", status: "past_due" });
    const body = await expectJson<SubscriptionList>(response, 200);
    expect(body.items).toHaveLength(1);
    expect(body.pagination).toEqual({ current_page: 1, total_pages: 7, per_page: 1, total: 7 });
    const all = await expectJson<SubscriptionList>(await listSubscriptions(token, { per_page: "1" }), 200);
    expect(all.pagination.total).toBe(12);
  });

  it("list subscriptions rule 4 (docs/api.md, List subscriptions): lists subscriptions their customer hid from the portal, and counts them", async () => {
    const { storeId, token } = await seedStore();
    const seeded = await seedSubscriptions(storeId, [
      { hidden_by_customer: true, created_at: "2026-03-02T00:00:00Z" },
      { hidden_by_customer: false, created_at: "2026-03-01T00:00:00Z" },
    ]);
    const response = await listSubscriptions(token);
    const body = await expectJson<SubscriptionList>(response, 200);
    expect(ids(body)).toEqual(seeded.map((s) => s.id));
    expect(body.pagination.total).toBe(2);
  });

  it("paging stability: 3 pages over 25 subscriptions created in the same second return 25 distinct ids", async () => {
    const { storeId, token } = await seedStore();
    const sameSecond = ["2026-05-05T10:00:00.000Z", "2026-05-05T10:00:00.400Z", "2026-05-05T10:00:00.999Z"];
    const seeded = await seedSubscriptions(
      storeId,
      Array.from({ length: 25 }, (_, i) => ({ created_at: sameSecond[i % 3] })),
    );
    for (const sort of ["-created_at", "created_at"]) {
      const seen: unknown[] = [];
      for (const page of ["1", "2", "3"]) {
        const response = await listSubscriptions(token, { sort, page });
        seen.push(...ids(await expectJson<SubscriptionList>(response, 200)));
      }
      expect(seen, sort).toHaveLength(25);
      expect(new Set(seen).size, sort).toBe(25);
      expect([...seen].sort(), sort).toEqual(seeded.map((s) => s.id).sort());
    }
  });
});

describe("GET /subscriptions: the list: equal times, empty and repeated parameters", () => {
  it("paging stability: 25 subscriptions in the very same millisecond page by id", async () => {
    const { storeId, token } = await seedStore();
    const seeded = await seedSubscriptions(
      storeId,
      Array.from({ length: 25 }, () => ({ created_at: "2026-05-05T10:00:00.000Z" })),
    );
    const pages = await Promise.all(
      ["1", "2", "3"].map(async (page) =>
        ids(await expectJson<SubscriptionList>(await listSubscriptions(token, { page }), 200)),
      ),
    );
    expect(pages.flat()).toEqual(
      seeded
        .map((s) => s.id)
        .sort()
        .reverse(),
    );
  });

  it("an empty value of any parameter is the same as an absent one", async () => {
    const { storeId, token } = await seedStore();
    const seeded = await seedSubscriptions(storeId, [{ status: "canceled" }, { status: "active" }]);
    const every = [
      "page",
      "per_page",
      "sort",
      "status",
      "customer",
      "product",
      "variant",
      "created_from",
      "created_to",
      "canceled_from",
      "canceled_to",
      "current_period_end_from",
      "current_period_end_to",
      "query",
    ];
    const response = await listSubscriptions(token, Object.fromEntries(every.map((name) => [name, ""])));
    const body = await expectJson<SubscriptionList>(response, 200);
    expect([...ids(body)].sort()).toEqual(seeded.map((s) => s.id).sort());
    expect(body.pagination).toEqual({ current_page: 1, total_pages: 1, per_page: 10, total: 2 });
  });

  it("a repeated parameter is read by its first occurrence; later ones are ignored, even invalid or empty", async () => {
    const { storeId, token } = await seedStore();
    const [canceled] = await seedSubscriptions(storeId, [{ status: "canceled" }, { status: "active" }]);

    const firstWins = await listSubscriptions(token, [
      ["status", "canceled"],
      ["status", "active"],
      ["status", "not-a-status"],
    ]);
    expect(ids(await expectJson<SubscriptionList>(firstWins, 200))).toEqual([canceled?.id]);

    const firstEmpty = await listSubscriptions(token, [
      ["status", ""],
      ["status", "active"],
    ]);
    expect((await expectJson<SubscriptionList>(firstEmpty, 200)).pagination.total).toBe(2);

    const firstInvalid = await listSubscriptions(token, [
      ["per_page", "500"],
      ["per_page", "5"],
    ]);
    expect(await expectJson(firstInvalid, 400)).toEqual({ message: "Invalid value for 'per_page': '500'" });
  });
});

describe("GET /subscriptions: store and token", () => {
  it("lists only the store of the token, never another store's subscriptions", async () => {
    const mine = await seedStore();
    const theirs = await seedStore();
    const [own] = await seedSubscriptions(mine.storeId, [{}]);
    await seedSubscriptions(theirs.storeId, [{}, {}]);
    const response = await listSubscriptions(mine.token);
    const body = await expectJson<SubscriptionList>(response, 200);
    expect(ids(body)).toEqual([own?.id]);
    expect(body.pagination.total).toBe(1);
  });

  it("a token of several stores needs X-Service-Store: 400 without it, that store's list with it", async () => {
    const first = await seedStore();
    const second = await seedStore();
    const [ofSecond] = await seedSubscriptions(second.storeId, [{}]);
    await seedSubscriptions(first.storeId, [{}]);
    const token = await seedToken([first.storeId, second.storeId], ["subscriptions:read"]);

    const missing = await listSubscriptions(token);
    expect(await expectJson(missing, 400)).toEqual({ message: "The X-Service-Store header is required." });

    const named = await listSubscriptions(token, {}, { store: second.storeId.toUpperCase() });
    expect(ids(await expectJson<SubscriptionList>(named, 200))).toEqual([ofSecond?.id]);
  });

  it("answers a store the token may not act on 403, and a malformed store header 400", async () => {
    const mine = await seedStore();
    const theirs = await seedStore();
    const foreign = await listSubscriptions(mine.token, {}, { store: theirs.storeId });
    expect(await expectJson(foreign, 403)).toEqual({ message: "No API access to the requested store." });
    const malformed = await listSubscriptions(mine.token, {}, { store: "store-1" });
    expect(await expectJson(malformed, 400)).toEqual({ message: "Invalid store ID." });
  });

  it("needs subscriptions:read: 403 without it, 200 with exactly it", async () => {
    const { storeId } = await seedStore();
    const reader = await seedToken([storeId], ["products:read"]);
    const refused = await listSubscriptions(reader);
    expect(await expectJson(refused, 403)).toEqual({ message: "This action is unauthorized." });
    const allowed = await seedToken([storeId], ["subscriptions:read"]);
    await expectStatus(await listSubscriptions(allowed), 200);
  });

  it("checks the token (401) and the store header (400) before the query (400)", async () => {
    const { storeId } = await seedStore();
    const other = await seedStore();
    const noToken = await api("/subscriptions?status=nope");
    expect(await expectJson(noToken, 401)).toEqual({ message: "Unauthenticated." });

    const token = await seedToken([storeId, other.storeId], ["subscriptions:read"]);
    const noHeader = await listSubscriptions(token, { status: "nope" });
    expect(await expectJson(noHeader, 400)).toEqual({ message: "The X-Service-Store header is required." });
  });

  it("answers another method on the path 405 with Allow: GET", async () => {
    const { token } = await seedStore();
    const response = await api("/subscriptions", { method: "POST", token, body: {} });
    await expectStatus(response, 405);
    expect(response.headers.get("Allow")).toContain("GET");
  });
});
