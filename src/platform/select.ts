import { devFixturesEnabled, setting } from "../config";
import type { Database } from "../db/client";
import { HttpProjectPlatform, type ProjectPlatform, UnconfiguredPlatform } from "./client";
import { FakeProjectPlatform } from "./fake";

/** The platform this deployment talks to: the HTTP service, the development fake, or none configured. */
export function projectPlatform(env: Env, db: Database): ProjectPlatform {
  const baseUrl = setting(env, "PLATFORM_API_URL");
  if (baseUrl) return new HttpProjectPlatform({ baseUrl, secret: setting(env, "PLATFORM_API_SECRET") });
  if (devFixturesEnabled(env)) return new FakeProjectPlatform(db);
  return new UnconfiguredPlatform();
}
