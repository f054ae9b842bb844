import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { homeBinding, homeNames } from "../../src/db/shards";

// Every test file starts from the schema the migrations define, exactly as `wrangler d1 migrations apply` builds
// it, on every database: the global DB and each shard (wrangler.toml binds two, SHARD_0 and SHARD_1).
for (const name of homeNames(env)) await applyD1Migrations(homeBinding(env, name), env.TEST_MIGRATIONS);
