import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Milliseconds since the epoch, as a JS Date. */
const timestamp = (name: string) => integer(name, { mode: "timestamp_ms" });
const json = <T>(name: string) => text(name, { mode: "json" }).$type<T>();
const flag = (name: string) => integer(name, { mode: "boolean" });

/** A store: its plan, its upload limit and the state of its external-platform account. */
export const stores = sqliteTable("stores", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  planActive: flag("plan_active").notNull(),
  /** Null means the `DEFAULT_UPLOAD_LIMIT_BYTES` configuration value. */
  uploadLimitBytes: integer("upload_limit_bytes"),
  createdAt: timestamp("created_at").notNull(),
});

/**
 * The store directory (global database only): which database holds each store's rows. `shard` is the name
 * of a D1 binding of the Worker (`SHARD_<n>`; `DB` for a store placed before sharding). `version` grows on
 * every change of the entry. A store without an entry lives in `DB` (docs/scaling.md). `moving` is set for
 * the whole of a move (src/db/move.ts): isolates then keep the entry for a second only, not
 * `TOKEN_CACHE_SECONDS`, so the switch of `shard` reaches every isolate within a second.
 */
export const storeDirectory = sqliteTable(
  "store_directory",
  {
    storeId: text("store_id")
      .primaryKey()
      .references(() => stores.id),
    shard: text("shard").notNull(),
    version: integer("version").notNull().default(1),
    placedAt: timestamp("placed_at").notNull(),
    moving: flag("moving").notNull().default(false),
  },
  (t) => [index("store_directory_shard").on(t.shard)],
);

/**
 * Stores whose rows in this database must not change (every database, docs/scaling.md "Moving a store"): a
 * store being copied out (`outgoing`, and after the switch until its rows here are deleted) or copied in and
 * not yet open to writes (`incoming`). Triggers of migrations/0004 abort every insert, update and delete of
 * a fenced store's rows, whatever code path sends it; src/db/fence.ts recognises that failure.
 */
export const storeFences = sqliteTable("store_fences", {
  storeId: text("store_id").primaryKey(),
  state: text("state", { enum: ["outgoing", "incoming"] }).notNull(),
  since: timestamp("since").notNull(),
});

/** API tokens: only the SHA-256 of the secret is kept. */
export const apiTokens = sqliteTable("api_tokens", {
  tokenHash: text("token_hash").primaryKey(),
  storeIds: json<string[]>("store_ids").notNull(),
  abilities: json<string[]>("abilities").notNull(),
  createdAt: timestamp("created_at").notNull(),
});

/** Time of the last change of each live product section; a draft remembers the ones it was based on. */
const sectionTimes = {
  fieldsUpdatedAt: timestamp("fields_updated_at").notNull(),
  settingsUpdatedAt: timestamp("settings_updated_at").notNull(),
  stylesUpdatedAt: timestamp("styles_updated_at").notNull(),
  mediaUpdatedAt: timestamp("media_updated_at").notNull(),
};

/**
 * Products. The columns are what the service reasons about; `attributes` holds the remaining
 * Product resource fields, validated by the same zod schema that documents the resource.
 */
