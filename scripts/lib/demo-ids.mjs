// Fixed ids of the demo fixture (scripts/make-demo-fixture.mjs): other code and docs refer to them, so they
// are never derived from the PRNG.

export const STORE_ID = "5f0c6a1e-2b7d-4c9a-9e3f-1a2b3c4d5e6f";
export const SECOND_STORE_ID = "7a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

/**
 * Where the demo store's products send their events under `npm run dev`: the local receiver that
 * `npm run dev` starts (scripts/webhook-receiver.mjs), which verifies each signature with this secret.
 * Development values only: a real store's secret is made by the API and read with GET /webhooks/secret.
 */
export const DEMO_WEBHOOK_URL = "http://127.0.0.1:8788/webhooks";
export const DEMO_WEBHOOK_SECRET = `whsec_${Buffer.from("storefront-checkout-demo-secret!").toString("base64")}`;

export const PROJECTS = {
  wall: "c4580152-1d7b-4bc8-80fd-b57a7137f885",
  footer: "0375375d-cde7-4989-8933-7da18d4b91c6",
};
export const COURSES = {
  photography: "678d013c-b664-4194-844d-36f3c74732e0",
  calligraphy: "64501cc8-2f66-4b59-8c92-8c82a205bdf8",
  club: "fee088ec-d76e-4fcc-8ce9-b059630c300c",
};

export const PRODUCT_IDS = {
  photography: "2f24e0df-9461-4a9e-91b8-98d0c4aeca09",
  budgetEbook: "fc21b581-f4dc-43a0-846a-fd0096dd004c",
  club: "2c81ebfe-24bf-4054-b955-94b2c8bbb18f",
  calligraphy: "ee3d9867-9851-43ce-a25b-94a4e2738190",
  lightroomArchived: "30c48394-2fd8-493d-a4d6-3033cb8d178b",
  secondStoreTemplates: "64495e10-6efc-45f6-9438-d6b157b387f2",
};

export const VARIANT_IDS = {
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

export const CROSS_SELL_IDS = {
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
