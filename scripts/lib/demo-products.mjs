// The products of the demo fixture (scripts/make-demo-fixture.mjs): the demo store's course, e-book, club,
// draft workshop and archived course, and the second store's subscription product.
import { COURSES, CROSS_SELL_IDS, PRODUCT_IDS, PROJECTS, SECOND_STORE_ID, STORE_ID, VARIANT_IDS } from "./demo-ids.mjs";
import {
  crossSell,
  oneTimeVariant,
  recurringVariant,
  SHOP_URL,
  sectionTimes,
  shopDefaults,
  TARGETS,
} from "./demo-product-parts.mjs";

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
    custom_fields: photographyFields(),
    waitlist_custom_fields: photographyWaitlistFields(),
    variants: photographyVariants(slug),
    cross_sells: photographyCrossSells(),
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

/** The course's checkout fields: a company buyer's tax id and name, and a phone for the course's contact. */
function photographyFields() {
  return [
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
  ];
}

function photographyWaitlistFields() {
  return [
    {
      name: "experience-level",
      enabled: true,
      order: 0,
      label: "Jak oceniasz swoje doświadczenie?",
      type: "select",
      options: ["początkujący", "średniozaawansowany", "zaawansowany"],
    },
  ];
}

function photographyVariants(slug) {
  return [
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
  ];
}

/** In display order; covers a chained offer (parent_id), an inactive one and an incomplete one. */
function photographyCrossSells() {
  return [
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
  ];
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
    draft: calligraphyDraft(onSite),
  };
}

/** The workshop's unpublished overlay: renamed, repriced, a new online variant, other fields and offers. */
function calligraphyDraft(onSite) {
  return {
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

export function buildProducts() {
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
