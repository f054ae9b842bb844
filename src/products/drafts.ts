import { and, eq, sql } from "drizzle-orm";
import type { Context } from "hono";
import { z } from "zod";
import { runAtomically } from "../db/batch";
import type { Database } from "../db/client";
import { keyStatements } from "../db/idempotency-keys";
import { drafts } from "../db/schema";
import { ApiError, messages, validationError } from "../http/errors";
import { fieldErrors } from "../http/validate";
import { emptyAnswer, type KeyRef } from "../lib/idempotency";
import type { DraftDocument } from "./draft-document";

export const draftMessages = {
  stale: "The draft was edited elsewhere; GET the draft and retry with the current draft_version.",
  versionRequired: "The draft version field is required.",
  versionInvalid: "The draft version must be an integer of at least 1.",
} as const;

/**
 * The body of a draft write, `{draft_version}`: the handler reads it after the product and draft lookups
 * (docs/api.md, "Delete custom field": 404 no draft → 422 version), and the route documents it (as JSON Schema, not a validator).
 */
export const DraftVersionBody = z.object({
  draft_version: z
    .int({ error: (issue) => (issue.input == null ? draftMessages.versionRequired : draftMessages.versionInvalid) })
    .min(1, { error: draftMessages.versionInvalid }),
});

/**
 * Reads `{draft_version}` from a draft write's body. This route's body is the version: a missing,
 * empty, non-JSON or non-object body is a 422 on `draft_version`, not the general 400.
 */
export async function readDraftVersion(c: Context): Promise<number> {
  let body: unknown;
  try {
    body = JSON.parse(await c.req.text());
  } catch {
    body = undefined;
  }
  const isObject = body !== null && typeof body === "object" && !Array.isArray(body);
  const result = DraftVersionBody.safeParse(isObject ? body : {});
  if (!result.success) throw validationError(fieldErrors(result.error.issues));
  return result.data.draft_version;
}

/**
 * Replaces the overlay document if its version is still `expectedVersion`, bumping the version by one.
 * The changed-row count decides: a concurrent writer makes this a 409, a concurrent draft delete a 404.
 * `key`: the request's `Idempotency-Key` claim, recorded (answer 204) in the same batch if the write changed it.
 */
export async function writeDraft(
  db: Database,
  productId: string,
  expectedVersion: number,
  document: DraftDocument,
  key: KeyRef | null = null,
) {
  const [result] = await runAtomically(db, [
    db
      .update(drafts)
      .set({ document, draftVersion: sql`${drafts.draftVersion} + 1` })
      .where(and(eq(drafts.productId, productId), eq(drafts.draftVersion, expectedVersion))),
    ...keyStatements(db, key, emptyAnswer(204), { ifChanged: true }),
  ]);
  if (result && result.meta.changes > 0) return;
  const still = await db.select({ version: drafts.draftVersion }).from(drafts).where(eq(drafts.productId, productId));
  if (still.length === 0) throw new ApiError(404, messages.productHasNoDraft(productId));
  throw new ApiError(409, draftMessages.stale);
}

/**
 * Drops a product's overlay; throws 404 when it has none. `key`: the request's `Idempotency-Key` claim,
 * recorded (answer 204) in the same batch if the overlay was dropped.
 */
export async function deleteDraft(db: Database, productId: string, key: KeyRef | null = null) {
  const [result] = await runAtomically(db, [
    db.delete(drafts).where(eq(drafts.productId, productId)),
    ...keyStatements(db, key, emptyAnswer(204), { ifChanged: true }),
  ]);
  if (!result || result.meta.changes === 0) throw new ApiError(404, messages.productHasNoDraft(productId));
}
