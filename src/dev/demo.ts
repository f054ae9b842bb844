// Only the `tokens` key is imported: the bundler leaves the rest of the fixture (products, subscriptions) out.
import { tokens } from "../../fixtures/demo.json";

/**
 * The demo fixture's first token (fixtures/demo.json, `tokens[0]`, every ability on the demo store), which
 * `npm run dev` and the end-to-end tests load. The reference page pre-fills it with `DEV_FIXTURES=on` only.
 */
export const demoToken: string = tokens[0]?.token ?? "";
