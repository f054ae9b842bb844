import { describe, expect, it } from "vitest";
import type { SubscriptionInput } from "../support/factories";
import { seedStore, uuid } from "../support/factories";
import { expectJson } from "../support/http";
import {
  idsOf,
  listSubscriptions,
  matchingIds,
  omit,
  type SubscriptionList,
  seedSubscriptions,
} from "../support/subscriptions";

describe("GET /subscriptions: each filter alone: status, customer, product and variant", () => {
  it("status: only subscriptions in that state", async () => {
    const { storeId, token } = await seedStore();
    const [active, canceled, trialing, pastDue, none] = await seedSubscriptions(storeId, [
      { status: "active" },
      { status: "canceled" },
      { status: "trialing" },
      { status: "past_due" },
      { status: null },
    ]);
    expect(await matchingIds(token, { status: "canceled" })).toEqual(idsOf(canceled));
    expect(await matchingIds(token, { status: "incomplete_expired" })).toEqual([]);
    expect(await matchingIds(token, {})).toEqual(idsOf(active, canceled, trialing, pastDue, none));
  });

  it("customer: only that customer's subscriptions; the id is matched whatever its letter case", async () => {
    const { storeId, token } = await seedStore();
    const customer = uuid();
    const [first, second] = await seedSubscriptions(storeId, [
      { customer_id: customer },
      { customer_id: customer },
      { customer_id: uuid() },
    ]);
    expect(await matchingIds(token, { customer })).toEqual(idsOf(first, second));
    expect(await matchingIds(token, { customer: customer.toUpperCase() })).toEqual(idsOf(first, second));
    expect(await matchingIds(token, { customer: uuid() })).toEqual([]);
  });

  it("product: only subscriptions of that product", async () => {
    const { storeId, token } = await seedStore();
    const product = uuid();
    const [ofProduct] = await seedSubscriptions(storeId, [{ product_id: product }, { product_id: uuid() }]);
    expect(await matchingIds(token, { product })).toEqual(idsOf(ofProduct));
  });

  it("variant: only subscriptions of that variant", async () => {
    const { storeId, token } = await seedStore();
    const variant = uuid();
    const product = uuid();
    const [ofVariant] = await seedSubscriptions(storeId, [
      { product_id: product, variant_id: variant },
      { product_id: product, variant_id: uuid() },
    ]);
    expect(await matchingIds(token, { variant })).toEqual(idsOf(ofVariant));
  });
});

