import { describe, expect, it } from "vitest";
import { listRequest, SubscriptionListQuery } from "../../src/subscriptions/filters";
import { indexableNeedle, listSubscriptions as listQuery, searchPhrase } from "../../src/subscriptions/query";
import { subscriptionSearchText } from "../../src/subscriptions/resource";
import type { SubscriptionInput } from "../support/factories";
import { seed, seedStore, storeD1, storeDb } from "../support/factories";
import { expectJson } from "../support/http";
import {
  idsOf,
  listSubscriptions,
  matchingIds,
  minutesApart,
  omit,
  type SubscriptionList,
  seedSubscriptions,
  subscriptionInput,
} from "../support/subscriptions";

/*
 * The free-text `query` through the trigram index (three characters or more) and without it (fewer),
 * with the index kept current by the triggers of migrations/0001_subscriptions_search.sql.
 */

type Store = { storeId: string; token: string };

/**
 * The two halves of an indexed search: hits looked up in the trigram index (what these few rows get
 * through the endpoint), and the walk of the store's list index (what a needle with more hits than the
 * bound gets; a bound of 0 sends every needle with a hit there).
 */
type Half = { name: string; maxIndexHits?: number };
const halves: Half[] = [
  { name: "index lookup, through the endpoint" },
  { name: "list index walk (more hits than the bound)", maxIndexHits: 0 },
];

/** One page as ids with the filtered total: through the endpoint, or the query with the half's bound. */
async function listed(store: Store, params: Record<string, string>, half: Half = halves[0] as Half) {
  if (half.maxIndexHits === undefined) {
    const response = await listSubscriptions(store.token, params);
    const body = await expectJson<SubscriptionList>(response, 200, JSON.stringify(params));
    return { ids: body.items.map((item) => item.id as string), total: body.pagination.total };
  }
  const request = listRequest(SubscriptionListQuery.parse(params));
  const { items, total } = await listQuery(await storeDb(store.storeId), store.storeId, request, {
    maxIndexHits: half.maxIndexHits,
  });
  return { ids: items.map((item) => item.id), total };
}

/** The ids a list answers, sorted, after checking its total counts the same rows. */
async function matching(store: Store, params: Record<string, string>, half?: Half) {
  if (half?.maxIndexHits === undefined) return matchingIds(store.token, params);
  const { ids, total } = await listed(store, { per_page: "100", ...params }, half);
  expect(total, "total counts the same rows the page holds").toBe(ids.length);
  return ids.sort();
}

/** The rowids the index itself lists for `needle`, whatever `subscriptions` holds. */
async function indexed(storeId: string, needle: string) {
  const result = await (await storeD1(storeId))
    .prepare("SELECT rowid FROM subscriptions_search WHERE subscriptions_search MATCH ?")
    .bind(searchPhrase(needle))
    .all<{ rowid: number }>();
  return result.results.map((row) => row.rowid);
}

async function rowidOf(storeId: string, id: string) {
  const row = await (await storeD1(storeId))
    .prepare("SELECT rowid FROM subscriptions WHERE id = ?")
    .bind(id)
    .first<{ rowid: number }>();
  return row?.rowid;
}

/** FTS5's own check that the index holds exactly the trigrams of every `search_text` (rank 1: against the content). */
async function expectIndexMatchesTable(storeId: string) {
  await (await storeD1(storeId))
    .prepare("INSERT INTO subscriptions_search (subscriptions_search, rank) VALUES ('integrity-check', 1)")
    .run();
}

describe("indexableNeedle and searchPhrase", () => {
  it("the index is used from three code points on, counted as characters, not UTF-16 units", () => {
    expect(indexableNeedle("kow")).toBe(true);
    expect(indexableNeedle("ko")).toBe(false);
    expect(indexableNeedle("ł")).toBe(false);
    // Two characters outside the Basic Multilingual Plane: four UTF-16 units, still too short.
    expect(indexableNeedle("🎸🎸")).toBe(false);
    expect(indexableNeedle("🎸🎸🎸")).toBe(true);
    // A needle holding the separator matches nothing, so it never reaches the index.
    expect(indexableNeedle("ala\u001fkurs")).toBe(false);
    // FTS5 would cut its query at a NUL.
    expect(indexableNeedle("ala\u0000kot")).toBe(false);
  });

  it("quotes the needle as one FTS5 phrase, doubling quotes, so no character is query syntax", () => {
    expect(searchPhrase("kowal")).toBe('"kowal"');
    expect(searchPhrase('pakiet "złoty"')).toBe('"pakiet ""złoty"""');
    expect(searchPhrase("a* OR b")).toBe('"a* OR b"');
  });
});

