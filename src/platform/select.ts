import type { Database } from "../db/client";
import { devFixturesEnabled } from "../dev/routes";
import { HttpProjectPlatform, type ProjectPlatform, UnconfiguredPlatform } from "./client";
import { FakeProjectPlatform } from "./fake";

/** The platform this deployment talks to: the HTTP service, the development fake, or none configured. */
export function projectPlatform(env: Env, db: Database): ProjectPlatform {
  if (env.PLATFORM_API_URL) {
    return new HttpProjectPlatform({ baseUrl: env.PLATFORM_API_URL, secret: env.PLATFORM_API_SECRET ?? "" });
  }
  if (devFixturesEnabled(env)) return new FakeProjectPlatform(db);
  return new UnconfiguredPlatform();
}
