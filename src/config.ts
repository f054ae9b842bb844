import { z } from "zod";
import { maxSupportedEdge } from "./converter/contract";
import { ApiError } from "./http/errors";
import { log } from "./lib/log";

/**
 * Every configuration variable and secret, parsed and validated once per isolate (docs/api.md,
 * "Configuration states"). The defaults, the accepted values and the meanings live here and only here:
 * `scripts/config-docs.mjs` writes them into docs/configuration.md. A missing or malformed value is not
 * fatal: it is recorded, logged once, and only the routes that ask for it answer 503 naming it.
 */

/**
 * What the docs say of a setting beside its default (which is what its parser makes of no value):
 * docs/configuration.md its `accepted` values and `meaning`, docs/limits.md the `limit` it sets, if any.
 */
type SettingDocs = { accepted?: string; meaning?: string; limit?: string; secret?: boolean };
const documented = <T extends z.ZodType>(schema: T, docs: SettingDocs): T => schema.meta(docs);

/** A whole number from `min` to `max`; empty or unset is `fallback`. */
const wholeNumber = (fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .default("")
    .transform((value, context) => {
      if (value === "") return fallback;
      const parsed = Number(value);
      if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
        context.addIssue({
          code: "custom",
          message:
            min === 0 && max === Number.MAX_SAFE_INTEGER
              ? "must be a whole number of 0 or more"
              : `must be a whole number between ${min} and ${max === Number.MAX_SAFE_INTEGER ? "2^53" : max}`,
        });
        return z.NEVER;
      }
      return parsed;
    })
    .meta({
      accepted: max === Number.MAX_SAFE_INTEGER ? `a whole number, ${min} or more` : `a whole number, ${min} to ${max}`,
    });

const positiveInteger = (fallback: number, max?: number) => wholeNumber(fallback, 1, max);

/** R2's smallest part of a multipart upload (every part but the last): a body ceiling below it could not be split. */
const minPartBytes = 5 * 2 ** 20;

/**
 * R2 aborts a multipart upload left incomplete for 7 days (the default lifecycle rule of a bucket), so no
 * reservation may be kept alive longer than that.
 */
const maxMultipartHours = 7 * 24;
const nonNegativeInteger = (fallback: number) => wholeNumber(fallback, 0);

const optionalUrl = z
  .string()
  .trim()
  .default("")
  .refine((value) => value === "" || URL.canParse(value), { message: "must be an absolute URL or empty" })
  .transform((value) => value.replace(/\/+$/, ""))
  .meta({ accepted: "an absolute URL, or empty" });

/** `on` / `off`; empty or unset is `fallback`. */
const onOff = (fallback: "on" | "off") =>
  z
    .string()
    .trim()
    .default(fallback)
    .refine((value) => value === "on" || value === "off" || value === "", { message: 'must be "on" or "off"' })
    .transform((value) => (value === "" ? fallback : value) === "on")
    .meta({ accepted: "`on` or `off`" });

/**
 * A comma-separated list of whole numbers from `min` to `max` (at least one), in the order given; empty or unset
 * is `fallback`. `unit` names them in the message ("whole seconds up to 86400").
 */
const wholeNumberList = (fallback: number[], { min, max, unit }: { min: number; max: number; unit: string }) =>
  z
    .string()
    .trim()
    .default("")
    .transform((value, context) => {
      if (value === "") return fallback;
      const items = value.split(",").map((item) => item.trim());
      if (items.some((item) => !/^\d{1,6}$/.test(item) || Number(item) < min || Number(item) > max)) {
        context.addIssue({ code: "custom", message: `must be a comma-separated list of ${unit}` });
        return z.NEVER;
      }
      return items.map(Number);
    })
    .meta({ accepted: `a comma-separated list of ${unit}` });

/** Seconds before each retry (each 0 to a day). */
const secondsList = (fallback: number[]) =>
  wholeNumberList(fallback, { min: 0, max: 86_400, unit: "whole seconds up to 86400" });

/**
 * The widths a converted image is served at with `?width=`: whole numbers from 1 to the largest edge the
 * conversion supports, kept sorted and without repeats.
 */
const widthList = (fallback: number[]) =>
  wholeNumberList(fallback, {
    min: 1,
    max: maxSupportedEdge,
    unit: `whole numbers between 1 and ${maxSupportedEdge}`,
  })
    .transform((widths) => [...new Set(widths)].sort((x, y) => x - y))
    .meta({ accepted: `a comma-separated list of whole numbers between 1 and ${maxSupportedEdge}` });

const secret = z
  .string({ error: "is not set" })
  .min(1, { message: "is not set" })
  .meta({ secret: true, accepted: "any text but empty" });

/**
 * Each variable's parser with its meaning (Markdown, links relative to docs/); the key is the variable's name
 * in wrangler.toml or the secret's name, in the order docs/configuration.md lists them.
 */