for (const half of halves) {
  describe(`GET /subscriptions: free-text search of three characters or more, ${half.name}`, () => {
    it("finds part of a name in Polish, German, Greek and Cyrillic, whatever the case of query or name", async () => {
      const store = await seedStore();
      const { storeId } = store;
      const [lukasz, arger, strasse, kosmas, dmitry, olga] = await seedSubscriptions(storeId, [
        { customer_name: "Łukasz Wróbel", product_name: "Kurs", variant_name: "Rocznie" },
        { customer_name: "Ewa Lis", product_name: "ÄRGER-FREI WOHNEN", variant_name: null },
        { customer_name: "Jörg Meyer", product_name: null, variant_name: "Straße der Kunst" },
        { customer_name: "ΚΟΣΜΆΣ ΠΑΠΑΔΌΠΟΥΛΟΣ" },
        { customer_name: "Дмитрий Петров" },
        { customer_name: "Ольга", product_name: "ЙОГА", variant_name: "Мини" },
      ]);
      expect(await matching(store, { query: "ŁUKASZ" }, half)).toEqual(idsOf(lukasz));
      expect(await matching(store, { query: "łuk" }, half)).toEqual(idsOf(lukasz));
      expect(await matching(store, { query: "ärger" }, half)).toEqual(idsOf(arger));
      expect(await matching(store, { query: "Ger-frei" }, half)).toEqual(idsOf(arger));
      // ß folds to ss, so both spellings find it; SQLite's trigram folding alone would find neither.
      expect(await matching(store, { query: "STRASSE" }, half)).toEqual(idsOf(strasse));
      expect(await matching(store, { query: "straße" }, half)).toEqual(idsOf(strasse));
      // A final sigma in the query meets the same letter inside the stored word, and the reverse.
      expect(await matching(store, { query: "κοσ" }, half)).toEqual(idsOf(kosmas));
      expect(await matching(store, { query: "Παπαδόπουλος" }, half)).toEqual(idsOf(kosmas));
      expect(await matching(store, { query: "ДМИТ" }, half)).toEqual(idsOf(dmitry));
      expect(await matching(store, { query: "петров" }, half)).toEqual(idsOf(dmitry));
      expect(await matching(store, { query: "йога" }, half)).toEqual(idsOf(olga));
      // Accents are letters of their own: folding case does not remove them.
      expect(await matching(store, { query: "lukasz" }, half)).toEqual([]);
      expect(await matching(store, { query: "Παπαδοπουλος" }, half)).toEqual([]);
    });

    it("takes % and _ literally in an indexed query: 50%_off finds only the literal text", async () => {
      const store = await seedStore();
      const { storeId } = store;
      const [literal, , , underscored] = await seedSubscriptions(storeId, [
        { customer_name: "Ala", product_name: "Kod 50%_off" },
        // Each of these would match the LIKE pattern '%50%_off%'.
        { customer_name: "Ola", product_name: "Kod 500 off" },
        { customer_name: "Ula", product_name: "Kod 50xoff" },
        { customer_name: "Iza", product_name: "Kod a_b_c", variant_name: "1%_2" },
      ]);
      expect(await matching(store, { query: "50%_off" }, half)).toEqual(idsOf(literal));
      expect(await matching(store, { query: "0%_" }, half)).toEqual(idsOf(literal));
      expect(await matching(store, { query: "%_" }, half)).toEqual(idsOf(literal, underscored));
      expect(await matching(store, { query: "_b_" }, half)).toEqual(idsOf(underscored));
      expect(await matching(store, { query: "%%%" }, half)).toEqual([]);
      expect(await matching(store, { query: "___" }, half)).toEqual([]);
    });

    it("FTS5 query syntax in the text is literal: quotes, *, OR, NOT, NEAR, -, : and ^ never fail or widen", async () => {
      const store = await seedStore();
      const { storeId } = store;
      const [quoted, operators] = await seedSubscriptions(storeId, [
        { customer_name: "Biuro", product_name: 'Pakiet "Złoty"' },
        { customer_name: "Kasia OR Basia", product_name: "kow* NOT -x: ^y NEAR(z)" },
        { customer_name: "Kowalski", product_name: "Basia" },
      ]);
      expect(await matching(store, { query: '"złoty"' }, half)).toEqual(idsOf(quoted));
      expect(await matching(store, { query: 'iet "z' }, half)).toEqual(idsOf(quoted));
      expect(await matching(store, { query: '"""' }, half)).toEqual([]);
      expect(await matching(store, { query: "kasia OR basia" }, half)).toEqual(idsOf(operators));
      expect(await matching(store, { query: "kow*" }, half)).toEqual(idsOf(operators));
      expect(await matching(store, { query: "NOT -x: ^y" }, half)).toEqual(idsOf(operators));
      expect(await matching(store, { query: "NEAR(z)" }, half)).toEqual(idsOf(operators));
      expect(await matching(store, { query: "x OR y" }, half)).toEqual([]);
    });

    it("control characters in the text are literal and never fail: NUL, tab, newline", async () => {
      const store = await seedStore();
      const [tabbed] = await seedSubscriptions(store.storeId, [
        { customer_name: "Ala\tKot", product_name: "Kurs" },
        { customer_name: "Ala Kot", product_name: "Kurs" },
      ]);
      expect(await matching(store, { query: "ala\tkot" }, half)).toEqual(idsOf(tabbed));
      expect(await matching(store, { query: "ala\u0000kot" }, half)).toEqual([]);
      expect(await matching(store, { query: "ala\nkot" }, half)).toEqual([]);
    });

    it("never matches across two names, also through the index", async () => {
      const store = await seedStore();
      const { storeId } = store;
      await seedSubscriptions(storeId, [{ customer_name: "Anna", product_name: "Nowak", variant_name: "Plus" }]);
      // The key holds "anna\u001fnowak\u001fplus": trigrams spanning the separator are indexed,
      // but no typed needle holds the separator, and one that does matches nothing.
      expect(await matching(store, { query: "annanowak" }, half)).toEqual([]);
      expect(await matching(store, { query: "na\u001fno" }, half)).toEqual([]);
      expect(await matching(store, { query: "wakplus" }, half)).toEqual([]);
    });

    it("a query of three characters or more never lists another store's subscriptions", async () => {
      const mine = await seedStore();
      const other = await seedStore();
      const [own] = await seedSubscriptions(mine.storeId, [{ customer_name: "Grażyna Kowalczyk" }]);
      await seedSubscriptions(other.storeId, [{ customer_name: "Grażyna Kowalczyk" }, { customer_name: "Kowalczyk" }]);
      expect(await matching(mine, { query: "kowalczyk" }, half)).toEqual(idsOf(own));
    });
  });
}

