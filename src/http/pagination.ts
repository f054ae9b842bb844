import { z } from "@hono/zod-openapi";

/**
 * An optional positive-integer query parameter: empty is the same as absent (docs/api.md, "Lists");
 * anything else must be a plain decimal integer within `min..max`.
 */
export function integerQuery(options: { name: string; min: number; max?: number; fallback: number }) {
  const max = options.max ?? Number.MAX_SAFE_INTEGER;
  const message =
    options.max === undefined
      ? `The ${options.name} must be an integer of at least ${options.min}.`
      : `The ${options.name} must be an integer between ${options.min} and ${options.max}.`;
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === "") return options.fallback;
      const parsed = /^\d{1,16}$/.test(value) ? Number(value) : Number.NaN;
      if (!Number.isSafeInteger(parsed) || parsed < options.min || parsed > max) {
        ctx.addIssue({ code: "custom", message });
        return z.NEVER;
      }
      return parsed;
    })
    .openapi({
      type: "integer",
      minimum: options.min,
      ...(options.max ? { maximum: options.max } : {}),
      default: options.fallback,
    });
}

/** The Pagination object of the specification. */
export const Pagination = z
  .object({
    current_page: z.number().int(),
    total_pages: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
  })
  .openapi("Pagination");
export type Pagination = z.infer<typeof Pagination>;

/** The pagination object of a page; `minimumPages` is 1 for cross-sells and 0 for subscriptions. */
export function pagination(page: number, perPage: number, total: number, minimumPages: 0 | 1): Pagination {
  return {
    current_page: page,
    total_pages: Math.max(minimumPages, Math.ceil(total / perPage)),
    per_page: perPage,
    total,
  };
}
