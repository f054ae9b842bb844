import { describe, expect, it } from "vitest";
import { seedStore, uuid } from "../support/factories";
import { api, expectJson } from "../support/http";
import { listSubscriptions, type SubscriptionList, seedSubscriptions } from "../support/subscriptions";

/** Expects the 400 of an unparseable value, naming the field and the value as sent. */
async function expectInvalid(token: string, field: string, value: string) {
  const response = await listSubscriptions(token, { [field]: value });
  expect(await expectJson(response, 400, `${field}=${value}`), `${field}=${value}`).toEqual({
    message: `Invalid value for '${field}': '${value}'`,
  });
}

const dateFields = [
  "created_from",
  "created_to",
  "canceled_from",
  "canceled_to",
  "current_period_end_from",
  "current_period_end_to",
];

const badDates = [
  "2026-02-30", // impossible day
  "2025-02-29", // not a leap year
  "2026-13-01", // no 13th month
  "2026-00-10",
  "2026-04-31",
  "2026-3-31", // not zero-padded
  "31-03-2026",
  "2026/03/31",
  "2026-03-31T00:00:00Z", // a timestamp, not a day
  "20260331",
  "yesterday",
  " 2026-03-31",
];

describe("GET /subscriptions: unparseable values answer 400 Invalid value for '<field>': '<value>'", () => {
  it("page: not an integer of at least 1", async () => {
    const { token } = await seedStore();
    for (const value of ["0", "-1", "1.5", "1e2", "abc", "+2", "0x10", "99999999999999999999"]) {
      await expectInvalid(token, "page", value);
    }
  });

  it("per_page: out of 1..100, a float, huge or not a number", async () => {
    const { token } = await seedStore();
    for (const value of ["0", "101", "-5", "10.0", "2.5", "1e1", "ten", "99999999999999999999", "1".repeat(400)]) {
      await expectInvalid(token, "per_page", value);
    }
  });

  it("sort: any field other than created_at / -created_at", async () => {
    const { token } = await seedStore();
    for (const value of ["name", "+created_at", "CREATED_AT", "created_at,id", "--created_at", "-id"]) {
      await expectInvalid(token, "sort", value);
    }
  });

  it("status: an unknown state, including other spellings of known ones", async () => {
    const { token } = await seedStore();
    for (const value of ["cancelled", "ACTIVE", "Active", "past-due", "deleted", "active,canceled"]) {
      await expectInvalid(token, "status", value);
    }
  });

  it("customer, product and variant: anything but a UUID", async () => {
    const { token } = await seedStore();
    const compact = uuid().replaceAll("-", "");
    for (const field of ["customer", "product", "variant"]) {
      for (const value of ["123", "not-a-uuid", compact, `${uuid()}x`, `{${uuid()}}`]) {
        await expectInvalid(token, field, value);
      }
    }
  });

  it("every date field: malformed or impossible dates such as 2026-02-30", async () => {
    const { token } = await seedStore();
    for (const field of dateFields) {
      for (const value of badDates) await expectInvalid(token, field, value);
    }
  });

  it("quotes the value as the client sent it, after URL decoding, unicode and quotes included", async () => {
    const { token } = await seedStore();
    await expectInvalid(token, "status", "act ive");
    await expectInvalid(token, "status", "aktywna ✓");
    await expectInvalid(token, "customer", "O'Brien");
    const raw = await api("/subscriptions?sort=%2Bname&status=active", { token });
    expect(await expectJson(raw, 400)).toEqual({ message: "Invalid value for 'sort': '+name'" });
  });

  it("reports the first failing field in the order page, per_page, sort, status, customer, product, variant, dates", async () => {
    const { token } = await seedStore();
    const order = [
      ["page", "0"],
      ["per_page", "0"],
      ["sort", "name"],
      ["status", "nope"],
      ["customer", "c"],
      ["product", "p"],
      ["variant", "v"],
      ...dateFields.map((field) => [field, "2026-02-30"]),
    ] as [string, string][];
    // Sent in reverse so the reported field follows the rule, not the order in the URL.
    for (let first = 0; first < order.length; first++) {
      const failing = order.slice(first);
      const response = await listSubscriptions(token, [...failing].reverse());
      const [field, value] = failing[0] as [string, string];
      expect(await expectJson(response, 400, field), field).toEqual({
        message: `Invalid value for '${field}': '${value}'`,
      });
    }
  });

  it("answers the 400 before reading any subscription, whatever the other parameters say", async () => {
    const { storeId, token } = await seedStore();
    await seedSubscriptions(storeId, [{}]);
    const response = await listSubscriptions(token, { status: "active", per_page: "1000", query: "x" });
    expect(await expectJson(response, 400)).toEqual({ message: "Invalid value for 'per_page': '1000'" });
  });
});

describe("GET /subscriptions: query is always accepted", () => {
  it("SQL metacharacters in query are plain text: no error, no injection, matched literally", async () => {
    const { storeId, token } = await seedStore();
    const [quoted] = await seedSubscriptions(storeId, [
      { customer_name: "Anna O'Hara", product_name: 'Kurs "Pro" \\ edycja' },
      { customer_name: "Jan Nowak" },
    ]);
    const attacks = [
      "'; DROP TABLE subscriptions; --",
      "' OR '1'='1",
      '" OR 1=1 --',
      "x') UNION SELECT * FROM api_tokens --",
      "%' --",
      "*/ /*",
      "\u0000",
    ];
    for (const query of attacks) {
      const response = await listSubscriptions(token, { query });
      expect((await expectJson<SubscriptionList>(response, 200, query)).pagination.total, query).toBe(0);
    }
    for (const query of ["o'hara", '"pro"', "\\ edycja"]) {
      const response = await listSubscriptions(token, { query });
      expect(
        (await expectJson<SubscriptionList>(response, 200, query)).items.map((item) => item.id),
        query,
      ).toEqual([quoted?.id]);
    }
    // The table is intact and still lists both subscriptions.
    expect((await expectJson<SubscriptionList>(await listSubscriptions(token), 200)).pagination.total).toBe(2);
  });

  it("a 10,000-character query answers 200 with nothing matched", async () => {
    const { storeId, token } = await seedStore();
    await seedSubscriptions(storeId, [{ customer_name: "a".repeat(50) }]);
    const response = await listSubscriptions(token, { query: "a".repeat(10_000) });
    expect(await expectJson(response, 200)).toEqual({
      items: [],
      pagination: { current_page: 1, total_pages: 0, per_page: 10, total: 0 },
    });
  });
});