describe("GET /subscriptions: each filter alone: date ranges", () => {
  // Four instants around the UTC day 2026-03-31: the last millisecond before it, its first and last
  // milliseconds, and the first millisecond after it.
  const edges = [
    "2026-03-30T23:59:59.999Z",
    "2026-03-31T00:00:00.000Z",
    "2026-03-31T23:59:59.999Z",
    "2026-04-01T00:00:00.000Z",
  ] as const;

  const dateFields = [
    { name: "created", column: "created_at" },
    { name: "canceled", column: "canceled_at" },
    { name: "current_period_end", column: "current_period_end" },
  ] as const;

  for (const { name, column } of dateFields) {
    it(`${name}_from / ${name}_to: inclusive whole UTC days, exact on the edges of a day`, async () => {
      const { storeId, token } = await seedStore();
      const [before, dayStart, dayEnd, after] = await seedSubscriptions(
        storeId,
        edges.map((time) => ({ [column]: time }) as SubscriptionInput),
      );
      expect(await matchingIds(token, { [`${name}_from`]: "2026-03-31" })).toEqual(idsOf(dayStart, dayEnd, after));
      expect(await matchingIds(token, { [`${name}_to`]: "2026-03-31" })).toEqual(idsOf(before, dayStart, dayEnd));
      expect(await matchingIds(token, { [`${name}_from`]: "2026-03-31", [`${name}_to`]: "2026-03-31" })).toEqual(
        idsOf(dayStart, dayEnd),
      );
      expect(await matchingIds(token, { [`${name}_from`]: "2026-03-30", [`${name}_to`]: "2026-04-01" })).toEqual(
        idsOf(before, dayStart, dayEnd, after),
      );
    });

    it(`${name}: a _from after its _to is no error and matches nothing`, async () => {
      const { storeId, token } = await seedStore();
      await seedSubscriptions(
        storeId,
        edges.map((time) => ({ [column]: time }) as SubscriptionInput),
      );
      const response = await listSubscriptions(token, { [`${name}_from`]: "2026-04-01", [`${name}_to`]: "2026-03-31" });
      expect(await expectJson(response, 200)).toEqual({
        items: [],
        pagination: { current_page: 1, total_pages: 0, per_page: 10, total: 0 },
      });
    });
  }

  it("canceled and current_period_end ranges never match subscriptions where that time is unset", async () => {
    const { storeId, token } = await seedStore();
    const [withTimes] = await seedSubscriptions(storeId, [
      { canceled_at: "2026-03-31T12:00:00Z", current_period_end: "2026-03-31T12:00:00Z" },
      { canceled_at: null, current_period_end: null },
    ]);
    expect(await matchingIds(token, { canceled_to: "9999-12-31" })).toEqual(idsOf(withTimes));
    expect(await matchingIds(token, { current_period_end_from: "0001-01-01" })).toEqual(idsOf(withTimes));
  });

  it("accepts 29 February in a leap year", async () => {
    const { storeId, token } = await seedStore();
    const [leapDay] = await seedSubscriptions(storeId, [
      { created_at: "2024-02-29T12:00:00Z" },
      { created_at: "2024-03-01T12:00:00Z" },
    ]);
    expect(await matchingIds(token, { created_from: "2024-02-29", created_to: "2024-02-29" })).toEqual(idsOf(leapDay));
  });
});

