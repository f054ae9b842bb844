// The subscriptions of the demo fixture (scripts/make-demo-fixture.mjs): statuses, and dates consistent with
// each status and billing interval.
import {
  addInterval,
  DAY,
  HOUR,
  iso,
  MINUTE,
  NOW,
  periodEndContaining,
  periodStartContaining,
  SUBSCRIPTIONS_FROM,
  SUBSCRIPTIONS_UNTIL,
} from "./demo-time.mjs";

export const STATUS_WEIGHTS = {
  active: 62,
  trialing: 7,
  past_due: 7,
  canceled: 14,
  incomplete: 4,
  incomplete_expired: 3,
  unpaid: 3,
};
export const STATUSES = Object.keys(STATUS_WEIGHTS);

function between(random, from, until) {
  return from + Math.floor(random.next() * (until - from));
}

/**
 * When a subscription in `status` can plausibly have been created: trials are at most 14 days old,
 * `incomplete` ones are younger than the provider's 23-hour payment window, and statuses that need a
 * failed renewal (past_due, unpaid) are at least one billing period old.
 */
function creationTime(random, status, plan) {
  const { interval, interval_count: count } = plan.recurring_options;
  if (status === "trialing") return between(random, NOW - 13 * DAY, SUBSCRIPTIONS_UNTIL);
  if (status === "incomplete") return between(random, NOW - 22 * HOUR, SUBSCRIPTIONS_UNTIL);
  if (status === "incomplete_expired") return between(random, SUBSCRIPTIONS_FROM, NOW - 2 * DAY);
  if (status === "past_due" || status === "unpaid") {
    return between(random, SUBSCRIPTIONS_FROM, addInterval(NOW, interval, -count) - 3 * DAY);
  }
  if (status === "canceled") return between(random, SUBSCRIPTIONS_FROM, NOW - 20 * DAY);
  return between(random, SUBSCRIPTIONS_FROM, SUBSCRIPTIONS_UNTIL);
}

/** current_period_end, cancel_at and canceled_at consistent with the status and creation time. */
function timeline(random, status, created, plan) {
  const { interval, interval_count: count } = plan.recurring_options;
  const nextRenewal = periodEndContaining(created, NOW, interval, count);
  switch (status) {
    case "trialing":
      return { current_period_end: created + plan.trial_period_days * DAY, cancel_at: null, canceled_at: null };
    case "active": {
      // About one in ten active members has asked to leave at the end of the paid period.
      if (!random.chance(0.1)) return { current_period_end: nextRenewal, cancel_at: null, canceled_at: null };
      // Asked during the current period (creation is at least 12 hours before NOW, so this stays in the past).
      const periodStart = periodStartContaining(created, NOW, interval, count);
      const canceledAt = between(random, Math.min(periodStart + HOUR, NOW - MINUTE), NOW);
      return { current_period_end: nextRenewal, cancel_at: nextRenewal, canceled_at: canceledAt };
    }
    case "past_due":
      // The renewal already opened a new period whose invoice is failing.
      return { current_period_end: nextRenewal, cancel_at: null, canceled_at: null };
    case "unpaid":
      // Retries are exhausted; the period stopped at the renewal that was never paid.
      return {
        current_period_end: periodStartContaining(created, NOW, interval, count),
        cancel_at: null,
        canceled_at: null,
      };
    case "incomplete":
    case "incomplete_expired":
      return { current_period_end: addInterval(created, interval, count), cancel_at: null, canceled_at: null };
    case "canceled": {
      const canceledAt = between(random, created + DAY, NOW - 10 * DAY);
      const periodEnd = periodEndContaining(created, canceledAt, interval, count);
      // Either it ran to the end of the paid period, or (when that is still ahead) it ended at once.
      const endsAtPeriodEnd = periodEnd <= NOW && random.chance(0.65);
      const cancelAt = endsAtPeriodEnd ? periodEnd : canceledAt;
      return { current_period_end: periodEnd, cancel_at: cancelAt, canceled_at: canceledAt };
    }
    default:
      throw new Error(`unknown status ${status}`);
  }
}

/** Payment-provider subscription ids ("sub_" + 14 alphanumerics), unique across the document. */
export function remoteIdFactory(random) {
  const seen = new Set();
  return () => {
    let id;
    do id = `sub_${random.alphanumeric(14)}`;
    while (seen.has(id));
    seen.add(id);
    return id;
  };
}

/**
 * `count` subscriptions of one store. `plans` are {product, variant, weight}. The first subscriptions
 * take each status of `statusWeights` once (so every status exists whatever the dice say) and each
 * featured customer once.
 */
export function buildSubscriptions(
  random,
  { storeId, count, plans, customers, featuredCount, statusWeights, nextRemoteId },
) {
  const subscriptions = [];
  const createdBefore = [];
  const everyStatus = Object.keys(statusWeights);
  for (let i = 0; i < count; i++) {
    const status = i < everyStatus.length ? everyStatus[i] : random.weighted(statusWeights);
    // Trials exist only on variants that offer one.
    const eligible = plans.filter((plan) => status !== "trialing" || plan.variant.trial_period_days);
    const plan = eligible[Number(random.weighted(Object.fromEntries(eligible.map((p, index) => [index, p.weight]))))];
    const variant = plan.variant;
    const customer = i < featuredCount ? customers[i] : random.pick(customers);

    let created = creationTime(random, status, variant);
    // Some checkouts land in the same second (bulk imports, retries): keyset pagination must cope.
    if (status === "active" && createdBefore.length > 0 && random.chance(0.04)) created = random.pick(createdBefore);
    if (status === "active") createdBefore.push(created);

    subscriptions.push({
      id: random.uuid(),
      store_id: storeId,
      customer_id: customer.id,
      customer_name: customer.name,
      customer_email: customer.email,
      product_id: plan.product.id,
      variant_id: variant.id,
      hidden_by_customer: random.chance(0.025),
      remote_id: nextRemoteId(),
      provider: "stripe",
      status,
      variant_name: variant.name,
      product_name: plan.product.name,
      recurring_amount: variant.amount,
      currency: variant.currency,
      interval: variant.recurring_options.interval,
      interval_count: variant.recurring_options.interval_count,
      quantity: random.chance(0.03) ? 2 : 1,
      ...mapTimes(timeline(random, status, created, variant)),
      created_at: iso(created),
    });
  }
  return subscriptions;
}

function mapTimes(times) {
  return Object.fromEntries(Object.entries(times).map(([key, value]) => [key, value === null ? null : iso(value)]));
}

export function planOf(products, productId, variantId, weight) {
  const product = products.find((candidate) => candidate.id === productId);
  const variant = product.variants.find((candidate) => candidate.id === variantId);
  return { product, variant, weight };
}
