// Generates fixtures/demo.json: the demo document loaded by `npm run dev` and the e2e tests through
// POST /api/v1/_dev/fixtures (format: docs/development.md, "POST /api/v1/_dev/fixtures").
//
//   node scripts/make-demo-fixture.mjs
//
// The output is deterministic: every random choice comes from seeded PRNGs and "now" is fixed, so
// re-running the script yields a byte-identical file and diffs of demo.json stay reviewable.
// Plain Node, no dependencies, so it runs before `npm install` too.
import { mkdir, writeFile } from "node:fs/promises";

const OUTPUT = new URL("../fixtures/demo.json", import.meta.url);

/** Fixed "now" of the demo world; subscription dates are placed relative to it (never Date.now()). */
const NOW = Date.parse("2026-11-01T12:00:00Z");
/** First and last possible subscription creation time. */
const SUBSCRIPTIONS_FROM = Date.parse("2025-01-01T00:00:00Z");
const SUBSCRIPTIONS_UNTIL = Date.parse("2026-10-31T23:59:59Z");
const SEED = 20261101;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// ---------------------------------------------------------------------------------------------
// Randomness
// ---------------------------------------------------------------------------------------------

/** mulberry32: tiny, fast and good enough for fixture data; returns floats in [0, 1). */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a, to derive one independent stream per section from the single seed. */
function hashString(text) {
  let hash = 0x811c9dc5;
  for (const char of text) hash = Math.imul(hash ^ char.codePointAt(0), 0x01000193) >>> 0;
  return hash;
}

/**
 * A random source for one part of the document. Separate streams mean that adding, say, a customer
 * field does not reshuffle every subscription generated after it.
 */