describe("GET /subscriptions: queries too short for the index", () => {
  it("one and two characters match every subscription holding them, in any case and script", async () => {
    const store = await seedStore();
    const { storeId } = store;
    const [lukasz, zolw, strasse, kosmas, jan] = await seedSubscriptions(storeId, [
      { customer_name: "Łukasz Wróbel" },
      { customer_name: "Ewa Lis", product_name: "ŻÓŁW" },
      { customer_name: "Jörg Meyer", variant_name: "Straße" },
      { customer_name: "Κοσμάς" },
      { customer_name: "Jan Nowak", product_name: "Kurs", variant_name: "Rocznie" },
    ]);
    expect(await matching(store, { query: "Ł" })).toEqual(idsOf(lukasz, zolw));
    expect(await matching(store, { query: "łu" })).toEqual(idsOf(lukasz));
    expect(await matching(store, { query: "żó" })).toEqual(idsOf(zolw));
    // `ß` is a single character that folds to the two of `ss`.
    expect(await matching(store, { query: "ß" })).toEqual(idsOf(strasse));
    expect(await matching(store, { query: "SS" })).toEqual(idsOf(strasse));
    expect(await matching(store, { query: "Σ" })).toEqual(idsOf(kosmas));
    expect(await matching(store, { query: "ς" })).toEqual(idsOf(kosmas));
    expect(await matching(store, { query: "W" })).toEqual(idsOf(lukasz, zolw, jan));
    expect(await matching(store, { query: "q" })).toEqual([]);
  });

  it("two characters outside the Basic Multilingual Plane are a short query, not an empty index lookup", async () => {
    const store = await seedStore();
    const { storeId } = store;
    const [guitars, guitar] = await seedSubscriptions(storeId, [
      { customer_name: "Ala", product_name: "Gitara 🎸🎸 i 🎸🎸🎸" },
      { customer_name: "Ola", product_name: "Gitara 🎸" },
    ]);
    expect(await matching(store, { query: "🎸" })).toEqual(idsOf(guitars, guitar));
    expect(await matching(store, { query: "🎸🎸" })).toEqual(idsOf(guitars));
    expect(await matching(store, { query: "🎸🎸🎸" })).toEqual(idsOf(guitars));
  });

  it("% and _ alone are literal", async () => {
    const store = await seedStore();
    const { storeId } = store;
    const [percent, underscore] = await seedSubscriptions(storeId, [
      { customer_name: "Ala", product_name: "Rabat 5%" },
      { customer_name: "Ola", product_name: "snake_case" },
      { customer_name: "Ula", product_name: "Kurs" },
    ]);
    expect(await matching(store, { query: "%" })).toEqual(idsOf(percent));
    expect(await matching(store, { query: "_" })).toEqual(idsOf(underscore));
    expect(await matching(store, { query: "5%" })).toEqual(idsOf(percent));
    expect(await matching(store, { query: "e_" })).toEqual(idsOf(underscore));
  });
});

