import { z } from "@hono/zod-openapi";
import { ApiError } from "../http/errors";
import { parseUuid } from "../lib/ids";
import { foldCase, type SubscriptionStatus, subscriptionStatuses } from "./resource";

/*
 * Query parsing of GET /subscriptions. Unlike the other lists, an unparseable value here is a 400
 * `Invalid value for '<field>': '<value>'` (docs/api.md, "List subscriptions", rule 3), reported for one
 * field only: the first failing one in `queryFields` order.
 *
 * Rules shared by every parameter:
 * - an omitted or empty parameter (`?status=`) means "no filter" / the default (docs/api.md, "Lists");
 * - a repeated parameter is read by its first occurrence and later ones are ignored, whatever they hold
 *   (`?status=active&status=nope` lists active subscriptions; `?status=&status=active` lists all);
 * - values are taken as received (after URL decoding), without trimming, except `query`.
 */

/** The message of the 400 for an unparseable value. */
export function invalidValue(field: string, value: string): string {
  return `Invalid value for '${field}': '${value}'`;
}

const defaultPerPage = 10;
const maxPerPage = 100;
const sortValues = ["-created_at", "created_at"] as const;
type SortOrder = (typeof sortValues)[number];

const dayMs = 86_400_000;

/** An inclusive range of UTC days as `[from, until)` instants; either end may be open. */
export type TimeRange = { from?: Date; until?: Date };

/** The free-text `query`: an exact (case-insensitive) e-mail, or a folded part of a name. */
export type Search = { kind: "email"; key: string } | { kind: "text"; needle: string };

/** Everything the list query needs, parsed. Absent keys mean no filter. */
export type SubscriptionListRequest = {
  page: number;
  perPage: number;
  sort: SortOrder;
  status?: SubscriptionStatus;
  customerId?: string;
  productId?: string;
  variantId?: string;
  created?: TimeRange;
  canceled?: TimeRange;
  currentPeriodEnd?: TimeRange;
  search?: Search;
};

const integerPattern = /^\d{1,16}$/;
const datePattern = /^(\d{4})-(\d{2})-(\d{2})$/;
/**
 * A deliberately plain e-mail shape: something without spaces, `@`, then dotted domain labels ending in a
 * top-level domain of letters (any script, or punycode). "jan@kowalski" or "kowalski@" are not addresses,
 * so they stay free text.
 */
