import { ApiError } from "../http/errors";
import { refusalMessage } from "./messages";
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
  throw new ApiError(outcome.refusal.status, refusalMessage(uploadId, outcome.refusal));
}

/** The 404 of an upload that does not exist, or not for this caller. */
export function uploadNotFound(uploadId: string): ApiError {
  return new ApiError(404, refusalMessage(uploadId, { reason: "not_found" }));
}
