import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import { abortUnless, GuardFailedError, isUniqueViolation, runAtomically } from "../db/batch";
import type { Database } from "../db/client";
import { keyStatements } from "../db/idempotency-keys";
import { drafts, productCourses, products, stores } from "../db/schema";
import { insertEvent, type NewEvent, newEvent } from "../events/records";
import { ApiError, type FieldErrors, validationError } from "../http/errors";
import type { KeyRef } from "../lib/idempotency";
import { log } from "../lib/log";
import { PlatformUnavailableError, type ProjectPlatform } from "../platform/client";
import type { DraftDocument } from "./draft-document";
import { draftMessages } from "./drafts";
import { replaceProductContent } from "./persist";
import { findDraft, type ProductRow } from "./queries";

export const publishMessages = {
  noActivePlan: "The product cannot be published without an active plan.",
  staleOverlay:
    "The draft is stale: the live product changed after the draft was made. GET the draft again or DELETE /products/{id}/draft, then retry.",
  accountNotConnected: "The store's account is not connected to the project platform.",
  platformUnavailable: "The project platform is temporarily unavailable, please retry.",
  inProgress: "A publish of this product is already in progress; retry shortly.",
  wallGone: "The selected wall project no longer exists.",
  footerGone: "The selected footer project no longer exists.",
} as const;

/** How long a publish holds its product; a crashed publish frees it after this. */
const publishLeaseMs = 60_000;

type PublishDeps = {
  db: Database;
  platform: ProjectPlatform;
  now?: () => Date;
  /** Where the `product.published` event goes for a live `webhook_url` (see events/records.ts); null: no event. */
  webhookTarget?: (webhookUrl: unknown) => string | null;
  /**
   * The request's `Idempotency-Key` claim: the publish's batch records that the publish was made (its answer,
   * the live product read after it, is kept once made), so a retry never publishes, nor sends the event, twice.
   */
  key?: KeyRef | null;
};

type Draft = NonNullable<Awaited<ReturnType<typeof findDraft>>>;

/**
 * Publishes a product in the order of docs/api.md, "Publish": plan (422) → stale overlay (409) → platform checks →
 * course operations → persist. A failure at any step leaves the overlay in place; course operations
 * already done stay recorded on the live product and on the overlay, so a retry never resends them.
 * Answers the `product.published` event written in the same batch as the publish (its body, the answer,
 * is filled in by the caller), or null when the live product has no webhook target.
 */
export async function publishProduct(deps: PublishDeps, product: ProductRow): Promise<NewEvent | null> {
  const now = deps.now ?? (() => new Date());
  const store = await deps.db.query.stores.findFirst({ where: eq(stores.id, product.storeId) });
  if (!store?.planActive) throw new ApiError(422, publishMessages.noActivePlan);

  const eventFor = (attributes: Record<string, unknown>) => {
    const url = deps.webhookTarget?.(attributes.webhook_url) ?? null;
    return url ? newEvent(product, "product.published", url, null, now()) : null;
  };

  const draft = await findDraft(deps.db, product.id);
  if (!draft) {
    const event = eventFor(product.attributes);
    await runAtomically(deps.db, [
      deps.db.update(products).set({ status: "published" }).where(eq(products.id, product.id)),
      ...(event ? [insertEvent(deps.db, event)] : []),
      ...keyStatements(deps.db, deps.key ?? null, null),
    ]);
    return event;
  }
  if (isStale(product, draft)) throw new ApiError(409, publishMessages.staleOverlay);

  // The target is the live product's after the change: the overlay's attributes replace the live ones.
  const event = eventFor(draft.document.product.attributes);
  await acquireLease(deps.db, product.id, draft.draftVersion, now());
  try {
    const skipped = await applyPlatformSteps(deps, product, draft);
    await persistOverlay(deps.db, product, draft, skipped, now(), event, deps.key ?? null);
    return event;
  } catch (error) {
    await releaseLease(deps.db, product.id);
    if (error instanceof PlatformUnavailableError) {
      log.warn("publish: platform unavailable", { product_id: product.id, error: error.message });
      throw new ApiError(502, publishMessages.platformUnavailable);
    }
    throw error;
  }
}

/** A live section changed after the time the overlay was based on it: persisting would lose newer work. */
function isStale(product: ProductRow, draft: Draft): boolean {
  return (
    product.fieldsUpdatedAt > draft.fieldsBasedOn ||
    product.settingsUpdatedAt > draft.settingsBasedOn ||
    product.stylesUpdatedAt > draft.stylesBasedOn ||
    product.mediaUpdatedAt > draft.mediaBasedOn
  );
}

/** Takes the product for this publish, so two publishes never run the course operations at once. */
async function acquireLease(db: Database, productId: string, version: number, now: Date) {
  const taken = await db
    .update(drafts)
    .set({ publishLeaseUntil: new Date(now.getTime() + publishLeaseMs) })
    .where(
      and(
        eq(drafts.productId, productId),
        eq(drafts.draftVersion, version),
        or(isNull(drafts.publishLeaseUntil), lt(drafts.publishLeaseUntil, now)),
      ),
    );
  if (taken.meta.changes > 0) return;
  const current = await findDraft(db, productId);
  if (current && current.draftVersion === version) throw new ApiError(409, publishMessages.inProgress);
  throw new ApiError(409, draftMessages.stale);
}

async function releaseLease(db: Database, productId: string) {
  await db.update(drafts).set({ publishLeaseUntil: null }).where(eq(drafts.productId, productId));
}

/**
 * Asks the platform only when the overlay needs it (a wall, a footer or a `player`). Returns the
 * courses whose connect was skipped because the course no longer exists.
 */
