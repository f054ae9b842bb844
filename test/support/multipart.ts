import { runInDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import { origin } from "./http";
import { callWith, coordinatorOf, MiB, type MultipartReservation, multipartEnv, partOf, putPart } from "./uploads";

/* Helpers of the multipart upload tests (test/uploads/multipart*.test.ts). */

/** 11 MiB + 5 bytes: with the tests' 5 MiB ceiling, parts of 5 MiB, 5 MiB and 1 MiB + 5 bytes. */
export const threeParts = 11 * MiB + 5;

export type Status = {
  id: string;
  state: string;
  expires_at: string;
  multipart?: { part_size: number; part_count: number; part_url: string };
  parts?: { part_number: number; size: number; etag: string }[];
};

export const bearer = (owner: { storeId: string; token: string }) => ({
  Authorization: `Bearer ${owner.token}`,
  "X-Service-Store": owner.storeId,
});

export const readUpload = async (owner: { storeId: string; token: string }, id: string, bindings = multipartEnv()) =>
  callWith(bindings, `/media-uploads/${id}`, { headers: bearer(owner) });

export const completeWith = (owner: { storeId: string; token: string }, id: string, bindings = multipartEnv()) =>
  callWith(bindings, `/media-uploads/${id}/complete`, { method: "POST", headers: bearer(owner) });

/** The prepare call with `body` as sent, under `bindings`. */
export async function prepareWith(
  owner: { storeId: string; token: string },
  body: Record<string, unknown>,
  bindings: Env,
) {
  return callWith(bindings, "/media-uploads", {
    method: "POST",
    headers: { ...bearer(owner), "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** Sends every part of `file`, in order, and expects each 204. */
export async function putAllParts(reservation: MultipartReservation, file: Uint8Array) {
  for (let n = 1; n <= reservation.multipart.part_count; n++) {
    expect((await putPart(reservation, n, partOf(reservation, file, n))).status, `part ${n}`).toBe(204);
  }
}

export const r2UploadIdOf = (storeId: string, id: string) =>
  runInDurableObject(
    coordinatorOf(storeId),
    (_instance, state) =>
      state.storage.sql.exec<{ r2: string | null }>("SELECT r2_upload_id AS r2 FROM uploads WHERE id = ?", id).one().r2,
  );

/** SHA-256 of some bytes, hex: large files compare by digest (a failed comparison of 11 MiB arrays would print them). */
export async function digest(bytes: Uint8Array): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...hash].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The digest of what the public media route serves for the upload, as a client downloads it. */
export async function servedDigest(storeId: string, id: string, ext: string) {
  const response = await callWith(multipartEnv(), `${origin}/media/${storeId}/${id}.${ext}`);
  expect(response.status).toBe(200);
  return digest(new Uint8Array(await response.arrayBuffer()));
}
