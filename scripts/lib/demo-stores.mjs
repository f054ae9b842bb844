// The stores and tokens of the demo fixture (scripts/make-demo-fixture.mjs).
import { COURSES, DEMO_WEBHOOK_SECRET, PROJECTS, SECOND_STORE_ID, STORE_ID } from "./demo-ids.mjs";

export function buildStores() {
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

export function buildTokens() {
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
