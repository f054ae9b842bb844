import { ApiError, validationError } from "../../http/errors";
import type { KeyStorageOf } from "../../http/idempotency";
import type { KeptAnswer, KeyRef } from "../../lib/idempotency";
import { refusalMessage } from "../messages";
import type { Refusal } from "../upload-state";
import type { Outcome } from "./store-coordinator";

/** The per-store Durable Object that owns a store's uploads and counts its completes. */
export function storeCoordinator(env: Env, storeId: string) {
  return env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));
}

/** A client of one store's coordinator. */
export type CoordinatorStub = ReturnType<typeof storeCoordinator>;

/** The upload of a transition that went through; throws the refusal of one that did not. */
export function unwrap<T>(outcome: Outcome<T>, uploadId: string): T {
  if (outcome.ok) return outcome.upload;
  throw refusalError(outcome.refusal, uploadId);
}

/** The error a refusal answers: its message, or for a part number out of range a 422 with `errors.part_number`. */
export function refusalError(refusal: Refusal, uploadId: string): ApiError {
  const message = refusalMessage(uploadId, refusal);
  if (refusal.reason === "part_number") return validationError({ part_number: [message] });
  return new ApiError(refusal.status, message);
}

/** The 404 of an upload that does not exist, or not for this caller. */
export function uploadNotFound(uploadId: string): ApiError {
  return new ApiError(404, refusalMessage(uploadId, { reason: "not_found" }));
}

/**
 * The `Idempotency-Key` records of the store's uploads, in its coordinator (key-rows.ts): there prepare's
 * reservation and complete's outcome are written in the same transaction as their record.
 */
export const coordinatorKeys: KeyStorageOf = (c) => {
  const { storeId } = c.var.caller;
  if (storeId === null) throw new Error("an upload's store is always known (store rule `required`)");
  const coordinator = storeCoordinator(c.env, storeId);
  return {
    claim: (scope, wanted) => coordinator.claimKey({ storeId, tokenHash: scope.tokenHash, key: scope.key }, wanted),
    ...coordinatorKeyWrites(coordinator),
  };
};

/**
 * The same records, claimed by complete itself in its begin (`beginComplete`), the call that changes the upload:
 * a key costs complete no coordinator call of its own before it.
 */
export const completeKeys: KeyStorageOf = (c) => {
  const { storeId } = c.var.caller;
  if (storeId === null) throw new Error("an upload's store is always known (store rule `required`)");
  return { claim: null, ...coordinatorKeyWrites(storeCoordinator(c.env, storeId)) };
};

function coordinatorKeyWrites(coordinator: CoordinatorStub) {
  return {
    renew: (ref: KeyRef, until: number) => coordinator.renewKey(ref, until),
    answer: (ref: KeyRef, answer: KeptAnswer) => coordinator.answerKey(ref, answer),
    release: (ref: KeyRef) => coordinator.releaseKey(ref),
  };
}
