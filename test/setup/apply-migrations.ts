import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Every test file starts from the schema the migrations define, exactly as `wrangler d1 migrations apply` builds it.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
