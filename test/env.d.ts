import type { D1Migration } from "cloudflare:test";

declare global {
  interface ImportMeta {
    /** Vite's import.meta.glob, as the tests use it (eager, one export of each matched module). */
    glob<T>(pattern: string, options: { query?: string; import?: string; eager: true }): Record<string, T>;
  }
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      /** A D1 database without the migrations (see vitest.config.ts). */
      UNMIGRATED_DB: D1Database;
    }
  }
}
