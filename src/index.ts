import { createApp } from "./app";

export { RateLimiter } from "./limits/rate-limiter";
export { StoreCoordinator } from "./uploads/store-coordinator";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