function randomSource(stream) {
  const next = mulberry32(SEED ^ hashString(stream));
  const int = (min, max) => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    chance: (probability) => next() < probability,
    pick: (items) => items[Math.floor(next() * items.length)],
    /** Picks a key of `weights` ({key: weight}) proportionally to its weight. */
    weighted(weights) {
      const entries = Object.entries(weights);
      let roll = next() * entries.reduce((sum, [, weight]) => sum + weight, 0);
      for (const [key, weight] of entries) {
        roll -= weight;
        if (roll < 0) return key;
      }
      return entries[entries.length - 1][0];
    },
    /** A UUID v4-shaped id (version nibble 4, variant nibble 8..b) built from the stream. */
    uuid() {
      const bytes = Array.from({ length: 16 }, () => int(0, 255));
      bytes[6] = (bytes[6] & 0x0f) | 0x40;
      bytes[8] = (bytes[8] & 0x3f) | 0x80;
      const hex = bytes.map((byte) => byte.toString(16).padStart(2, "0")).join("");
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    },
    alphanumeric(length) {
      const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
      return Array.from({ length }, () => alphabet[int(0, alphabet.length - 1)]).join("");
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Time
// ---------------------------------------------------------------------------------------------

/** RFC 3339 in UTC at whole seconds, e.g. 2026-03-01T10:00:00Z (the form the fixture docs use). */
function iso(ms) {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/**
 * Adds billing intervals the way payment providers do: a month after 31 January is the last day of
 * February, not 3 March as plain Date overflow would give.
 */
function addInterval(ms, interval, count) {
  if (interval === "day") return ms + count * DAY;
  if (interval === "week") return ms + count * 7 * DAY;
  const date = new Date(ms);
  const months = interval === "year" ? 12 * count : count;
  const target = date.getUTCMonth() + months;
  const year = date.getUTCFullYear() + Math.floor(target / 12);
  const month = ((target % 12) + 12) % 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(
    year,
    month,
    Math.min(date.getUTCDate(), lastDay),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
  );
}

/** The end of the billing period that contains `at`, for a subscription started at `start`. */
function periodEndContaining(start, at, interval, count) {
  let end = addInterval(start, interval, count);
  for (let n = 2; end <= at; n++) end = addInterval(start, interval, count * n);
  return end;
}

/** The last renewal boundary at or before `at` (the start of the current period). */
function periodStartContaining(start, at, interval, count) {
  let begin = start;
  for (let n = 1; addInterval(start, interval, count * n) <= at; n++) begin = addInterval(start, interval, count * n);
  return begin;
}

// ---------------------------------------------------------------------------------------------
// Fixed ids (other code and docs refer to them; never derive them from the PRNG)
// ---------------------------------------------------------------------------------------------

const STORE_ID = "5f0c6a1e-2b7d-4c9a-9e3f-1a2b3c4d5e6f";
const SECOND_STORE_ID = "7a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

/**
 * Where the demo store's products send their events under `npm run dev`: the local receiver that
 * `npm run dev` starts (scripts/webhook-receiver.mjs), which verifies each signature with this secret.
 * Development values only: a real store's secret is made by the API and read with GET /webhooks/secret.
 */
const DEMO_WEBHOOK_URL = "http://127.0.0.1:8788/webhooks";
const DEMO_WEBHOOK_SECRET = `whsec_${Buffer.from("storefront-checkout-demo-secret!").toString("base64")}`;

const PROJECTS = { wall: "c4580152-1d7b-4bc8-80fd-b57a7137f885", footer: "0375375d-cde7-4989-8933-7da18d4b91c6" };
const COURSES = {
  photography: "678d013c-b664-4194-844d-36f3c74732e0",
  calligraphy: "64501cc8-2f66-4b59-8c92-8c82a205bdf8",
  club: "fee088ec-d76e-4fcc-8ce9-b059630c300c",
};

const PRODUCT_IDS = {
  photography: "2f24e0df-9461-4a9e-91b8-98d0c4aeca09",
  budgetEbook: "fc21b581-f4dc-43a0-846a-fd0096dd004c",
  club: "2c81ebfe-24bf-4054-b955-94b2c8bbb18f",
  calligraphy: "ee3d9867-9851-43ce-a25b-94a4e2738190",
  lightroomArchived: "30c48394-2fd8-493d-a4d6-3033cb8d178b",
  secondStoreTemplates: "64495e10-6efc-45f6-9438-d6b157b387f2",
};

const VARIANT_IDS = {
  photographyBasic: "94a6ca1c-c6e8-4b59-ba29-9dcad060227d",
  photographyConsultation: "f26f6e72-2a8a-4902-9519-f47094c56b57",
  budgetEbook: "76e72502-5edb-432c-b92e-6d6b569c05c8",
  clubMonthly: "af6965fe-a831-4360-a237-d32badcb551d",
  clubYearly: "32837691-84c4-4b0a-9c10-fccc9b4e251b",
  calligraphyOnSite: "30716fae-58d2-4b33-a10b-802d849443c1",
  calligraphyOnlineDraft: "99fe8c04-72ea-451d-984a-ba588dde1982",
  lightroomArchived: "e200a518-1e3b-42e4-8f87-0a5f7a158459",
  secondStoreMonthly: "bb85a3b4-57e7-46a2-bc09-c4daf693e1a5",
};

const CROSS_SELL_IDS = {
  ebookDiscount: "0826a3b9-1533-462d-bd55-3d02e75b5d58",
  clubFirstMonth: "dec9f85c-e7b9-42d6-bbc2-1dae8445c064",
  clubYear: "e1f08c93-4b6e-451f-b110-6833a422ac91",
  clubMonthlyFallback: "f3ca9b44-db08-42d5-8d8d-9215ef6ba7a5",
  calligraphyPresale: "92eac422-9dc2-495d-bff4-d2a466ac761a",
  lightroomIncomplete: "1fa378af-a513-4c6f-9ef8-a9fe05126b0d",
  ebookSecondCopy: "3beeeed2-9707-44cc-8279-59b801fa6120",
  clubYearPercent: "f0f82d9e-9985-4177-9276-fd6e02be62c5",
  ebookToPhotography: "cc548988-40f9-433b-8c04-4e590a0daac6",
  calligraphyToEbook: "c889f50c-299f-43d0-820c-1497fe79eff0",
  calligraphyDraftEbook: "bc798fa0-ab51-4b7c-82da-bac5eced446c",
  calligraphyDraftClub: "181f3479-f3a0-4492-83ef-6e9e8d44e1d3",
};

// ---------------------------------------------------------------------------------------------
// Stores and tokens
// ---------------------------------------------------------------------------------------------

function buildStores() {
  return [
    {
      id: STORE_ID,
      name: "Akademia Kreatywna",
      plan_active: true,
      upload_limit_bytes: 250_000_000,
      webhook_secret: DEMO_WEBHOOK_SECRET,
      platform: {
        connected: true,
        projects: [PROJECTS.wall, PROJECTS.footer],
        courses: [COURSES.photography, COURSES.calligraphy, COURSES.club],
      },
    },
    {
      // A second store so that store scoping and multi-store tokens have something to tell apart.
      // Its plan is inactive (publish answers 422) and it has no platform account connected.
      id: SECOND_STORE_ID,
      name: "Sklep Drugi",
      plan_active: false,
      platform: { connected: false, projects: [], courses: [] },
    },
  ];
}

function buildTokens() {
  return [
    // tokens[0] is what `npm run dev` prints and the e2e tests use: keep it first.
    { token: "demo-checkout-token-akademia-2026", store_ids: [STORE_ID], abilities: ["*"] },
    {
      token: "demo-readonly-token-akademia-2026",
      store_ids: [STORE_ID],
      abilities: ["products:read", "subscriptions:read"],
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// Products
// ---------------------------------------------------------------------------------------------

const SHOP_URL = "https://akademia.example";

/** Product fields every product of the first store shares (legal pages, contact, footer). */
function shopDefaults(slug) {
  return {
    currency: "pln",
    image_url: `${SHOP_URL}/media/${slug}/okladka.jpg`,
    checkout_url: `${SHOP_URL}/checkout/${slug}`,
    contact_email: "kontakt@akademia.example",
    terms_url: `${SHOP_URL}/regulamin`,
    policy_url: `${SHOP_URL}/polityka-prywatnosci`,
    footer_text: "Akademia Kreatywna sp. z o.o., ul. Długa 12/4, 00-238 Warszawa, NIP 525-234-56-78",
    webhook_url: DEMO_WEBHOOK_URL,
  };
}

/** All four section times at once; products in the demo were edited in one go. */
function sectionTimes(at) {
  return { fields: at, settings: at, styles: at, media: at };
}

function oneTimeVariant(id, name, amount, extra = {}) {
  return {
    id,
    name,
    status: "published",
    type: "one_time",
    recurring_options: null,
    amount,
    currency: "pln",
    ...extra,
  };
}

function recurringVariant(id, name, amount, interval, extra = {}) {
  return {
    id,
    name,
    status: "published",
    type: "recurring",
    recurring_options: { interval, interval_count: 1 },
    amount,
    currency: "pln",
    ...extra,
  };
}

/** A complete cross-sell (every field a buyer needs); `extra` overrides the defaults. */
function crossSell(id, target, title, amount, extra = {}) {
  return {
    id,
    product_id: target.productId,
    variant_id: target.variantId,
    parent_id: null,
    title,
    amount,
    currency: "pln",
    validity_minutes: 15,
    one_purchase: false,
    send_offer: true,
    active: true,
    button_text: null,
    main_description: null,
    description: null,
    discount: null,
    ...extra,
  };
}

const TARGETS = {
  budgetEbook: { productId: PRODUCT_IDS.budgetEbook, variantId: VARIANT_IDS.budgetEbook },
  clubMonthly: { productId: PRODUCT_IDS.club, variantId: VARIANT_IDS.clubMonthly },
  clubYearly: { productId: PRODUCT_IDS.club, variantId: VARIANT_IDS.clubYearly },
  calligraphyOnSite: { productId: PRODUCT_IDS.calligraphy, variantId: VARIANT_IDS.calligraphyOnSite },
  lightroom: { productId: PRODUCT_IDS.lightroomArchived, variantId: VARIANT_IDS.lightroomArchived },
  photographyBasic: { productId: PRODUCT_IDS.photography, variantId: VARIANT_IDS.photographyBasic },
};

function photographyCourse() {
  const slug = "kurs-fotografii-mobilnej";
  return {
    id: PRODUCT_IDS.photography,
    store_id: STORE_ID,
    status: "published",
    name: "Kurs fotografii mobilnej",
    slug,
    ...shopDefaults(slug),
    description:
      "Naucz się robić smartfonem zdjęcia, które wyglądają jak z lustrzanki. 42 lekcje wideo, " +
      "ćwiczenia po każdym module i zadania domowe z informacją zwrotną od prowadzącej.",
    refund_days: 14,
    active_from: "2025-01-15T09:00:00Z",
    redirect_url: `${SHOP_URL}/dziekujemy`,
    redirect_time: 5,
    add_redirect_params: true,
    show_discount_field: true,
    show_confetti: true,
    waitlist_enabled: true,
    waitlist_require_first_name: true,
    custom_fields: [
      {
        name: "nip",
        enabled: true,
        order: 0,
        label: "NIP (jeśli chcesz fakturę na firmę)",
        type: "text",
        required: false,
      },
      { name: "phone", enabled: true, order: 1, label: "Numer telefonu", type: "tel", required: true },
      { name: "company-name", enabled: true, order: 2, label: "Nazwa firmy", type: "text", required: false },
    ],
    waitlist_custom_fields: [
      {
        name: "experience-level",
        enabled: true,
        order: 0,
        label: "Jak oceniasz swoje doświadczenie?",
        type: "select",
        options: ["początkujący", "średniozaawansowany", "zaawansowany"],
      },
    ],
    variants: [
      oneTimeVariant(VARIANT_IDS.photographyBasic, "Kurs fotografii mobilnej", 19900, {
        old_price: 24900,
        refund_days: 14,
        checkout_url: `${SHOP_URL}/checkout/${slug}?wariant=podstawowy`,
        custom_fields: null,
      }),
      oneTimeVariant(VARIANT_IDS.photographyConsultation, "Kurs fotografii mobilnej z konsultacją", 29900, {
        refund_days: 14,
        custom_id: "FOTO-KONS",
        checkout_url: `${SHOP_URL}/checkout/${slug}?wariant=konsultacja`,
        // The consultation variant asks for its own fields instead of inheriting the product's.
        custom_fields: [
          {
            name: "phone",
            enabled: true,
            order: 0,
            label: "Telefon do umówienia konsultacji",
            type: "tel",
            required: true,
          },
          { name: "consultation-time", enabled: true, order: 1, label: "Preferowana pora konsultacji", type: "text" },
        ],
      }),
    ],
    // Display order matters; covers a chained offer (parent_id), an inactive one and an incomplete one.
    cross_sells: [
      crossSell(CROSS_SELL_IDS.ebookDiscount, TARGETS.budgetEbook, "E-book „Budżet domowy” 40% taniej", 2900, {
        button_text: "Dodaj e-book",
        description: "Praktyczny poradnik z arkuszem do planowania wydatków.",
      }),
      crossSell(CROSS_SELL_IDS.clubFirstMonth, TARGETS.clubMonthly, "Klub Twórców — pierwszy miesiąc za 9 zł", 900, {
        validity_minutes: 30,
        main_description: "Co miesiąc nowe wyzwanie fotograficzne i spotkanie na żywo.",
      }),
      crossSell(CROSS_SELL_IDS.clubYear, TARGETS.clubYearly, "Roczne członkostwo w Klubie Twórców", 39000, {
        discount: { type: "amount", value: 10000 },
        button_text: "Chcę dołączyć na rok",
      }),
      crossSell(CROSS_SELL_IDS.clubMonthlyFallback, TARGETS.clubMonthly, "A może najpierw miesiąc w Klubie?", 2900, {
        // Shown when the buyer declines the yearly offer above.
        parent_id: CROSS_SELL_IDS.clubYear,
        send_offer: false,
      }),
      crossSell(
        CROSS_SELL_IDS.calligraphyPresale,
        TARGETS.calligraphyOnSite,
        "Przedsprzedaż: Warsztaty kaligrafii",
        29900,
        {
          // Switched off until the workshop is published.
          active: false,
          validity_minutes: 60,
        },
      ),
      {
        // Incomplete on purpose: an offer left half-configured (no title, no amount); lists skip it.
        id: CROSS_SELL_IDS.lightroomIncomplete,
        product_id: TARGETS.lightroom.productId,
        variant_id: TARGETS.lightroom.variantId,
        parent_id: null,
        currency: "pln",
        validity_minutes: 15,
        one_purchase: false,
        send_offer: false,
        active: true,
      },
      crossSell(CROSS_SELL_IDS.ebookSecondCopy, TARGETS.budgetEbook, "E-book w prezencie dla bliskiej osoby", 3900, {
        one_purchase: true,
        validity_minutes: 20,
        button_text: "Dodaj do zamówienia",
      }),
      crossSell(CROSS_SELL_IDS.clubYearPercent, TARGETS.clubYearly, "Klub Twórców na rok — 20% rabatu", 39200, {
        discount: { type: "percent", value: 20 },
        validity_minutes: 10,
        main_description: "Oferta tylko teraz, zaraz po zakupie kursu.",
      }),
    ],
    wall_id: null,
    footer_id: PROJECTS.footer,
    courses: [COURSES.photography],
    redirect_course_id: null,
    updated_at: {
      fields: "2026-09-14T08:30:00Z",
      settings: "2026-09-14T08:30:00Z",
      styles: "2026-06-02T17:05:00Z",
      media: "2026-08-21T11:12:45Z",
    },
  };
}

function budgetEbook() {
  const slug = "ebook-budzet-domowy";
  return {
    id: PRODUCT_IDS.budgetEbook,
    store_id: STORE_ID,
    status: "published",
    name: "E-book: Budżet domowy",
    slug,
    ...shopDefaults(slug),
    description:
      "Jak w 30 dni uporządkować domowe finanse: metoda kopert, plan oszczędzania i gotowy arkusz " +
      "kalkulacyjny. 96 stron, PDF i EPUB.",
    refund_days: null,
    generate_qr_code: true,
    custom_fields: null,
    waitlist_custom_fields: null,
    variants: [oneTimeVariant(VARIANT_IDS.budgetEbook, "E-book (PDF + EPUB)", 4900, { custom_id: "EBOOK-BUDZET" })],
    cross_sells: [
      crossSell(
        CROSS_SELL_IDS.ebookToPhotography,
        TARGETS.photographyBasic,
        "Kurs fotografii mobilnej w cenie promocyjnej",
        14900,
        {
          validity_minutes: 30,
        },
      ),
    ],
    courses: [],
    updated_at: sectionTimes("2026-05-10T14:00:00Z"),
  };
}

function creatorsClub() {
  const slug = "klub-tworcow";
  return {
    id: PRODUCT_IDS.club,
    store_id: STORE_ID,
    status: "published",
    name: "Klub Twórców",
    slug,
    ...shopDefaults(slug),
    description:
      "Społeczność dla osób, które tworzą: comiesięczne warsztaty na żywo, nagrania, wyzwania " +
      "i zamknięta grupa. Możesz zrezygnować w każdej chwili.",
    refund_days: 14,
    require_tax_id: false,
    custom_fields: [{ name: "nickname", enabled: true, order: 0, label: "Pseudonim w społeczności", type: "text" }],
    waitlist_custom_fields: null,
    variants: [
      recurringVariant(VARIANT_IDS.clubMonthly, "Członkostwo miesięczne", 4900, "month", { trial_period_days: 14 }),
      recurringVariant(VARIANT_IDS.clubYearly, "Członkostwo roczne", 49000, "year", { old_price: 58800 }),
    ],
    cross_sells: [],
    courses: [COURSES.club],
    redirect_course_id: COURSES.club,
    updated_at: sectionTimes("2026-02-03T10:00:00Z"),
  };
}

function calligraphyWorkshop() {
  const slug = "warsztaty-kaligrafii";
  const liveFields = [
    { name: "phone", enabled: true, order: 0, label: "Telefon", type: "tel", required: true },
    { name: "dietary-needs", enabled: true, order: 1, label: "Uwagi dietetyczne (lunch w cenie)", type: "text" },
  ];
  const onSite = oneTimeVariant(VARIANT_IDS.calligraphyOnSite, "Warsztaty stacjonarne — Kraków", 34900, {
    quantity: 12,
    has_quantity: true,
    custom_fields: null,
  });
  return {
    id: PRODUCT_IDS.calligraphy,
    store_id: STORE_ID,
    status: "draft",
    name: "Warsztaty kaligrafii",
    slug,
    ...shopDefaults(slug),
    description: "Jednodniowe warsztaty kaligrafii dla początkujących. Materiały i lunch w cenie.",
    refund_days: 7,
    active_from: "2026-12-01T08:00:00Z",
    active_until: "2027-01-31T22:59:59Z",
    custom_fields: liveFields,
    waitlist_custom_fields: null,
    variants: [onSite],
    cross_sells: [
      crossSell(CROSS_SELL_IDS.calligraphyToEbook, TARGETS.budgetEbook, "E-book „Budżet domowy” na start", 3900),
    ],
    wall_id: null,
    footer_id: null,
    courses: [],
    redirect_course_id: null,
    updated_at: {
      fields: "2026-10-20T09:15:00Z",
      settings: "2026-10-20T09:15:00Z",
      styles: "2026-10-18T16:40:00Z",
      media: "2026-10-18T16:40:00Z",
    },
    draft: {
      draft_version: 2,
      // The draft was started after the last live change (based_on >= updated_at), so it is not stale.
      based_on: {
        fields: "2026-10-20T09:15:00Z",
        settings: "2026-10-20T09:15:00Z",
        styles: "2026-10-18T16:40:00Z",
        media: "2026-10-25T12:00:00Z",
      },
      product: {
        name: "Warsztaty kaligrafii nowoczesnej",
        slug: "warsztaty-kaligrafii-nowoczesnej",
        description:
          "Kaligrafia nowoczesna (brush lettering) w dwóch formach: dzień w krakowskiej pracowni " +
          "albo nagranie z zestawem pisaków wysłanym do domu.",
        show_confetti: true,
      },
      custom_fields: [
        { name: "phone", enabled: true, order: 0, label: "Telefon", type: "tel", required: true },
        {
          name: "skill-level",
          enabled: true,
          order: 1,
          label: "Czy pisałeś/aś już pędzelkiem?",
          type: "select",
          options: ["nie", "trochę", "tak"],
        },
        { name: "dietary-needs", enabled: false, order: 2, label: "Uwagi dietetyczne (lunch w cenie)", type: "text" },
      ],
      // The whole overlay variant list: the live variant repriced plus a new, unpublished one.
      variants: [
        { ...onSite, amount: 37900 },
        oneTimeVariant(VARIANT_IDS.calligraphyOnlineDraft, "Warsztaty online (nagranie + zestaw pisaków)", 19900, {
          status: "draft",
          has_shipping: true,
          delivery_enabled: true,
          delivery_address_optional: false,
          custom_fields: null,
        }),
      ],
      cross_sells: [
        crossSell(CROSS_SELL_IDS.calligraphyDraftEbook, TARGETS.budgetEbook, "E-book „Budżet domowy” na start", 2900),
        crossSell(CROSS_SELL_IDS.calligraphyDraftClub, TARGETS.clubMonthly, "Miesiąc w Klubie Twórców gratis", 0, {
          one_purchase: true,
        }),
      ],
      wall_id: PROJECTS.wall,
      footer_id: PROJECTS.footer,
      player: { connect: [COURSES.calligraphy], disconnect: [], redirect_course_id: COURSES.calligraphy },
    },
  };
}

function archivedLightroomCourse() {
  const slug = "kurs-lightroom-2024";
  return {
    id: PRODUCT_IDS.lightroomArchived,
    store_id: STORE_ID,
    status: "archived",
    name: "Kurs Lightroom — edycja 2024",
    slug,
    ...shopDefaults(slug),
    description: "Poprzednia edycja kursu obróbki zdjęć. Sprzedaż zakończona.",
    refund_days: 14,
    active_until: "2024-12-31T22:59:59Z",
    variants: [oneTimeVariant(VARIANT_IDS.lightroomArchived, "Kurs Lightroom 2024", 14900)],
    cross_sells: [],
    courses: [],
    updated_at: sectionTimes("2024-12-31T23:00:00Z"),
  };
}

/** The second store's only product, so its subscriptions point at a real product and variant. */
function secondStoreTemplates() {
  return {
    id: PRODUCT_IDS.secondStoreTemplates,
    store_id: SECOND_STORE_ID,
    status: "published",
    name: "Pakiet szablonów — abonament",
    slug: "pakiet-szablonow",
    currency: "pln",
    description: "Co miesiąc 20 nowych szablonów graficznych do mediów społecznościowych.",
    checkout_url: "https://sklep-drugi.example/checkout/pakiet-szablonow",
    contact_email: "pomoc@sklep-drugi.example",
    refund_days: 14,
    variants: [recurringVariant(VARIANT_IDS.secondStoreMonthly, "Abonament miesięczny", 2900, "month")],
    cross_sells: [],
    courses: [],
    updated_at: sectionTimes("2025-03-01T10:00:00Z"),
  };
}

function buildProducts() {
  // The first published product is the one `npm run dev` suggests calling: keep the course first.
  return [
    photographyCourse(),
    budgetEbook(),
    creatorsClub(),
    calligraphyWorkshop(),
    archivedLightroomCourse(),
    secondStoreTemplates(),
  ];
}

// ---------------------------------------------------------------------------------------------
// Customers
// ---------------------------------------------------------------------------------------------

const MALE_FIRST_NAMES = [
  "Łukasz",
  "Michał",
  "Paweł",
  "Piotr",
  "Tomasz",
  "Krzysztof",
  "Jakub",
  "Mateusz",
  "Bartłomiej",
  "Grzegorz",
  "Wojciech",
  "Jędrzej",
  "Maciej",
  "Kamil",
  "Przemysław",
  "Mikołaj",
  "Stanisław",
  "Rafał",
  "Adam",
  "Sławomir",
];
const FEMALE_FIRST_NAMES = [
  "Zofia",
  "Małgorzata",
  "Agnieszka",
  "Katarzyna",
  "Anna",
  "Magdalena",
  "Joanna",
  "Aleksandra",
  "Ewa",
  "Dorota",
  "Beata",
  "Żaneta",
  "Marta",
  "Natalia",
  "Urszula",
  "Jadwiga",
  "Bożena",
  "Elżbieta",
  "Łucja",
  "Weronika",
];
/** [male form, female form]; many Polish surnames have gendered forms, the rest are the same for both. */
const SURNAMES = [
  ["Nowak", "Nowak"],
  ["Kowalski", "Kowalska"],
  ["Wiśniewski", "Wiśniewska"],
  ["Wójcik", "Wójcik"],
  ["Kowalczyk", "Kowalczyk"],
  ["Kamiński", "Kamińska"],
  ["Lewandowski", "Lewandowska"],
  ["Zieliński", "Zielińska"],
  ["Szymański", "Szymańska"],
  ["Woźniak", "Woźniak"],
  ["Dąbrowski", "Dąbrowska"],
  ["Kozłowski", "Kozłowska"],
  ["Jankowski", "Jankowska"],
  ["Mazur", "Mazur"],
  ["Kaczmarek", "Kaczmarek"],
  ["Piotrowski", "Piotrowska"],
  ["Grabowski", "Grabowska"],
  ["Żółkiewski", "Żółkiewska"],
  ["Pawłowski", "Pawłowska"],
  ["Michalski", "Michalska"],
  ["Król", "Król"],
  ["Wieczorek", "Wieczorek"],
  ["Jabłoński", "Jabłońska"],
  ["Wróbel", "Wróbel"],
  ["Górski", "Górska"],
  ["Stępień", "Stępień"],
  ["Sikora", "Sikora"],
  ["Ostrowski", "Ostrowska"],
  ["Błaszczyk", "Błaszczyk"],
  ["Ślusarczyk", "Ślusarczyk"],
  ["Czyżewski", "Czyżewska"],
  ["Gąsiorowski", "Gąsiorowska"],
];
/** Customers the demo and the docs can search for by name; they always exist in the first store. */
const FEATURED_CUSTOMERS = [
  "Łukasz Wiśniewski",
  "Zofia Wójcik",
  "Małgorzata Żółkiewska",
  "Michał Dąbrowski",
  "Agnieszka Kaczmarek",
  "Jędrzej Ślusarczyk",
  "Żaneta Gąsiorowska",
];
const EMAIL_DOMAINS = ["example.com", "example.org", "example.net", "poczta.example", "skrzynka.example"];

const ASCII = { ą: "a", ć: "c", ę: "e", ł: "l", ń: "n", ó: "o", ś: "s", ź: "z", ż: "z" };

/** Polish letters to ASCII for e-mail local parts (NFD cannot do ł). */
function asciiFold(text) {
  return [...text.toLowerCase()].map((char) => ASCII[char] ?? char).join("");
}

/** A few e-mail styles people really use, kept unique within a store. */
function emailFor(random, name, taken) {
  const [first, last] = name.split(" ").map(asciiFold);
  const domain = random.pick(EMAIL_DOMAINS);
  const styles = [
    `${first}.${last}`,
    `${first[0]}.${last}`,
    `${first}${last}`,
    `${first}.${last}${random.int(70, 99)}`,
  ];
  let local = random.pick(styles);
  while (taken.has(`${local}@${domain}`)) local = `${local}${random.int(1, 9)}`;
  taken.add(`${local}@${domain}`);
  // A few addresses keep the capitals people typed, so case-insensitive e-mail search has data.
  return random.chance(0.05) ? `${local[0].toUpperCase()}${local.slice(1)}@${domain}` : `${local}@${domain}`;
}

function randomName(random) {
  const female = random.chance(0.55);
  const first = random.pick(female ? FEMALE_FIRST_NAMES : MALE_FIRST_NAMES);
  const [maleSurname, femaleSurname] = random.pick(SURNAMES);
  return `${first} ${female ? femaleSurname : maleSurname}`;
}

/** A store's customer pool: featured names first, then random ones; ~6% have no e-mail on file. */
function buildCustomers(random, count, featured = []) {
  const taken = new Set();
  const names = [...featured];
  while (names.length < count) names.push(randomName(random));
  return names.map((name) => ({
    id: random.uuid(),
    name,
    email: random.chance(0.06) ? null : emailFor(random, name, taken),
  }));
}

// ---------------------------------------------------------------------------------------------
// Subscriptions
// ---------------------------------------------------------------------------------------------

const STATUS_WEIGHTS = {
  active: 62,
  trialing: 7,
  past_due: 7,
  canceled: 14,
  incomplete: 4,
  incomplete_expired: 3,
  unpaid: 3,
};
const STATUSES = Object.keys(STATUS_WEIGHTS);

function between(random, from, until) {
  return from + Math.floor(random.next() * (until - from));
}

/**
 * When a subscription in `status` can plausibly have been created: trials are at most 14 days old,
 * `incomplete` ones are younger than the provider's 23-hour payment window, and statuses that need a
 * failed renewal (past_due, unpaid) are at least one billing period old.
 */
function creationTime(random, status, plan) {
  const { interval, interval_count: count } = plan.recurring_options;
  if (status === "trialing") return between(random, NOW - 13 * DAY, SUBSCRIPTIONS_UNTIL);
  if (status === "incomplete") return between(random, NOW - 22 * HOUR, SUBSCRIPTIONS_UNTIL);
  if (status === "incomplete_expired") return between(random, SUBSCRIPTIONS_FROM, NOW - 2 * DAY);
  if (status === "past_due" || status === "unpaid") {
    return between(random, SUBSCRIPTIONS_FROM, addInterval(NOW, interval, -count) - 3 * DAY);
  }
  if (status === "canceled") return between(random, SUBSCRIPTIONS_FROM, NOW - 20 * DAY);
  return between(random, SUBSCRIPTIONS_FROM, SUBSCRIPTIONS_UNTIL);
}

/** current_period_end, cancel_at and canceled_at consistent with the status and creation time. */
function timeline(random, status, created, plan) {
  const { interval, interval_count: count } = plan.recurring_options;
  const nextRenewal = periodEndContaining(created, NOW, interval, count);
  switch (status) {
    case "trialing":
      return { current_period_end: created + plan.trial_period_days * DAY, cancel_at: null, canceled_at: null };
    case "active": {
      // About one in ten active members has asked to leave at the end of the paid period.
      if (!random.chance(0.1)) return { current_period_end: nextRenewal, cancel_at: null, canceled_at: null };
      // Asked during the current period (creation is at least 12 hours before NOW, so this stays in the past).
      const periodStart = periodStartContaining(created, NOW, interval, count);
      const canceledAt = between(random, Math.min(periodStart + HOUR, NOW - MINUTE), NOW);
      return { current_period_end: nextRenewal, cancel_at: nextRenewal, canceled_at: canceledAt };
    }
    case "past_due":
      // The renewal already opened a new period whose invoice is failing.
      return { current_period_end: nextRenewal, cancel_at: null, canceled_at: null };
    case "unpaid":
      // Retries are exhausted; the period stopped at the renewal that was never paid.
      return {
        current_period_end: periodStartContaining(created, NOW, interval, count),
        cancel_at: null,
        canceled_at: null,
      };
    case "incomplete":
    case "incomplete_expired":
      return { current_period_end: addInterval(created, interval, count), cancel_at: null, canceled_at: null };
    case "canceled": {
      const canceledAt = between(random, created + DAY, NOW - 10 * DAY);
      const periodEnd = periodEndContaining(created, canceledAt, interval, count);
      // Either it ran to the end of the paid period, or (when that is still ahead) it ended at once.
      const endsAtPeriodEnd = periodEnd <= NOW && random.chance(0.65);
      const cancelAt = endsAtPeriodEnd ? periodEnd : canceledAt;
      return { current_period_end: periodEnd, cancel_at: cancelAt, canceled_at: canceledAt };
    }
    default:
      throw new Error(`unknown status ${status}`);
  }
}

/** Payment-provider subscription ids ("sub_" + 14 alphanumerics), unique across the document. */
function remoteIdFactory(random) {
  const seen = new Set();
  return () => {
    let id;
    do id = `sub_${random.alphanumeric(14)}`;
    while (seen.has(id));
    seen.add(id);
    return id;
  };
}

/**
 * `count` subscriptions of one store. `plans` are {product, variant, weight}. The first subscriptions
 * take each status of `statusWeights` once (so every status exists whatever the dice say) and each
 * featured customer once.
 */
function buildSubscriptions(random, { storeId, count, plans, customers, featuredCount, statusWeights, nextRemoteId }) {
  const subscriptions = [];
  const createdBefore = [];
  const everyStatus = Object.keys(statusWeights);
  for (let i = 0; i < count; i++) {
    const status = i < everyStatus.length ? everyStatus[i] : random.weighted(statusWeights);
    // Trials exist only on variants that offer one.
    const eligible = plans.filter((plan) => status !== "trialing" || plan.variant.trial_period_days);
    const plan = eligible[Number(random.weighted(Object.fromEntries(eligible.map((p, index) => [index, p.weight]))))];
    const variant = plan.variant;
    const customer = i < featuredCount ? customers[i] : random.pick(customers);

    let created = creationTime(random, status, variant);
    // Some checkouts land in the same second (bulk imports, retries): keyset pagination must cope.
    if (status === "active" && createdBefore.length > 0 && random.chance(0.04)) created = random.pick(createdBefore);
    if (status === "active") createdBefore.push(created);

    subscriptions.push({
      id: random.uuid(),
      store_id: storeId,
      customer_id: customer.id,
      customer_name: customer.name,
      customer_email: customer.email,
      product_id: plan.product.id,
      variant_id: variant.id,
      hidden_by_customer: random.chance(0.025),
      remote_id: nextRemoteId(),
      provider: "stripe",
      status,
      variant_name: variant.name,
      product_name: plan.product.name,
      recurring_amount: variant.amount,
      currency: variant.currency,
      interval: variant.recurring_options.interval,
      interval_count: variant.recurring_options.interval_count,
      quantity: random.chance(0.03) ? 2 : 1,
      ...mapTimes(timeline(random, status, created, variant)),
      created_at: iso(created),
    });
  }
  return subscriptions;
}

function mapTimes(times) {
  return Object.fromEntries(Object.entries(times).map(([key, value]) => [key, value === null ? null : iso(value)]));
}

function planOf(products, productId, variantId, weight) {
  const product = products.find((candidate) => candidate.id === productId);
  const variant = product.variants.find((candidate) => candidate.id === variantId);
  return { product, variant, weight };
}

// ---------------------------------------------------------------------------------------------
// Validation (a rough mirror of src/dev/fixture-schema.ts and the loader's reference checks)
// ---------------------------------------------------------------------------------------------

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;
const ABILITIES = new Set([
  "media:write",
  "products:read",
  "products:write",
  "products:publish",
  "subscriptions:read",
  "webhooks:manage",
  "*",
]);

function validate(document) {
  const problems = [];
  const check = (ok, message) => ok || problems.push(message);
  const unique = (section, ids) => {
    const seen = new Set();
    for (const id of ids) {
      check(UUID.test(id), `${section}: ${id} is not a v4 UUID`);
      check(!seen.has(id), `${section}: ${id} appears twice`);
      seen.add(id);
    }
  };
  const fieldsOk = (owner, fields) => {
    if (fields == null) return;
    const names = fields.map((field) => field.name);
    check(new Set(names).size === names.length, `${owner}: custom field names repeat`);
  };

  unique(
    "stores",
    document.stores.map((store) => store.id),
  );
  const storeIds = new Set(document.stores.map((store) => store.id));
  for (const token of document.tokens) {
    check(/^[\x21-\x7e]{16,512}$/.test(token.token), `token ${token.token}: not printable ASCII of 16+ chars`);
    check(
      token.store_ids.every((id) => storeIds.has(id)),
      `token ${token.token}: unknown store`,
    );
    check(
      token.abilities.every((ability) => ABILITIES.has(ability)),
      `token ${token.token}: unknown ability`,
    );
  }

  const { products, subscriptions } = document;
  unique(
    "products",
    products.map((product) => product.id),
  );
  unique(
    "variants",
    products.flatMap((product) => product.variants.map((variant) => variant.id)),
  );
  unique(
    "cross_sells",
    products.flatMap((product) => product.cross_sells.map((offer) => offer.id)),
  );
  unique(
    "subscriptions",
    subscriptions.map((subscription) => subscription.id),
  );

  const variantOwner = new Map();
  for (const product of products) for (const variant of product.variants) variantOwner.set(variant.id, product.id);
  for (const product of products) {
    const draftVariants = product.draft?.variants ?? [];
    for (const variant of draftVariants) variantOwner.set(variant.id, variantOwner.get(variant.id) ?? product.id);
  }
  const slugs = new Set();
  for (const product of products) {
    check(storeIds.has(product.store_id), `product ${product.id}: unknown store`);
    check(SLUG.test(product.slug), `product ${product.id}: bad slug ${product.slug}`);
    check(!slugs.has(`${product.store_id}/${product.slug}`), `product ${product.id}: slug taken`);
    slugs.add(`${product.store_id}/${product.slug}`);
    fieldsOk(`product ${product.slug}`, product.custom_fields);
    fieldsOk(`product ${product.slug} waitlist`, product.waitlist_custom_fields);
    for (const variant of [...product.variants, ...(product.draft?.variants ?? [])])
      fieldsOk(`variant ${variant.id}`, variant.custom_fields);
    for (const offer of [...product.cross_sells, ...(product.draft?.cross_sells ?? [])]) {
      check(
        variantOwner.get(offer.variant_id) === offer.product_id,
        `cross-sell ${offer.id}: variant is not of product`,
      );
      check(offer.product_id !== product.id, `cross-sell ${offer.id}: offers its own product`);
    }
    if (product.draft) {
      const { draft } = product;
      check(SLUG.test(draft.product.slug ?? product.slug), `draft of ${product.slug}: bad slug`);
      fieldsOk(`draft of ${product.slug}`, draft.custom_fields);
      for (const section of ["fields", "settings", "styles", "media"]) {
        check(draft.based_on[section] >= product.updated_at[section], `draft of ${product.slug}: ${section} is stale`);
      }
    }
  }

  for (const s of subscriptions) {
    check(storeIds.has(s.store_id), `subscription ${s.id}: unknown store`);
    check(UUID.test(s.customer_id), `subscription ${s.id}: customer id is not a UUID`);
    check(variantOwner.get(s.variant_id) === s.product_id, `subscription ${s.id}: variant is not of product`);
    for (const key of ["created_at", "current_period_end", "cancel_at", "canceled_at"]) {
      check(s[key] === null || RFC3339.test(s[key]), `subscription ${s.id}: ${key} is not RFC 3339`);
    }
    check(s.current_period_end > s.created_at, `subscription ${s.id}: period ends before it was created`);
    check(!s.canceled_at || s.canceled_at > s.created_at, `subscription ${s.id}: canceled before it was created`);
    check(/^sub_[A-Za-z0-9]{14}$/.test(s.remote_id), `subscription ${s.id}: bad remote_id`);
  }
  const firstStoreStatuses = new Set(subscriptions.filter((s) => s.store_id === STORE_ID).map((s) => s.status));
  check(firstStoreStatuses.size === STATUSES.length, "the first store misses a subscription status");
  const seconds = new Map();
  for (const s of subscriptions) seconds.set(s.created_at, (seconds.get(s.created_at) ?? 0) + 1);
  check([...seconds.values()].filter((n) => n > 1).length >= 3, "fewer than three created_at seconds are shared");

  if (problems.length > 0) throw new Error(`demo fixture is invalid:\n  ${problems.join("\n  ")}`);
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

function buildDocument() {
  const products = buildProducts();
  const nextRemoteId = remoteIdFactory(randomSource("remote-ids"));

  const firstRandom = randomSource("subscriptions:akademia");
  const firstCustomers = buildCustomers(randomSource("customers:akademia"), 240, FEATURED_CUSTOMERS);
  const first = buildSubscriptions(firstRandom, {
    storeId: STORE_ID,
    count: 300,
    plans: [
      planOf(products, PRODUCT_IDS.club, VARIANT_IDS.clubMonthly, 7),
      planOf(products, PRODUCT_IDS.club, VARIANT_IDS.clubYearly, 3),
    ],
    customers: firstCustomers,
    featuredCount: FEATURED_CUSTOMERS.length,
    statusWeights: STATUS_WEIGHTS,
    nextRemoteId,
  });

  const secondCustomers = buildCustomers(randomSource("customers:sklep-drugi"), 34);
  const second = buildSubscriptions(randomSource("subscriptions:sklep-drugi"), {
    storeId: SECOND_STORE_ID,
    count: 40,
    plans: [planOf(products, PRODUCT_IDS.secondStoreTemplates, VARIANT_IDS.secondStoreMonthly, 1)],
    customers: secondCustomers,
    featuredCount: 0,
    statusWeights: { active: 70, past_due: 8, canceled: 18, unpaid: 4 },
    nextRemoteId,
  });

  return { stores: buildStores(), tokens: buildTokens(), products, subscriptions: [...first, ...second] };
}

const document = buildDocument();
const json = `${JSON.stringify(document, null, 2)}\n`;
// Validate what will be written (after a JSON round trip), not the in-memory objects.
validate(JSON.parse(json));

await mkdir(new URL(".", OUTPUT), { recursive: true });
await writeFile(OUTPUT, json);

const perStore = (storeId) => document.subscriptions.filter((s) => s.store_id === storeId).length;
console.log(
  `wrote fixtures/demo.json: ${document.stores.length} stores, ${document.tokens.length} tokens, ` +
    `${document.products.length} products, ` +
    `${document.products.reduce((sum, product) => sum + product.variants.length, 0)} variants, ` +
    `${document.products.reduce((sum, product) => sum + product.cross_sells.length, 0)} cross-sells, ` +
    `${document.products.filter((product) => product.draft).length} draft, ` +
    `${document.subscriptions.length} subscriptions (${perStore(STORE_ID)} + ${perStore(SECOND_STORE_ID)})`,
);