async function applyPlatformSteps(deps: PublishDeps, product: ProductRow, draft: Draft): Promise<Set<string>> {
  const document = draft.document;
  const skipped = new Set(draft.courseOpsDone.filter((op) => op.startsWith("skip:")).map((op) => op.slice(5)));
  if (!document.wall_id && !document.footer_id && !document.player) return skipped;

  const { platform } = deps;
  if (!(await platform.accountConnected(product.storeId))) {
    throw new ApiError(422, publishMessages.accountNotConnected);
  }
  const errors: FieldErrors = {};
  if (document.wall_id && !(await platform.projectExists(product.storeId, document.wall_id))) {
    errors.wall_id = [publishMessages.wallGone];
  }
  if (document.footer_id && !(await platform.projectExists(product.storeId, document.footer_id))) {
    errors.footer_id = [publishMessages.footerGone];
  }
  if (Object.keys(errors).length > 0) throw validationError(errors);

  const done = new Set(draft.courseOpsDone);
  const player = document.player;
  for (const courseId of new Set(player?.connect ?? [])) {
    if (done.has(`connect:${courseId}`) || done.has(`skip:${courseId}`)) continue;
    const result = await platform.connectCourse(product.storeId, product.id, courseId);
    if (result === "missing") {
      skipped.add(courseId);
      await recordCourseOp(deps.db, product.id, `skip:${courseId}`);
    } else {
      await recordCourseOp(
        deps.db,
        product.id,
        `connect:${courseId}`,
        deps.db.insert(productCourses).values({ productId: product.id, courseId }).onConflictDoNothing(),
      );
    }
  }
  for (const courseId of new Set(player?.disconnect ?? [])) {
    if (done.has(`disconnect:${courseId}`)) continue;
    await platform.disconnectCourse(product.storeId, product.id, courseId);
    await recordCourseOp(
      deps.db,
      product.id,
      `disconnect:${courseId}`,
      deps.db
        .delete(productCourses)
        .where(and(eq(productCourses.productId, product.id), eq(productCourses.courseId, courseId))),
    );
  }
  return skipped;
}

/** Marks a course operation done on the overlay and applies it to the live product in one step. */
async function recordCourseOp(
  db: Database,
  productId: string,
  op: string,
  liveChange?: Parameters<typeof runAtomically>[1][number],
) {
  await runAtomically(db, [
    db
      .update(drafts)
      .set({ courseOpsDone: sql`json_insert(${drafts.courseOpsDone}, '$[#]', ${op})` })
      .where(eq(drafts.productId, productId)),
    ...(liveChange ? [liveChange] : []),
  ]);
}

/** The first of `slug`, `slug-2`, `slug-3`, … that no other product of the store holds. */
async function freeSlug(db: Database, product: ProductRow, slug: string): Promise<string> {
  const taken = await db
    .select({ slug: products.slug })
    .from(products)
    .where(
      and(
        eq(products.storeId, product.storeId),
        sql`${products.id} <> ${product.id}`,
        or(eq(products.slug, slug), sql`${products.slug} LIKE ${`${slug}-%`}`),
      ),
    );
  const used = new Set(taken.map((row) => row.slug));
  if (!used.has(slug)) return slug;
  for (let suffix = 2; ; suffix++) {
    if (!used.has(`${slug}-${suffix}`)) return `${slug}-${suffix}`;
  }
}

/**
 * Persists the overlay as the live product and drops it, in one atomic batch that aborts unless the
 * overlay is still the version this publish read, so a concurrent draft write is never half-applied.
 */
async function persistOverlay(
  db: Database,
  product: ProductRow,
  draft: Draft,
  skipped: Set<string>,
  now: Date,
  event: NewEvent | null,
  key: KeyRef | null,
) {
  const document: DraftDocument = draft.document;
  const player = document.player;
  const redirectCourseId = player
    ? player.redirect_course_id && !skipped.has(player.redirect_course_id)
      ? player.redirect_course_id
      : null
    : product.redirectCourseId;

  // A slug taken between the lookup and the write fails the unique index; look again a few times.
  for (let attempt = 1; ; attempt++) {
    const slug = await freeSlug(db, product, document.product.slug);
    try {
      await runAtomically(db, [
        abortUnless(
          db,
          sql`EXISTS (SELECT 1 FROM ${drafts} WHERE ${drafts.productId} = ${product.id} AND ${drafts.draftVersion} = ${draft.draftVersion})`,
        ),
        db
          .update(products)
          .set({
            status: "published",
            name: document.product.name,
            slug,
            attributes: document.product.attributes,
            customFieldsDefined: document.custom_fields !== null,
            waitlistCustomFieldsDefined: document.waitlist_custom_fields !== null,
            wallId: document.wall_id,
            footerId: document.footer_id,
            redirectCourseId,
            fieldsUpdatedAt: now,
            settingsUpdatedAt: now,
            stylesUpdatedAt: now,
            mediaUpdatedAt: now,
          })
          .where(eq(products.id, product.id)),
        ...replaceProductContent(db, product.id, {
          customFields: document.custom_fields,
          waitlistCustomFields: document.waitlist_custom_fields,
          variants: document.variants,
          crossSells: document.cross_sells,
        }),
        db.delete(drafts).where(eq(drafts.productId, product.id)),
        // The event is part of the publish: a batch that fails or is rolled back leaves no event either.
        ...(event ? [insertEvent(db, event)] : []),
        ...keyStatements(db, key, null),
      ]);
      return;
    } catch (error) {
      if (error instanceof GuardFailedError) throw new ApiError(409, draftMessages.stale);
      if (!isUniqueViolation(error, "products.store_id, products.slug") || attempt >= 3) throw error;
    }
  }
}
