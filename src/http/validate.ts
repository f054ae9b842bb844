import type { MiddlewareHandler } from "hono";
import type { ZodType, z } from "zod";
import type { AppEnv } from "../env";
import { ApiError, type FieldErrors, messages, validationError } from "./errors";

/** Turns zod issues into the specification's `errors` object: dotted field path → messages. */
export function fieldErrors(issues: readonly z.core.$ZodIssue[]): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of issues) {
    const field = issue.path.map(String).join(".") || "body";
    const list = errors[field] ?? [];
    list.push(issue.message);
    errors[field] = list;
  }
  return errors;
}

/** A validator's result as both validators hand it to their hook (the OpenAPI router's and `@hono/zod-validator`). */
type ValidationResult = { target: string } & (
  | { success: true }
  | { success: false; error: { issues: readonly z.core.$ZodIssue[] } }
);

/**
 * The validation hook of every route (the OpenAPI router's default, and the /_dev routes' `zValidator`):
 * path parameters fail with their 400 message, a JSON body that is not an object is malformed (400),
 * anything else is a 422 with `errors`.
 */
export function validationHook(result: ValidationResult): void {
  if (result.success) return;
  throw toApiError(result.target, result.error.issues);
}

function toApiError(target: string, issues: readonly z.core.$ZodIssue[]): ApiError {
  if (target === "param") return new ApiError(400, issues[0]?.message ?? messages.notFound);
  if (target === "json" && issues.some((issue) => issue.path.length === 0)) {
    return new ApiError(400, messages.malformedJson);
  }
  return validationError(fieldErrors(issues));
}

/**
 * Validates path parameters before anything else the route reads, because docs/api.md ("The general
 * order of checks") reports a malformed path id before query and body problems (the OpenAPI router validates query first).
 */
export function paramsFirst(schema: ZodType): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const result = await schema.safeParseAsync(c.req.param());
    if (!result.success) throw toApiError("param", result.error.issues);
    await next();
  };
}