const settings = {
  DEV_FIXTURES: documented(onOff("off"), {
    meaning:
      '`on` enables every `/api/v1/_dev/...` route (the fixture loader, the upload page, the fake platform: [development.md](development.md)); otherwise they answer 404 like any unknown route. It also pre-fills the demo token in the reference page\'s "Test Request". `npm run deploy` refuses `on`',
  }),
  UPLOAD_TTL_SECONDS: documented(positiveInteger(900), {
    limit: "an upload reservation, after prepare or its last stored part (seconds)",
    meaning:
      "how long an upload reservation lasts after prepare; a multipart one, after its last stored part ([uploads.md](uploads.md#expiry))",
  }),
  PUT_LIMIT_PER_MINUTE: documented(positiveInteger(20), {
    limit: "byte PUTs per client IP per minute",
    meaning:
      "byte PUTs per client IP per 60 s, and part PUTs that name no upload of their token ([limits.md](limits.md))",
  }),
  COMPLETE_LIMIT_PER_MINUTE: documented(positiveInteger(60), {
    limit: "completes per store per minute",
    meaning: "completes per store per 60 s",
  }),
  API_LIMIT_PER_MINUTE: documented(positiveInteger(600), {
    limit: "bearer calls per token per minute (the general limit)",
    meaning: "the general limit: bearer calls per token per 60 s ([limits.md](limits.md#request-rates))",
  }),
  OPS_SECRET_LIMIT_PER_MINUTE: documented(positiveInteger(10), {
    limit: "wrong operator secrets per client IP per minute",
    meaning:
      "wrong `STORE_MOVE_SECRET` bearers per client IP per 60 s to the operator's routes (`/api/v1/_ops`, src/ops/routes.ts); past it every call of the IP answers 429, the right secret's too, until the window ends. The right secret does not count",
  }),
  DEFAULT_UPLOAD_LIMIT_BYTES: documented(positiveInteger(100_000_000), {
    limit: "a store's upload limit, when the store sets none (bytes)",
    meaning: "a store's upload limit when the store sets none",
  }),
  SINGLE_PUT_LIMIT_BYTES: documented(wholeNumber(100_000_000, minPartBytes), {
    limit: "one request body: a larger upload goes in parts (bytes)",
    meaning:
      "the largest body of one request (Workers Free and Pro): a larger upload goes in parts, and no part is larger. At least R2's smallest part ([uploads.md](uploads.md#how-parts-are-cut))",
  }),
  PART_LIMIT_PER_MINUTE: documented(positiveInteger(600), {
    limit: "part PUTs per client IP per minute",
    meaning:
      "part PUTs per client IP per 60 s (they do not count toward `PUT_LIMIT_PER_MINUTE`; [uploads.md](uploads.md#limits-and-token-guessing))",
  }),
  MULTIPART_MAX_HOURS: documented(positiveInteger(24, maxMultipartHours), {
    limit: "a multipart reservation, however many parts extend it (hours after prepare)",
    meaning:
      "a multipart reservation, extended by each stored part, never lasts longer than this after prepare (at most 7 days: R2 aborts an incomplete multipart upload then)",
  }),
  MAX_IMAGE_EDGE: documented(positiveInteger(2560, maxSupportedEdge), {
    limit: "a converted image's long edge (pixels)",
    meaning:
      "converted images are scaled down to this long edge, in pixels (at most what the converter's memory holds: [conversion.md](conversion.md))",
  }),
  IMAGE_WIDTHS: documented(widthList([160, 320, 480, 640, 960, 1280, 1920]), {
    limit: "the widths served with `?width=` (pixels)",
    meaning:
      "the widths a converted image is served at with `?width=`, and listed in `srcset` ([responsive-images.md](responsive-images.md))",
  }),
  TOKEN_CACHE_SECONDS: documented(nonNegativeInteger(30), {
    limit: "a verified token trusted by an isolate, so a revocation's delay (seconds)",
    meaning:
      "how long an isolate trusts a verified token, so how long a revocation may take; `0` reads D1 on every call ([latency.md](latency.md#the-token-cache-and-the-leased-general-limit))",
  }),
  READ_CACHE_MS: documented(wholeNumber(1000, 0, 60_000), {
    limit: "a read answered again from an isolate's memory (milliseconds)",
    meaning:
      "how long an isolate answers a repeated live product read or cross-sell list from memory (src/http/read-cache.ts); `0`: never. A request with `X-D1-Bookmark` always reads D1 ([latency.md](latency.md#read-answers-kept-for-a-second))",
  }),
  PLATFORM_API_URL: documented(optionalUrl, {
    meaning:
      "the external project platform publish calls; empty with `DEV_FIXTURES=on` uses the built-in fake ([platform-api.md](platform-api.md#configurations))",
  }),
  MEDIA_BASE_URL: documented(optionalUrl, { meaning: "the base of public media URLs; empty means `{origin}/media`" }),
  CORS_ORIGINS: documented(
    z
      .string()
      .default("")
      .transform((value) =>
        value
          .split(",")
          .map((origin) => origin.trim())
          .filter(Boolean),
      ),
    {
      accepted: "a comma-separated list of origins",
      meaning: "the origins allowed to call bearer routes from a browser",
    },
  ),
  WEBHOOK_ALLOW_HTTP: documented(onOff("off"), {
    meaning:
      "`on` also delivers events to plain `http:` URLs and to local hosts (127.0.0.1, private networks; [events.md](events.md#where-events-go)): `npm run dev` sets it for its local receiver",
  }),
  WEBHOOK_RETRY_SCHEDULE: documented(secondsList([5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]), {
    limit: "the waits before an event's retries (seconds)",
    meaning:
      "the seconds before each retry of an event (the Standard Webhooks schedule); after the last the event is `failed` ([events.md](events.md#delivery-and-retries))",
  }),
  WEBHOOK_TIMEOUT_MS: documented(positiveInteger(15_000, 120_000), {
    limit: "one delivery attempt (milliseconds)",
    meaning: "one delivery attempt's timeout",
  }),
  WEBHOOK_SECRET_OVERLAP_SECONDS: documented(nonNegativeInteger(86_400), {
    limit: "the old webhook secret still signing after a rotation (seconds)",
    meaning: "how long the old secret still signs, beside the new one, after a rotation",
  }),
  WEBHOOK_RETENTION_DAYS: documented(positiveInteger(30, 3650), {
    limit: "an event in the event log (days)",
    meaning: "how long events stay in the event log",
  }),
  IDEMPOTENCY_TTL_SECONDS: documented(positiveInteger(86_400, 30 * 86_400), {
    limit: "a write's answer kept for its `Idempotency-Key` (seconds)",
    meaning:
      "how long a write's answer is kept for a retry with the same `Idempotency-Key` (src/http/idempotency.ts; [api.md](api.md#idempotency-key))",
  }),
  FILE_SIGNING_SECRET: documented(secret, {
    meaning:
      "the HMAC key of signed links to private files (a new one invalidates the links handed out); unset, product reads answer `download_url` null and `/files/...` answers 503",
  }),
  PLATFORM_API_SECRET: documented(secret, {
    meaning:
      "the bearer secret sent to `PLATFORM_API_URL` ([platform-api.md](platform-api.md)); unused while that is empty",
  }),
  STORE_MOVE_SECRET: documented(z.string().trim().default(""), {
    secret: true,
    accepted: "any text, or unset",
    meaning:
      "the bearer of the operator's routes (`/api/v1/_ops`, `npm run store:move -- --url`: [scaling.md](scaling.md#moving-a-store-under-traffic)); unset, they answer 404 like an unknown route",
  }),
} as const;

