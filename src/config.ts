import { z } from "zod";
import { maxSupportedEdge } from "./converter/contract";
import { ApiError } from "./http/errors";
import { log } from "./lib/log";

/**
 * Every configuration variable and secret, parsed and validated once per isolate (docs/api.md,
 * "Configuration states"; the variables: docs/development.md). The defaults live here and only here. A missing or malformed value is not fatal: it is
 * recorded, logged once, and only the routes that ask for it answer 503 naming it.
 */

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
  .transform((value) => value.replace(/\/+$/, ""));

/** `on` / `off`; empty or unset is `fallback`. */
const onOff = (fallback: "on" | "off") =>
  z
    .string()
    .trim()
    .default(fallback)
    .refine((value) => value === "on" || value === "off" || value === "", { message: 'must be "on" or "off"' })
    .transform((value) => (value === "" ? fallback : value) === "on");

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
    });

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
  }).transform((widths) => [...new Set(widths)].sort((x, y) => x - y));

const secret = z.string({ error: "is not set" }).min(1, { message: "is not set" });

/** Each variable's parser; the key is the variable's name in wrangler.toml or the secret's name. */
const settings = {
  DEV_FIXTURES: onOff("off"),
  UPLOAD_TTL_SECONDS: positiveInteger(900),
  PUT_LIMIT_PER_MINUTE: positiveInteger(20),
  COMPLETE_LIMIT_PER_MINUTE: positiveInteger(60),
  API_LIMIT_PER_MINUTE: positiveInteger(600),
  /** Wrong `STORE_MOVE_SECRET` bearers a client IP may send the operator's routes per minute (src/ops/routes.ts). */
  OPS_SECRET_LIMIT_PER_MINUTE: positiveInteger(10),
  DEFAULT_UPLOAD_LIMIT_BYTES: positiveInteger(100_000_000),
  /** The largest body one request may carry (Workers Free and Pro); larger uploads go in parts. */
  SINGLE_PUT_LIMIT_BYTES: wholeNumber(100_000_000, minPartBytes),
  PART_LIMIT_PER_MINUTE: positiveInteger(600),
  MULTIPART_MAX_HOURS: positiveInteger(24, maxMultipartHours),
  MAX_IMAGE_EDGE: positiveInteger(2560, maxSupportedEdge),
  IMAGE_WIDTHS: widthList([160, 320, 480, 640, 960, 1280, 1920]),
  TOKEN_CACHE_SECONDS: nonNegativeInteger(30),
  /** How long an isolate answers a repeated product read or cross-sell list from memory (src/http/read-cache.ts); 0: never. */
  READ_CACHE_MS: wholeNumber(1000, 0, 60_000),
  PLATFORM_API_URL: optionalUrl,
  MEDIA_BASE_URL: optionalUrl,
  CORS_ORIGINS: z
    .string()
    .default("")
    .transform((value) =>
      value
        .split(",")
        .map((origin) => origin.trim())
        .filter(Boolean),
    ),
  WEBHOOK_ALLOW_HTTP: onOff("off"),
  /** The Standard Webhooks schedule: the delay before each retry, in seconds. */
  WEBHOOK_RETRY_SCHEDULE: secondsList([5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]),
  WEBHOOK_TIMEOUT_MS: positiveInteger(15_000, 120_000),
  WEBHOOK_SECRET_OVERLAP_SECONDS: nonNegativeInteger(86_400),
  WEBHOOK_RETENTION_DAYS: positiveInteger(30, 3650),
  /** How long a write's answer is kept for a retry with the same `Idempotency-Key` (src/http/idempotency.ts). */
  IDEMPOTENCY_TTL_SECONDS: positiveInteger(86_400, 30 * 86_400),
  FILE_SIGNING_SECRET: secret,
  PLATFORM_API_SECRET: secret,
  /** The bearer of the operator's routes (`/api/v1/_ops`, `npm run store:move -- --url`); unset: no such routes. */
  STORE_MOVE_SECRET: z.string().trim().default(""),
} as const;

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