export const products = sqliteTable(
  "products",
  {
    id: text("id").primaryKey(),
    storeId: text("store_id")
      .notNull()
      .references(() => stores.id),
    status: text("status", { enum: ["draft", "published", "archived"] }).notNull(),
    name: text("name").notNull(),
    slug: text("slug").notNull(),
    attributes: json<Record<string, unknown>>("attributes").notNull(),
    /** False while the product has never had custom fields: reads show null, not []. */
    customFieldsDefined: flag("custom_fields_defined").notNull(),
    waitlistCustomFieldsDefined: flag("waitlist_custom_fields_defined").notNull(),
    wallId: text("wall_id"),
    footerId: text("footer_id"),
    redirectCourseId: text("redirect_course_id"),
    ...sectionTimes,
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [uniqueIndex("products_store_slug").on(t.storeId, t.slug)],
);

/** Variants (prices) of a product, in display order. */
export const variants = sqliteTable(
  "variants",
  {
    id: text("id").primaryKey(),
    productId: text("product_id")
      .notNull()
      .references(() => products.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    status: text("status").notNull(),
    name: text("name").notNull(),
    attributes: json<Record<string, unknown>>("attributes").notNull(),
    /** False: the variant has no array of its own (null); true with no rows: an empty array. */
    customFieldsDefined: flag("custom_fields_defined").notNull(),
  },
  (t) => [index("variants_product").on(t.productId, t.position)],
);

const customFieldOwners = ["product", "waitlist", "variant"] as const;
export type CustomFieldOwner = (typeof customFieldOwners)[number];

/** Live custom checkout fields of a product, its waitlist or a variant; `position` is `order`. */
export const customFields = sqliteTable(
  "custom_fields",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    productId: text("product_id")
      .notNull()
      .references(() => products.id, { onDelete: "cascade" }),
    ownerKind: text("owner_kind", { enum: customFieldOwners }).notNull(),
    /** The product id for product and waitlist fields, the variant id for variant fields. */
    ownerId: text("owner_id").notNull(),
    name: text("name").notNull(),
    enabled: flag("enabled").notNull(),
    position: integer("position").notNull(),
    /** Definition keys beyond name, enabled and order, kept as given. */
    extra: json<Record<string, unknown>>("extra").notNull(),
  },
  (t) => [
    uniqueIndex("custom_fields_owner_name").on(t.ownerKind, t.ownerId, t.name),
    index("custom_fields_owner_position").on(t.ownerKind, t.ownerId, t.position),
  ],
);

/** Live cross-sells of a product in display order; any required field may be missing (incomplete). */
export const crossSells = sqliteTable(
  "cross_sells",
  {
    id: text("id").primaryKey(),
    ownerProductId: text("owner_product_id")
      .notNull()
      .references(() => products.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    productId: text("product_id"),
    variantId: text("variant_id"),
    parentId: text("parent_id"),
    title: text("title"),
    mainDescription: json<unknown>("main_description"),
    description: json<unknown>("description"),
    buttonText: text("button_text"),
    amount: integer("amount"),
    currency: text("currency"),
    discount: json<unknown>("discount"),
    validityMinutes: integer("validity_minutes"),
    onePurchase: flag("one_purchase").notNull(),
    sendOffer: flag("send_offer").notNull(),
    active: flag("active").notNull(),
  },
  (t) => [index("cross_sells_owner_position").on(t.ownerProductId, t.position)],
);

/** Courses connected to the live product on the external platform. */
export const productCourses = sqliteTable(
  "product_courses",
  {
    productId: text("product_id")
      .notNull()
      .references(() => products.id, { onDelete: "cascade" }),
    courseId: text("course_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.productId, t.courseId] })],
);

/** The unpublished overlay of a product: at most one, versioned for compare-and-set writes. */
export const drafts = sqliteTable("drafts", {
  productId: text("product_id")
    .primaryKey()
    .references(() => products.id, { onDelete: "cascade" }),
  draftVersion: integer("draft_version").notNull(),
  /** The whole overlay (see products/draft-document.ts). */
  document: json<Record<string, unknown>>("document").notNull(),
  fieldsBasedOn: timestamp("fields_based_on").notNull(),
  settingsBasedOn: timestamp("settings_based_on").notNull(),
  stylesBasedOn: timestamp("styles_based_on").notNull(),
  mediaBasedOn: timestamp("media_based_on").notNull(),
  /**
   * Course operations of the overlay's `player` already applied to the live product by an earlier,
   * failed publish ("connect:<id>", "disconnect:<id>", "skip:<id>"), so a retry never resends them.
   */
  courseOpsDone: json<string[]>("course_ops_done").notNull().default([]),
  /** While set and in the future, a publish of this product is running and another one must wait. */
  publishLeaseUntil: timestamp("publish_lease_until"),
  createdAt: timestamp("created_at").notNull(),
});

/** Subscriptions created by purchases of recurring variants. */
export const subscriptions = sqliteTable(
  "subscriptions",
  {
    id: text("id").primaryKey(),
    storeId: text("store_id")
      .notNull()
      .references(() => stores.id),
    customerId: text("customer_id").notNull(),
    customerName: text("customer_name").notNull(),
    customerEmail: text("customer_email"),
    /** Lower-cased e-mail for the exact, case-insensitive e-mail search. */
    customerEmailKey: text("customer_email_key"),
    productId: text("product_id").notNull(),
    variantId: text("variant_id").notNull(),
    hiddenByCustomer: flag("hidden_by_customer").notNull(),
    remoteId: text("remote_id"),
    provider: text("provider").notNull(),
    status: text("status"),
    variantName: text("variant_name"),
    productName: text("product_name"),
    recurringAmount: integer("recurring_amount"),
    currency: text("currency"),
    interval: text("interval"),
    intervalCount: integer("interval_count"),
    quantity: integer("quantity").notNull(),
    currentPeriodEnd: timestamp("current_period_end"),
    cancelAt: timestamp("cancel_at"),
    canceledAt: timestamp("canceled_at"),
    createdAt: timestamp("created_at").notNull(),
    /**
     * Customer, product and variant names lower-cased with full Unicode case folding (SQLite's
     * lower() only folds ASCII), joined by a separator no name contains, for the free-text search.
     */
    searchText: text("search_text").notNull(),
  },
  (t) => [
    // The list's default order. search_text rides along so the free-text search, which has to test
    // every subscription of the store, reads this index in order instead of looking up each row;
    // only matching rows are fetched (measured: 0.5 s → 40 ms over 200,000 rows, docs/benchmarks.md).
    index("subscriptions_store_created").on(t.storeId, t.createdAt, t.id, t.searchText),
    index("subscriptions_store_status_created").on(t.storeId, t.status, t.createdAt, t.id),
    index("subscriptions_store_customer_created").on(t.storeId, t.customerId, t.createdAt, t.id),
    index("subscriptions_store_product_created").on(t.storeId, t.productId, t.createdAt, t.id),
    index("subscriptions_store_variant_created").on(t.storeId, t.variantId, t.createdAt, t.id),
    // A date range cannot also give the list's order, so matching rows are sorted; with the sort key in
    // the index, SQLite ranks them without reading rows that miss the page (measured: 59 ms → 6 ms for
    // 20,000 period ends in one week).
    index("subscriptions_store_canceled").on(t.storeId, t.canceledAt, t.createdAt, t.id),
    index("subscriptions_store_period_end").on(t.storeId, t.currentPeriodEnd, t.createdAt, t.id),
    // Ordered like the list, so an e-mail search pages without scanning the store in creation order.
    index("subscriptions_store_email").on(t.storeId, t.customerEmailKey, t.createdAt, t.id),
  ],
);

/** State of the built-in fake project platform (development only), one row per store account. */
export const devPlatformAccounts = sqliteTable("dev_platform_accounts", {
  storeId: text("store_id")
    .primaryKey()
    .references(() => stores.id),
  connected: flag("connected").notNull(),
  projects: json<string[]>("projects").notNull(),
  courses: json<string[]>("courses").notNull(),
  /** `up`, `down`, or `fail_after` with `remainingSuccesses` calls still answered. */
  faultMode: text("fault_mode", { enum: ["up", "down", "fail_after"] })
    .notNull()
    .default("up"),
  remainingSuccesses: integer("remaining_successes"),
  updatedAt: timestamp("updated_at").notNull().default(sql`(unixepoch() * 1000)`),
});

/** Every call the fake project platform answered, in order (development only). */
export const devPlatformCalls = sqliteTable(
  "dev_platform_calls",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    storeId: text("store_id").notNull(),
    op: text("op", { enum: ["check_account", "check_project", "connect_course", "disconnect_course"] }).notNull(),
    projectId: text("project_id"),
    courseId: text("course_id"),
    productId: text("product_id"),
    ok: flag("ok").notNull(),
  },
  (t) => [index("dev_platform_calls_store").on(t.storeId, t.id)],
);

/**
 * Each store's webhook signing secret (`whsec_` + base64 of 32 random bytes), made on first need. After a
 * rotation the previous secret keeps signing, beside the new one, until `previousUntil`.
 */
export const webhookSecrets = sqliteTable("webhook_secrets", {
  storeId: text("store_id")
    .primaryKey()
    .references(() => stores.id),
  secret: text("secret").notNull(),
  previousSecret: text("previous_secret"),
  previousUntil: timestamp("previous_until"),
  createdAt: timestamp("created_at").notNull(),
});

export const webhookEventTypes = ["product.published", "product.custom_field.deleted"] as const;
export const webhookEventStatuses = ["pending", "delivered", "failed"] as const;
export type WebhookEventStatus = (typeof webhookEventStatuses)[number];

/** One line of an event's attempt log. */
export type WebhookAttempt = { at: string; response_status: number | null; error: string | null; duration_ms: number };

/**
 * Events for a product's `webhook_url`, written in the same batch as the change they report. `body` is the
 * exact JSON sent on every attempt; null only between a publish's batch and the moment its answer is known
 * (the delivery fills it in if the request died in between).
 */
export const webhookEvents = sqliteTable(
  "webhook_events",
  {
    /** `evt_<uuid>`: the `webhook-id` of every attempt. */
    id: text("id").primaryKey(),
    storeId: text("store_id").notNull(),
    productId: text("product_id").notNull(),
    type: text("type", { enum: webhookEventTypes }).notNull(),
    url: text("url").notNull(),
    body: text("body"),
    status: text("status", { enum: webhookEventStatuses }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    /** How many of the retry schedule's delays were used. */
    retriesUsed: integer("retries_used").notNull().default(0),
    /** A redelivery of a delivered or failed event: one attempt, no retries after it. */
    finalAttempt: flag("final_attempt").notNull().default(false),
    nextAttemptAt: timestamp("next_attempt_at"),
    lastAttemptAt: timestamp("last_attempt_at"),
    lastResponseStatus: integer("last_response_status"),
    attemptLog: json<WebhookAttempt[]>("attempt_log").notNull().default([]),
    /** While in the future, one consumer is making an attempt and no other may. */
    leaseUntil: timestamp("lease_until"),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [
    index("webhook_events_store_created").on(t.storeId, t.createdAt),
    index("webhook_events_due").on(t.status, t.nextAttemptAt),
  ],
);

/**
 * `Idempotency-Key` records of the store's writes (src/lib/idempotency.ts, docs/api.md "Idempotency-Key"): the
 * key's claim while its first request runs, whether the change was made (written in the change's own batch),
 * and the answer given again to a retry. Kept until `expiresAt` (`IDEMPOTENCY_TTL_SECONDS`); the cron deletes
 * them after that. They move with their store (src/db/move-rows.ts).
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    storeId: text("store_id").notNull(),
    tokenHash: text("token_hash").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of the method, path and query, and the body's bytes. */
    fingerprint: text("fingerprint").notNull(),
    /** Counted up by every claim that takes the key over from a request whose lease ran out. */
    attempt: integer("attempt").notNull(),
    /** Milliseconds since the epoch; the claim of the running request. */
    leaseUntil: integer("lease_until").notNull(),
    changed: flag("changed").notNull().default(false),
    /** The kept answer: null until the request answered. */
    status: integer("status"),
    headers: json<Record<string, string>>("headers"),
    body: text("body"),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.storeId, t.tokenHash, t.key] }), index("idempotency_keys_expires").on(t.expiresAt)],
);