describe("GET /subscriptions: filters combined", () => {
  it("every filter together keeps only what matches all of them, and each one alone still narrows", async () => {
    const { storeId, token } = await seedStore();
    const [customer, product, variant] = [uuid(), uuid(), uuid()];
    const target: SubscriptionInput = {
      status: "active",
      customer_id: customer,
      customer_name: "Zofia Wiśniewska",
      customer_email: "zofia@example.pl",
      product_id: product,
      variant_id: variant,
      product_name: "Kurs ceramiki",
      created_at: "2026-02-10T12:00:00Z",
      canceled_at: "2026-03-05T12:00:00Z",
      current_period_end: "2026-04-10T12:00:00Z",
    };
    // Each decoy differs from the target in exactly one filtered field.
    const decoys: SubscriptionInput[] = [
      { ...target, status: "past_due" },
      { ...target, customer_id: uuid() },
      { ...target, product_id: uuid() },
      { ...target, variant_id: uuid() },
      { ...target, created_at: "2026-01-10T12:00:00Z" },
      { ...target, canceled_at: "2026-03-20T12:00:00Z" },
      { ...target, current_period_end: "2026-05-10T12:00:00Z" },
      { ...target, product_name: "Kurs stolarki" },
    ];
    const [wanted, ...rest] = await seedSubscriptions(storeId, [target, ...decoys]);
    const filters = {
      status: "active",
      customer,
      product,
      variant,
      created_from: "2026-02-01",
      created_to: "2026-02-28",
      canceled_from: "2026-03-01",
      canceled_to: "2026-03-10",
      current_period_end_from: "2026-04-01",
      current_period_end_to: "2026-04-30",
      query: "ceramik",
    };
    expect(await matchingIds(token, filters)).toEqual(idsOf(wanted));

    // Leaving out one filter lets exactly its decoy back in.
    const [
      statusDecoy,
      customerDecoy,
      productDecoy,
      variantDecoy,
      createdDecoy,
      canceledDecoy,
      periodDecoy,
      nameDecoy,
    ] = rest;
    expect(await matchingIds(token, omit(filters, "status"))).toEqual(idsOf(wanted, statusDecoy));
    expect(await matchingIds(token, omit(filters, "customer"))).toEqual(idsOf(wanted, customerDecoy));
    expect(await matchingIds(token, omit(filters, "product"))).toEqual(idsOf(wanted, productDecoy));
    expect(await matchingIds(token, omit(filters, "variant"))).toEqual(idsOf(wanted, variantDecoy));
    expect(await matchingIds(token, omit(filters, "created_from", "created_to"))).toEqual(idsOf(wanted, createdDecoy));
    expect(await matchingIds(token, omit(filters, "canceled_from", "canceled_to"))).toEqual(
      idsOf(wanted, canceledDecoy),
    );
    expect(await matchingIds(token, omit(filters, "current_period_end_from", "current_period_end_to"))).toEqual(
      idsOf(wanted, periodDecoy),
    );
    expect(await matchingIds(token, omit(filters, "query"))).toEqual(idsOf(wanted, nameDecoy));
  });

  it("status with a created range and sort: the filtered subset, in order, counted", async () => {
    const { storeId, token } = await seedStore();
    const seeded = await seedSubscriptions(storeId, [
      { status: "canceled", created_at: "2026-01-01T00:00:00Z" },
      { status: "canceled", created_at: "2026-01-03T00:00:00Z" },
      { status: "active", created_at: "2026-01-02T00:00:00Z" },
      { status: "canceled", created_at: "2026-01-02T00:00:00Z" },
      { status: "canceled", created_at: "2025-12-31T23:59:59Z" },
    ]);
    const response = await listSubscriptions(token, {
      status: "canceled",
      created_from: "2026-01-01",
      created_to: "2026-01-03",
      sort: "created_at",
      per_page: "2",
    });
    const body = await expectJson<SubscriptionList>(response, 200);
    expect(body.items.map((item) => item.id)).toEqual([seeded[0]?.id, seeded[3]?.id]);
    expect(body.pagination).toEqual({ current_page: 1, total_pages: 2, per_page: 2, total: 3 });
  });

  it("an e-mail query with a status filter", async () => {
    const { storeId, token } = await seedStore();
    const [activeOne] = await seedSubscriptions(storeId, [
      { customer_email: "Piotr@Example.com", status: "active" },
      { customer_email: "piotr@example.com", status: "canceled" },
      { customer_email: "pawel@example.com", status: "active" },
    ]);
    expect(await matchingIds(token, { query: "PIOTR@example.COM", status: "active" })).toEqual(idsOf(activeOne));
  });
});