/** Every setting's parser, for scripts/config-docs.mjs (the table of docs/configuration.md). */
export const settingParsers: Record<SettingName, z.ZodType> = settings;

export type SettingName = keyof typeof settings;
type Settings = { [K in SettingName]: z.output<(typeof settings)[K]> };

/** The parsed configuration: each value, or why it could not be read. */
type Config = {
  [K in SettingName]: { ok: true; value: Settings[K] } | { ok: false; problem: string };
};

const parsed = new WeakMap<object, Config>();

/** The configuration of this environment, parsed once per isolate (per env object) and logged once if faulty. */
export function readConfig(env: Env): Config {
  const known = parsed.get(env);
  if (known) return known;
  const raw = env as unknown as Record<string, unknown>;
  const config = {} as Record<SettingName, Config[SettingName]>;
  for (const name of Object.keys(settings) as SettingName[]) {
    const value = raw[name];
    const result = settings[name].safeParse(
      typeof value === "string" ? value : value === undefined ? undefined : String(value),
    );
    if (result.success) {
      config[name] = { ok: true, value: result.data } as Config[SettingName];
    } else {
      const problem = `${name} ${result.error.issues[0]?.message ?? "is malformed"}${value === undefined || value === "" ? "" : ` (it is "${String(value)}")`}`;
      config[name] = { ok: false, problem };
    }
  }
  parsed.set(env, config as Config);
  return config as Config;
}

const reported = new Set<string>();

/**
 * The value of `name`; a missing or malformed one answers 503 naming it, so only the routes that need it
 * fail, and is logged once per isolate (a secret a deployment does not use, such as the platform's without
 * a platform, is never reported).
 */
export function setting<K extends SettingName>(env: Env, name: K): Settings[K] {
  const entry = readConfig(env)[name];
  if (!entry.ok) {
    if (!reported.has(entry.problem)) {
      reported.add(entry.problem);
      log.error("configuration problem", { problem: entry.problem });
    }
    throw new ApiError(503, `The service is not configured correctly: ${entry.problem}.`);
  }
  return entry.value as Settings[K];
}

/** The value of `name`, or null when it is missing or malformed (for features that work without it). */
export function optionalSetting<K extends SettingName>(env: Env, name: K): Settings[K] | null {
  const entry = readConfig(env)[name];
  return entry.ok ? (entry.value as Settings[K]) : null;
}

/** Whether the development routes and the fake platform are switched on (`DEV_FIXTURES=on`); off when malformed. */
export function devFixturesEnabled(env: Env): boolean {
  return optionalSetting(env, "DEV_FIXTURES") ?? false;
}
