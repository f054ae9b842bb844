// The building blocks of the demo fixture's products (scripts/lib/demo-products.mjs): shop defaults,
// variants, cross-sells and the offer targets.
import { DEMO_WEBHOOK_URL, PRODUCT_IDS, VARIANT_IDS } from "./demo-ids.mjs";

export const SHOP_URL = "https://akademia.example";

/** Product fields every product of the first store shares (legal pages, contact, footer). */
export function shopDefaults(slug) {
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
export function sectionTimes(at) {
  return { fields: at, settings: at, styles: at, media: at };
}

export function oneTimeVariant(id, name, amount, extra = {}) {
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

export function recurringVariant(id, name, amount, interval, extra = {}) {
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
export function crossSell(id, target, title, amount, extra = {}) {
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

export const TARGETS = {
  budgetEbook: { productId: PRODUCT_IDS.budgetEbook, variantId: VARIANT_IDS.budgetEbook },
  clubMonthly: { productId: PRODUCT_IDS.club, variantId: VARIANT_IDS.clubMonthly },
  clubYearly: { productId: PRODUCT_IDS.club, variantId: VARIANT_IDS.clubYearly },
  calligraphyOnSite: { productId: PRODUCT_IDS.calligraphy, variantId: VARIANT_IDS.calligraphyOnSite },
  lightroom: { productId: PRODUCT_IDS.lightroomArchived, variantId: VARIANT_IDS.lightroomArchived },
  photographyBasic: { productId: PRODUCT_IDS.photography, variantId: VARIANT_IDS.photographyBasic },
};