describe("GET /subscriptions: query", () => {
  it("matches part of the customer name, the product name or the variant name, ignoring case", async () => {
    const { storeId, token } = await seedStore();
    const [byCustomer, byProduct, byVariant] = await seedSubscriptions(storeId, [
      { customer_name: "Marta Kwiatkowska", product_name: "E-book", variant_name: "PDF" },
      { customer_name: "Jan Nowak", product_name: "Warsztaty Kwiatowe", variant_name: "Rocznie" },
      { customer_name: "Olga Lis", product_name: "Kurs", variant_name: "Pakiet KWIATY" },
      { customer_name: "Adam Kowal", product_name: null, variant_name: null },
    ]);
    expect(await matchingIds(token, { query: "kwiat" })).toEqual(idsOf(byCustomer, byProduct, byVariant));
    expect(await matchingIds(token, { query: "KWIATOWE" })).toEqual(idsOf(byProduct));
    expect(await matchingIds(token, { query: "nie" })).toEqual(idsOf(byProduct));
  });

  it("never matches across two names", async () => {
    const { storeId, token } = await seedStore();
    await seedSubscriptions(storeId, [{ customer_name: "Anna", product_name: "Nowak", variant_name: "Plus" }]);
    expect(await matchingIds(token, { query: "annanowak" })).toEqual([]);
    expect(await matchingIds(token, { query: "anna\u001fnowak" })).toEqual([]);
    expect(await matchingIds(token, { query: "anna nowak" })).toEqual([]);
  });

  it("ignores case in every script: ŁUKASZ finds Łukasz, żółw finds ŻÓŁW, STRASSE finds Straße, ΚΟΣ finds Κοσμάς", async () => {
    const { storeId, token } = await seedStore();
    const [lukasz, zolw, strasse, kosmas] = await seedSubscriptions(storeId, [
      { customer_name: "Łukasz Wróbel" },
      { customer_name: "Ewa Lis", product_name: "ŻÓŁW NINJA" },
      { customer_name: "Jörg Meyer", variant_name: "Straße der Kunst" },
      { customer_name: "Κοσμάς Παπαδόπουλος" },
    ]);
    expect(await matchingIds(token, { query: "ŁUKASZ" })).toEqual(idsOf(lukasz));
    expect(await matchingIds(token, { query: "żółw" })).toEqual(idsOf(zolw));
    expect(await matchingIds(token, { query: "STRASSE" })).toEqual(idsOf(strasse));
    expect(await matchingIds(token, { query: "ΚΟΣ" })).toEqual(idsOf(kosmas));
    expect(await matchingIds(token, { query: "jörg" })).toEqual(idsOf(strasse));
  });

  it("takes % and _ literally: 50%_off only matches the literal text", async () => {
    const { storeId, token } = await seedStore();
    const [literal, , , percentOnly] = await seedSubscriptions(storeId, [
      { customer_name: "Ala", product_name: "Kod 50%_off" },
      // Each of these would match the LIKE pattern '%50%_off%'.
      { customer_name: "Ola", product_name: "Kod 500 off" },
      { customer_name: "Ula", product_name: "Kod 50xoff" },
      { customer_name: "Iza", product_name: "50% zniżki, 1 off" },
    ]);
    expect(await matchingIds(token, { query: "50%_off" })).toEqual(idsOf(literal));
    expect(await matchingIds(token, { query: "%" })).toEqual(idsOf(literal, percentOnly));
    expect(await matchingIds(token, { query: "_" })).toEqual(idsOf(literal));
  });

  it("an e-mail address matches customer_email exactly, in any letter case, and not as a part", async () => {
    const { storeId, token } = await seedStore();
    const [exact] = await seedSubscriptions(storeId, [
      { customer_name: "Jan Kowalski", customer_email: "Jan.Kowalski@Example.com" },
      { customer_name: "Jan Kowalski", customer_email: "jan.kowalski@example.com.pl" },
      { customer_name: "Janina Kowalska", customer_email: "ajan.kowalski@example.com" },
    ]);
    expect(await matchingIds(token, { query: "jan.kowalski@example.com" })).toEqual(idsOf(exact));
    expect(await matchingIds(token, { query: "JAN.KOWALSKI@EXAMPLE.COM" })).toEqual(idsOf(exact));
    expect(await matchingIds(token, { query: "  jan.kowalski@example.com  " })).toEqual(idsOf(exact));
    expect(await matchingIds(token, { query: "kowalski@example.com" })).toEqual([]);
  });

  it("a partial e-mail is free text: matched against the names, never against the e-mail", async () => {
    const { storeId, token } = await seedStore();
    const [helpdesk] = await seedSubscriptions(storeId, [
      { customer_name: "Biuro", product_name: "Pakiet support@home" },
      { customer_name: "Jan Kowalski", customer_email: "jan.kowalski@example.com" },
    ]);
    expect(await matchingIds(token, { query: "support@home" })).toEqual(idsOf(helpdesk));
    expect(await matchingIds(token, { query: "jan.kowalski@" })).toEqual([]);
    expect(await matchingIds(token, { query: "@example.com" })).toEqual([]);
    expect(await matchingIds(token, { query: "jan.kowalski@example" })).toEqual([]);
  });

  it("surrounding spaces are ignored and a blank query is no filter", async () => {
    const { storeId, token } = await seedStore();
    const [ala, ola] = await seedSubscriptions(storeId, [{ customer_name: "Ala Lis" }, { customer_name: "Ola Kot" }]);
    expect(await matchingIds(token, { query: "  lis " })).toEqual(idsOf(ala));
    expect(await matchingIds(token, { query: "   " })).toEqual(idsOf(ala, ola));
  });
});
