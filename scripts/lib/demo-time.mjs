// Time in the demo fixture (scripts/make-demo-fixture.mjs): a fixed "now" and billing-period arithmetic.

/** Fixed "now" of the demo world; subscription dates are placed relative to it (never Date.now()). */
export const NOW = Date.parse("2026-11-01T12:00:00Z");
/** First and last possible subscription creation time. */
export const SUBSCRIPTIONS_FROM = Date.parse("2025-01-01T00:00:00Z");
export const SUBSCRIPTIONS_UNTIL = Date.parse("2026-10-31T23:59:59Z");

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** RFC 3339 in UTC at whole seconds, e.g. 2026-03-01T10:00:00Z (the form the fixture docs use). */
export function iso(ms) {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/**
 * Adds billing intervals the way payment providers do: a month after 31 January is the last day of
 * February, not 3 March as plain Date overflow would give.
 */
export function addInterval(ms, interval, count) {
  if (interval === "day") return ms + count * DAY;
  if (interval === "week") return ms + count * 7 * DAY;
  const date = new Date(ms);
  const months = interval === "year" ? 12 * count : count;
  const target = date.getUTCMonth() + months;
  const year = date.getUTCFullYear() + Math.floor(target / 12);
  const month = ((target % 12) + 12) % 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(
    year,
    month,
    Math.min(date.getUTCDate(), lastDay),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
  );
}

/** The end of the billing period that contains `at`, for a subscription started at `start`. */
export function periodEndContaining(start, at, interval, count) {
  let end = addInterval(start, interval, count);
  for (let n = 2; end <= at; n++) end = addInterval(start, interval, count * n);
  return end;
}

/** The last renewal boundary at or before `at` (the start of the current period). */
export function periodStartContaining(start, at, interval, count) {
  let begin = start;
  for (let n = 1; addInterval(start, interval, count * n) <= at; n++) begin = addInterval(start, interval, count * n);
  return begin;
}
