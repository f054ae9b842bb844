import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      /** A D1 database without the migrations (see vitest.config.ts). */
      UNMIGRATED_DB: D1Database;
    }
  }
}
