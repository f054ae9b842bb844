import { describe, expect, it } from "vitest";
import {
  invalidValue,
  listRequest,
  parseSearch,
  parseUtcDay,
  SubscriptionListQuery,
} from "../../src/subscriptions/filters";
import { foldCase, subscriptionSearchText } from "../../src/subscriptions/resource";

describe("parseUtcDay", () => {
  it("gives the start of the UTC day for real calendar dates", () => {
    expect(parseUtcDay("2026-03-31")?.toISOString()).toBe("2026-03-31T00:00:00.000Z");
    expect(parseUtcDay("2024-02-29")?.toISOString()).toBe("2024-02-29T00:00:00.000Z");
    // Years below 100 stay themselves (Date.UTC would move them to the 1900s).
    expect(parseUtcDay("0045-06-01")?.getUTCFullYear()).toBe(45);
  });

  it("rejects impossible and malformed dates", () => {
    for (const value of [
      "2026-02-30",
      "2025-02-29",
      "2026-04-31",
      "2026-13-01",
      "2026-00-01",
      "2026-01-00",
      "2026-1-1",
    ]) {
      expect(parseUtcDay(value), value).toBeUndefined();
    }
  });
});

describe("parseSearch", () => {
  it("treats a valid e-mail address as an exact, lower-cased key", () => {
    expect(parseSearch(" Jan.Kowalski@Example.COM ")).toEqual({ kind: "email", key: "jan.kowalski@example.com" });
    expect(parseSearch("zofia+sklep@poczta.example.pl")).toEqual({
      kind: "email",
      key: "zofia+sklep@poczta.example.pl",
    });
    expect(parseSearch("łukasz@przykład.pl")).toEqual({ kind: "email", key: "łukasz@przykład.pl" });
  });

  it("treats anything else as folded free text, and blank text as no filter", () => {
    for (const text of ["jan.kowalski@", "@example.com", "jan@kowalski", "a b@example.com", "50%_off"]) {
      expect(parseSearch(text)?.kind, text).toBe("text");
    }
    expect(parseSearch("ŁUKASZ")).toEqual({ kind: "text", needle: "łukasz" });
    expect(parseSearch("  \t ")).toBeNull();
  });
});

describe("foldCase and the search key", () => {
  it("folds upper and lower case of every script to one form", () => {
    expect(foldCase("ŻÓŁW")).toBe(foldCase("żółw"));
    expect(foldCase("STRASSE")).toBe(foldCase("Straße"));
    expect(foldCase("ΚΟΣΜΟΣ")).toBe(foldCase("κοσμος"));
    expect(foldCase("ΚΟΣ")).toBe(foldCase("Κοσμάς").slice(0, 3));
  });

  it("joins the three names with U+001F so no match spans two of them", () => {
    expect(subscriptionSearchText({ customer: "Ala", product: "Kurs", variant: null })).toBe("ala\u001fkurs\u001f");
  });
});

describe("listRequest", () => {
  it("fills defaults and turns _to days into the start of the next day", () => {
    const parsed = SubscriptionListQuery.parse({ created_from: "2026-03-01", created_to: "2026-03-31" });
    expect(listRequest(parsed)).toEqual({
      page: 1,
      perPage: 10,
      sort: "-created_at",
      created: { from: new Date("2026-03-01T00:00:00Z"), until: new Date("2026-04-01T00:00:00Z") },
    });
  });

  it("reads the first of repeated values", () => {
    const parsed = SubscriptionListQuery.parse({ status: ["past_due", "active"], per_page: ["5", "x"] });
    expect(listRequest(parsed)).toMatchObject({ status: "past_due", perPage: 5 });
  });

  it("names the field and the value in its failure message", () => {
    const result = SubscriptionListQuery.safeParse({ variant: "abc" });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => issue.message)).toEqual([invalidValue("variant", "abc")]);
    expect(invalidValue("variant", "abc")).toBe("Invalid value for 'variant': 'abc'");
  });
});