describe("GET /subscriptions: the index follows every write", () => {
  it("a subscription seeded again under new names is found by the new names only (upsert: update trigger)", async () => {
    const store = await seedStore();
    const { storeId } = store;
    const [renamed] = await seedSubscriptions(storeId, [
      { customer_name: "Bożena Kaczmarek", product_name: "Szkoła Gitary", variant_name: "Miesięcznie" },
    ]);
    if (!renamed) throw new Error("seeded nothing");
    expect(await matching(store, { query: "kaczmarek" })).toEqual(idsOf(renamed));

    await seed({
      subscriptions: [
        { ...renamed, customer_name: "Bożena Zawadzka", product_name: "Akademia Ceramiki", variant_name: "Rocznie" },
      ],
    });
    for (const old of ["kaczmarek", "gitary", "miesięcznie"]) expect(await matching(store, { query: old })).toEqual([]);
    for (const now of ["zawadzka", "ceramiki", "rocznie", "bożena"]) {
      expect(await matching(store, { query: now })).toEqual(idsOf(renamed));
    }
    expect(await indexed(storeId, "kaczmarek")).not.toContain(await rowidOf(storeId, renamed.id));
    await expectIndexMatchesTable(storeId);
  });

  it("an UPDATE of the search key re-indexes the row; an UPDATE of other columns leaves it found", async () => {
    const store = await seedStore();
    const { storeId } = store;
    const [subscription] = await seedSubscriptions(storeId, [{ customer_name: "Teresa Malinowska", status: "active" }]);
    if (!subscription) throw new Error("seeded nothing");
    await (await storeD1(storeId))
      .prepare("UPDATE subscriptions SET status = 'canceled' WHERE id = ?")
      .bind(subscription.id)
      .run();
    expect(await matching(store, { query: "malinowska", status: "canceled" })).toEqual(idsOf(subscription));

    await (await storeD1(storeId))
      .prepare("UPDATE subscriptions SET customer_name = ?, search_text = ? WHERE id = ?")
      .bind(
        "Teresa Jasińska",
        subscriptionSearchText({ customer: "Teresa Jasińska", product: null, variant: null }),
        subscription.id,
      )
      .run();
    expect(await matching(store, { query: "malinowska" })).toEqual([]);
    expect(await matching(store, { query: "jasińska" })).toEqual(idsOf(subscription));
    expect(await indexed(storeId, "malinowska")).not.toContain(await rowidOf(storeId, subscription.id));
    await expectIndexMatchesTable(storeId);
  });

  it("a deleted subscription leaves the index, and a row reusing its rowid is not found by the old names", async () => {
    const store = await seedStore();
    const { storeId } = store;
    const [kept, deleted] = await seedSubscriptions(storeId, [
      { customer_name: "Irena Sadowska" },
      { customer_name: "Irena Wysocka" },
    ]);
    if (!kept || !deleted) throw new Error("seeded nothing");
    const rowid = await rowidOf(storeId, deleted.id);
    expect(await matching(store, { query: "irena" })).toEqual(idsOf(kept, deleted));

    await (await storeD1(storeId)).prepare("DELETE FROM subscriptions WHERE id = ?").bind(deleted.id).run();
    expect(await matching(store, { query: "irena" })).toEqual(idsOf(kept));
    expect(await matching(store, { query: "wysocka" })).toEqual([]);
    expect(await indexed(storeId, "wysocka")).not.toContain(rowid);

    // SQLite hands the highest rowid out again once its row is gone.
    const [successor] = await seedSubscriptions(storeId, [{ customer_name: "Marek Nowicki" }]);
    if (!successor) throw new Error("seeded nothing");
    expect(await rowidOf(storeId, successor.id), "the new row took the deleted row's rowid").toBe(rowid);
    expect(await matching(store, { query: "wysocka" })).toEqual([]);
    expect(await matching(store, { query: "nowicki" })).toEqual(idsOf(successor));
    await expectIndexMatchesTable(storeId);
  });
});

