import { and, eq, sql } from "drizzle-orm";
import { runAtomically } from "../db/batch";
import type { Database } from "../db/client";
import { keyStatements } from "../db/idempotency-keys";
import { type CustomFieldOwner, customFields, drafts, products } from "../db/schema";
import { insertEventIfChanged, type NewEvent } from "../events/records";
import { ApiError } from "../http/errors";
import { emptyAnswer, type KeyRef } from "../lib/idempotency";
import type { DraftDocument, StoredCustomField } from "./draft-document";
import { writeDraft } from "./drafts";

export const customFieldMessages = {
  notFound: (name: string) => `Custom field with name ${name} not found`,
  productHasDraft:
    "The product has an unpublished draft; publish, unpublish or delete it first (DELETE /products/{id}/draft).",
} as const;

/** Which live custom-field list a delete targets. */
type LiveFieldOwner = { productId: string; kind: CustomFieldOwner; ownerId: string };

/**
 * Deletes a live custom field and renumbers the remaining ones 0..n-1, in one atomic batch. The
 * delete itself refuses to run while the product has a draft, so a draft created meanwhile cannot be
 * bypassed. Throws 409 (draft) or 404 (no such field). `event`, when given, is written in the same batch,
 * and only if the field was deleted; so is the request's `Idempotency-Key` record (`key`, answer 204).
 */
export async function deleteLiveCustomField(
  db: Database,
  owner: LiveFieldOwner,
  name: string,
  now = new Date(),
  event: NewEvent | null = null,
  key: KeyRef | null = null,
) {
  const ofOwner = and(eq(customFields.ownerKind, owner.kind), eq(customFields.ownerId, owner.ownerId));
  const [deleted] = await runAtomically(db, [
    db
      .delete(customFields)
      .where(
        and(
          ofOwner,
          eq(customFields.name, name),
          sql`NOT EXISTS (SELECT 1 FROM ${drafts} WHERE ${drafts.productId} = ${owner.productId})`,
        ),
      ),
    // With `ifChanged` its changes() is the delete's, so the statements below see the delete's count still.
    ...keyStatements(db, key, emptyAnswer(204), { ifChanged: true }),
    // changes() is the row count of the delete just above: the fields section changed only if it removed a row.
    db
      .update(products)
      .set({ fieldsUpdatedAt: now })
      .where(and(eq(products.id, owner.productId), sql`changes() > 0`)),
    // Again changes(): the update above touched the product only if the delete removed a row.
    ...(event ? [insertEventIfChanged(db, event)] : []),
    db
      .update(customFields)
      .set({
        position: sql`(SELECT COUNT(*) FROM ${customFields} AS earlier WHERE earlier.owner_kind = ${customFields.ownerKind} AND earlier.owner_id = ${customFields.ownerId} AND earlier.position < ${customFields.position})`,
      })
      .where(ofOwner),
  ]);
  if (deleted && deleted.meta.changes > 0) return;
  const draft = await db
    .select({ productId: drafts.productId })
    .from(drafts)
    .where(eq(drafts.productId, owner.productId));
  if (draft.length > 0) throw new ApiError(409, customFieldMessages.productHasDraft);
  throw new ApiError(404, customFieldMessages.notFound(name));
}

/** The list without `name`, renumbered 0..n-1; null when the list has no such field. */
function withoutField(fields: StoredCustomField[] | null, name: string): StoredCustomField[] | null {
  if (!fields?.some((field) => field.name === name)) return null;
  return fields
    .filter((field) => field.name !== name)
    .sort((a, b) => a.order - b.order)
    .map((field, order) => ({ ...field, order }));
}

/** Which overlay list a draft delete targets. */
export type DraftFieldOwner = { kind: "product" } | { kind: "waitlist" } | { kind: "variant"; variantId: string };

/** The overlay with the field removed from the targeted list; throws 404 when the list lacks it. */
function removeDraftField(document: DraftDocument, owner: DraftFieldOwner, name: string): DraftDocument {
  const notFound = () => new ApiError(404, customFieldMessages.notFound(name));
  if (owner.kind === "variant") {
    const variants = document.variants.map((variant) => {
      if (variant.id !== owner.variantId) return variant;
      const remaining = withoutField(variant.custom_fields, name);
      if (!remaining) throw notFound();
      return { ...variant, custom_fields: remaining };
    });
    return { ...document, variants };
  }
  const key = owner.kind === "product" ? "custom_fields" : "waitlist_custom_fields";
  const remaining = withoutField(document[key], name);
  if (!remaining) throw notFound();
  return { ...document, [key]: remaining };
}

/** Deletes a custom field of a product's overlay by compare-and-set on `draft_version`. */
export async function deleteDraftCustomField(
  db: Database,
  productId: string,
  owner: DraftFieldOwner,
  name: string,
  expectedVersion: number,
  document: DraftDocument,
  key: KeyRef | null = null,
) {
  await writeDraft(db, productId, expectedVersion, removeDraftField(document, owner, name), key);
}