const emailPattern =
  /^[^\s@"]{1,64}@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)+(?:\p{L}{2,63}|xn--[a-z0-9-]{1,59})$/iu;
const maxEmailLength = 254;

/** Start of a `YYYY-MM-DD` UTC day, or undefined for a malformed or impossible date (`2026-02-30`). */
export function parseUtcDay(value: string): Date | undefined {
  const match = datePattern.exec(value);
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const start = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not move the years 0..99 into the 1900s.
  start.setUTCFullYear(year, month - 1, day);
  const roundTrips = start.getUTCFullYear() === year && start.getUTCMonth() === month - 1 && start.getUTCDate() === day;
  return roundTrips ? start : undefined;
}

function parseInteger(value: string, min: number, max: number): number | undefined {
  if (!integerPattern.test(value)) return undefined;
  const parsed = Number(value);
  return Number.isSafeInteger(parsed) && parsed >= min && parsed <= max ? parsed : undefined;
}

/**
 * How `query` is matched: a valid e-mail address exactly, anything else as part of a name; null (no
 * filter) for blank text. Never undefined, because `query` is never rejected.
 */
export function parseSearch(value: string): Search | null {
  const text = value.trim();
  if (text === "") return null;
  if (text.length <= maxEmailLength && emailPattern.test(text)) {
    // The same lowering the loader applies to `customer_email_key`.
    return { kind: "email", key: text.toLowerCase() };
  }
  return { kind: "text", needle: foldCase(text) };
}

/**
 * One query parameter: the first occurrence, empty taken as absent, then `parse`; a value `parse`
 * rejects becomes the field's 400 message. Filters carry no `example`: the reference page's "Test Request"
 * sends every example it finds, and the filters' together matched nothing in the demo data.
 */
function queryParam<T>(
  name: string,
  parse: (value: string) => T | undefined,
  doc: { description: string; schema?: Record<string, unknown> },
) {
  return z
    .union([z.string(), z.array(z.string())])
    .optional()
    .transform((raw, ctx): T | undefined => {
      const value = Array.isArray(raw) ? raw[0] : raw;
      if (value === undefined || value === "") return undefined;
      const parsed = parse(value);
      if (parsed === undefined) {
        ctx.addIssue({ code: "custom", message: invalidValue(name, value) });
        return z.NEVER;
      }
      return parsed;
    })
    .openapi({
      param: { name, in: "query", required: false },
      type: "string",
      description: `${doc.description} Empty means absent; when repeated, the first occurrence is used.`,
      ...doc.schema,
    });
}

function idParam(name: string, description: string) {
  return queryParam(name, parseUuid, {
    description,
    schema: { format: "uuid" },
  });
}

function dayParam(name: string, description: string) {
  return queryParam(name, parseUtcDay, { description, schema: { format: "date" } });
}

/** The documented and validated query of GET /subscriptions, in the order its failures are reported. */
export const SubscriptionListQuery = z.object({
  page: queryParam("page", (value) => parseInteger(value, 1, Number.MAX_SAFE_INTEGER), {
    description: "Page number, an integer of at least 1 (default 1). A page past the last returns no items.",
    schema: { type: "integer", minimum: 1, default: 1 },
  }),
  per_page: queryParam("per_page", (value) => parseInteger(value, 1, maxPerPage), {
    description: `Page size, an integer from 1 to ${maxPerPage} (default ${defaultPerPage}).`,
    schema: { type: "integer", minimum: 1, maximum: maxPerPage, default: defaultPerPage },
  }),
  sort: queryParam("sort", (value) => sortValues.find((sort) => sort === value), {
    description:
      "`-created_at` (default, newest first) or `created_at` (oldest first); ties are ordered by id the same way, so pages never repeat or skip a subscription.",
    schema: { enum: [...sortValues], default: "-created_at" },
  }),
  status: queryParam("status", (value) => subscriptionStatuses.find((status) => status === value), {
    description: "Only subscriptions in this state.",
    schema: { enum: [...subscriptionStatuses] },
  }),
  customer: idParam("customer", "Only subscriptions of this customer (account holder) id."),
  product: idParam("product", "Only subscriptions of this product id."),
  variant: idParam("variant", "Only subscriptions of this variant (price) id."),
  created_from: dayParam("created_from", "Created on or after this UTC day (`YYYY-MM-DD`)."),
  created_to: dayParam("created_to", "Created on or before this UTC day, the whole day included (`YYYY-MM-DD`)."),
  canceled_from: dayParam("canceled_from", "Cancellation requested on or after this UTC day (`YYYY-MM-DD`)."),
  canceled_to: dayParam("canceled_to", "Cancellation requested on or before this UTC day, inclusive (`YYYY-MM-DD`)."),
  current_period_end_from: dayParam(
    "current_period_end_from",
    "Current period ends on or after this UTC day (`YYYY-MM-DD`).",
  ),
  current_period_end_to: dayParam(
    "current_period_end_to",
    "Current period ends on or before this UTC day, inclusive (`YYYY-MM-DD`).",
  ),
  query: queryParam("query", parseSearch, {
    description:
      "A valid e-mail address matches the customer e-mail exactly, ignoring case; any other text matches part of the customer, product or variant name, ignoring case in every script, with `%` and `_` taken literally. Surrounding spaces are ignored; never rejected.",
  }),
});
type ParsedQuery = z.output<typeof SubscriptionListQuery>;

/** Query fields in the order a failure is reported when several are unparseable. */
const queryFields = Object.keys(SubscriptionListQuery.shape);

function dayRange(from: Date | undefined, to: Date | undefined): TimeRange | undefined {
  if (!from && !to) return undefined;
  // `_to` names a whole UTC day: everything before the start of the next day.
  return { from, until: to ? new Date(to.getTime() + dayMs) : undefined };
}

/** The validated query as the list request the SQL is built from. */
export function listRequest(query: ParsedQuery): SubscriptionListRequest {
  const request: SubscriptionListRequest = {
    page: query.page ?? 1,
    perPage: query.per_page ?? defaultPerPage,
    sort: query.sort ?? "-created_at",
    status: query.status,
    customerId: query.customer,
    productId: query.product,
    variantId: query.variant,
    created: dayRange(query.created_from, query.created_to),
    canceled: dayRange(query.canceled_from, query.canceled_to),
    currentPeriodEnd: dayRange(query.current_period_end_from, query.current_period_end_to),
    search: query.query ?? undefined,
  };
  // Absent filters are left out rather than set to undefined, so the request reads (and logs) cleanly.
  for (const key of Object.keys(request) as (keyof SubscriptionListRequest)[]) {
    if (request[key] === undefined) delete request[key];
  }
  return request;
}

/**
 * The validation hook of the list: the first unparseable field, in `queryFields` order, answers 400
 * with its message. Zod reports issues in shape order already; sorting keeps that a stated rule.
 */
export function subscriptionQueryHook(result: { success: true } | { success: false; error: z.ZodError }): undefined {
  if (result.success) return;
  const rank = (path: readonly PropertyKey[]) => {
    const index = queryFields.indexOf(String(path[0]));
    return index === -1 ? queryFields.length : index;
  };
  const [first] = [...result.error.issues].sort((a, b) => rank(a.path) - rank(b.path));
  // Hono hands the validator strings or arrays of strings only, so every issue is one of ours.
  throw new ApiError(400, first?.message ?? "Invalid query.");
}