for (const half of halves) {
  describe(`GET /subscriptions: indexed search with the other filters, ${half.name}`, () => {
    it("each filter narrows an indexed search, and leaving one out lets exactly its decoy back in", async () => {
      const store = await seedStore();
      const { storeId } = store;
      const target: SubscriptionInput = {
        status: "active",
        customer_name: "Zofia Wiśniewska",
        product_name: "Kurs ceramiki",
        created_at: "2026-02-10T12:00:00Z",
        canceled_at: "2026-03-05T12:00:00Z",
        current_period_end: "2026-04-10T12:00:00Z",
      };
      const decoys: SubscriptionInput[] = [
        { ...target, status: "past_due" },
        { ...target, created_at: "2026-01-10T12:00:00Z" },
        { ...target, canceled_at: "2026-03-20T12:00:00Z" },
        { ...target, current_period_end: "2026-05-10T12:00:00Z" },
        { ...target, product_name: "Kurs stolarki" },
      ];
      const [wanted, statusDecoy, createdDecoy, canceledDecoy, periodDecoy, nameDecoy] = await seedSubscriptions(
        storeId,
        [target, ...decoys],
      );
      const filters = {
        status: "active",
        created_from: "2026-02-01",
        created_to: "2026-02-28",
        canceled_from: "2026-03-01",
        canceled_to: "2026-03-10",
        current_period_end_from: "2026-04-01",
        current_period_end_to: "2026-04-30",
        query: "CERAMIK",
      };
      expect(await matching(store, filters, half)).toEqual(idsOf(wanted));
      expect(await matching(store, omit(filters, "status"), half)).toEqual(idsOf(wanted, statusDecoy));
      expect(await matching(store, omit(filters, "created_from", "created_to"), half)).toEqual(
        idsOf(wanted, createdDecoy),
      );
      expect(await matching(store, omit(filters, "canceled_from", "canceled_to"), half)).toEqual(
        idsOf(wanted, canceledDecoy),
      );
      expect(await matching(store, omit(filters, "current_period_end_from", "current_period_end_to"), half)).toEqual(
        idsOf(wanted, periodDecoy),
      );
      expect(await matching(store, omit(filters, "query"), half)).toEqual(idsOf(wanted, nameDecoy));
    });

    it("an id filter with indexed text keeps both: customer, product and variant", async () => {
      const store = await seedStore();
      const { storeId } = store;
      const [customer, product, variant] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      const [wanted, otherName] = await seedSubscriptions(storeId, [
        { customer_id: customer, product_id: product, variant_id: variant, product_name: "Joga w domu" },
        { customer_id: customer, product_id: product, variant_id: variant, product_name: "Pilates w domu" },
        { product_name: "Joga w domu" },
      ]);
      expect(await matching(store, { customer, query: "joga" }, half)).toEqual(idsOf(wanted));
      expect(await matching(store, { product, query: "joga" }, half)).toEqual(idsOf(wanted));
      expect(await matching(store, { variant, query: "joga" }, half)).toEqual(idsOf(wanted));
      expect(await matching(store, { product, query: "w domu" }, half)).toEqual(idsOf(wanted, otherName));
    });
  });

  describe(`GET /subscriptions: indexed search, sort and pagination, ${half.name}`, () => {
    it("pages of an indexed search come in the sort's order, ties by id, never repeating, with the exact total", async () => {
      const store = await seedStore();
      const { storeId } = store;
      const times = minutesApart(5);
      // Seven matches (two pairs sharing a creation time) among decoys, in a shuffled insertion order.
      const inputs = [
        { customer_name: "Anna Kowalska", created_at: times[3] },
        { customer_name: "Jan Nowak", created_at: times[0] },
        { customer_name: "Maria KOWALSKA", created_at: times[1] },
        { customer_name: "Ewa Kowalska", created_at: times[3] },
        { customer_name: "Piotr Lis", product_name: "Kowalstwo artystyczne", created_at: times[2] },
        { customer_name: "Zofia Kowalska", created_at: times[0] },
        { customer_name: "Adam Kowal", created_at: times[4] },
        { customer_name: "Olga Kowalska", created_at: times[4] },
        { customer_name: "Ida Kowalska", created_at: times[2] },
      ].map((overrides) => subscriptionInput(storeId, overrides));
      await seed({ subscriptions: inputs });
      const matches = inputs.filter((input) => input.customer_name !== "Jan Nowak");
      const newestFirst = [...matches]
        // SQLite compares text byte by byte, as < does for these ASCII strings.
        .sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
        .map((input) => input.id);

      for (const sort of ["-created_at", "created_at"]) {
        const expected = sort === "created_at" ? [...newestFirst].reverse() : newestFirst;
        const seen: string[] = [];
        for (const page of [1, 2, 3, 4, 5]) {
          const { ids, total } = await listed(store, { query: "kowal", sort, per_page: "2", page: String(page) }, half);
          expect(total).toBe(8);
          expect(ids).toHaveLength(page <= 4 ? 2 : 0);
          seen.push(...ids);
        }
        expect(seen, sort).toEqual(expected);
      }
    });

    it("per_page=1 counts an indexed search exactly, with a filter and without", async () => {
      const store = await seedStore();
      const { storeId } = store;
      await seedSubscriptions(storeId, [
        ...Array.from({ length: 12 }, (_, i) => ({ customer_name: `Klient ${i} Wójcik`, status: "active" as const })),
        ...Array.from({ length: 5 }, (_, i) => ({ customer_name: `Klient ${i} Wójcik`, status: "canceled" as const })),
        { customer_name: "Klient Wójtowicz", status: "active" },
      ]);
      for (const [params, total] of [
        [{ query: "wÓjcik" }, 17],
        [{ query: "wójcik", status: "canceled" }, 5],
        [{ query: "wój" }, 18],
      ] as const) {
        const listedPage = await listed(store, { ...params, per_page: "1" }, half);
        expect(listedPage.ids).toHaveLength(1);
        expect(listedPage.total, JSON.stringify(params)).toBe(total);
      }
    });
  });
}

