// The webhook events of the demo fixture (scripts/make-demo-fixture.mjs): what the demo store's products
// already sent to their webhook_url, delivered, failed and one still retrying, with every attempt, so the
// event log has something to show before anything is published.
//
// Their times are ages before the load (`age_seconds`), not dates: the log hides events older than
// WEBHOOK_RETENTION_DAYS (30), and the demo is loaded anew on every `npm run dev`. Each attempt is timed from
// the event's creation, on the service's default retry schedule.
import { DEMO_WEBHOOK_URL, PRODUCT_IDS, STORE_ID, VARIANT_IDS } from "./demo-ids.mjs";
import { DAY, HOUR } from "./demo-time.mjs";

/** WEBHOOK_RETRY_SCHEDULE's default: seconds before each retry. */
const RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400];
/** WEBHOOK_TIMEOUT_MS's default, as an attempt that timed out logs it. */
const TIMEOUT_MS = 15000;

const SECOND = 1000;

/** One attempt-log line: an answer's status, or no answer (`status` null) and why. */
function attempt(afterSeconds, status, durationMs) {
  return {
    after_seconds: afterSeconds,
    response_status: status,
    error: status === null ? `timed out after ${TIMEOUT_MS} ms` : null,
    duration_ms: durationMs,
  };
}

/** When each attempt starts, from the event's creation: the first at once, then after each delay in turn. */
function scheduleOffsets(attempts) {
  const offsets = [0];
  for (const delay of RETRY_SCHEDULE.slice(0, attempts - 1)) offsets.push(offsets.at(-1) + delay);
  return offsets;
}

/**
 * An event of the demo store to the demo receiver; `data` left out for a publish (its body is the live
 * product), `nextAttempt` (seconds from the creation) only for a pending one.
 */
function demoEvent(random, { productId, type, status, ageMs, data, attempts, nextAttempt }) {
  return {
    id: `evt_${random.uuid()}`,
    store_id: STORE_ID,
    product_id: productId,
    type,
    url: DEMO_WEBHOOK_URL,
    status,
    age_seconds: ageMs / SECOND,
    ...(data ? { data } : {}),
    attempt_log: attempts,
    ...(nextAttempt === undefined ? {} : { next_attempt_after_seconds: nextAttempt }),
  };
}

/** The `data` of a live custom-field delete (docs/events.md). */
function fieldDeleted(productId, list, name, variantId = null) {
  return { store_id: STORE_ID, product_id: productId, variant_id: variantId, list, name };
}

/** A publish whose receiver failed every attempt of the whole schedule (answers 5xx, one timeout): failed. */
function exhaustedPublish(random) {
  const statuses = [500, 500, 502, 502, null, 503, 502, 502, 500, 500];
  const offsets = scheduleOffsets(statuses.length);
  return demoEvent(random, {
    productId: PRODUCT_IDS.budgetEbook,
    type: "product.published",
    status: "failed",
    ageMs: 4 * DAY,
    attempts: statuses.map((status, i) => attempt(offsets[i], status, status === null ? TIMEOUT_MS + 4 : 180 + 37 * i)),
  });
}

/**
 * A publish an hour ago whose receiver keeps answering 5xx: pending, its next retry (the schedule's fourth
 * delay) well after any load. The reference page's Test Request of GET /webhook-events sends each filter's
 * first value (`status=pending&type=product.published`): this is the event it answers.
 */
function retryingPublish(random) {
  const statuses = [502, 502, 503, 502];
  const offsets = scheduleOffsets(statuses.length + 1);
  return demoEvent(random, {
    productId: PRODUCT_IDS.budgetEbook,
    type: "product.published",
    status: "pending",
    ageMs: HOUR,
    attempts: statuses.map((status, i) => attempt(offsets[i], status, 95 + 21 * i)),
    nextAttempt: offsets[statuses.length],
  });
}

/**
 * The demo store's event log, newest first (as GET /webhook-events lists it). The course the README publishes
 * (the first product) has no publish event yet, so the one its publish makes is the only one.
 */
export function buildWebhookEvents(random) {
  const photography = PRODUCT_IDS.photography;
  return [
    retryingPublish(random),
    demoEvent(random, {
      productId: PRODUCT_IDS.club,
      type: "product.custom_field.deleted",
      status: "delivered",
      ageMs: 2 * HOUR,
      data: fieldDeleted(PRODUCT_IDS.club, "custom_fields", "instagram"),
      attempts: [attempt(0, 204, 87)],
    }),
    demoEvent(random, {
      productId: photography,
      type: "product.custom_field.deleted",
      status: "delivered",
      ageMs: 26 * HOUR,
      data: fieldDeleted(photography, "custom_fields", "birth-date"),
      // The receiver was restarting: a 503, then the first retry 5 s later got through.
      attempts: [attempt(0, 503, 1204), attempt(5, 204, 64)],
    }),
    demoEvent(random, {
      productId: photography,
      type: "product.custom_field.deleted",
      status: "failed",
      ageMs: 3 * DAY,
      data: fieldDeleted(photography, "waitlist_custom_fields", "city"),
      // 410 Gone ends an event at once, without retries.
      attempts: [attempt(0, 410, 35)],
    }),
    exhaustedPublish(random),
    demoEvent(random, {
      productId: PRODUCT_IDS.club,
      type: "product.published",
      status: "delivered",
      ageMs: 6 * DAY,
      attempts: [attempt(0, 200, 142)],
    }),
    demoEvent(random, {
      productId: photography,
      type: "product.custom_field.deleted",
      status: "delivered",
      ageMs: 8 * DAY,
      data: fieldDeleted(photography, "custom_fields", "consultation-notes", VARIANT_IDS.photographyConsultation),
      attempts: [attempt(0, null, TIMEOUT_MS + 3), attempt(5, 200, 48)],
    }),
  ];
}