describe("GET /subscriptions: the bound between the two halves", () => {
  it("at the bound the index answers, one hit over it the walk does, with the same pages and totals", async () => {
    const mine = await seedStore();
    const other = await seedStore();
    const marker = `q${crypto.randomUUID().slice(0, 8)}`;
    await seedSubscriptions(
      mine.storeId,
      minutesApart(3).map((created_at, i) => ({ customer_name: `Zażółć ${marker} ${i}`, created_at })),
    );
    await seedSubscriptions(other.storeId, [{ customer_name: `Gęślą ${marker}` }]);
    // Four hits in the whole index, three of them in this store.
    const answers = [];
    for (const maxIndexHits of [4, 3]) {
      const half = { name: `bound ${maxIndexHits}`, maxIndexHits };
      answers.push([
        await listed(mine, { query: marker.toUpperCase(), per_page: "2" }, half),
        await listed(mine, { query: marker, per_page: "2", page: "2" }, half),
        await listed(mine, { query: marker, sort: "created_at", per_page: "2" }, half),
      ]);
    }
    expect(answers[0]?.map((page) => page.total)).toEqual([3, 3, 3]);
    expect(answers[0]?.map((page) => page.ids.length)).toEqual([2, 1, 2]);
    expect(answers[1]).toEqual(answers[0]);
  });
});
