import { inject } from "vitest";
import { demoStoreId, demoToken } from "./demo";
import { type ApiCall, apiRequestInit } from "./request-init";
import { expectJson, expectStatus } from "./responses";

/*
 * The e2e server (`wrangler dev`, started by test/e2e/global-setup.ts) called over real HTTP, for the tests
 * of the e2e project (Node).
 */

/** The e2e server's address, e.g. `http://127.0.0.1:41234` (asked at call time: known once the global setup ran). */
const serverOrigin = () => inject("baseUrl");

/** Calls the e2e server's API at `/api/v1{path}`, as a client over HTTP would. */
export function serverApi(path: string, options: ApiCall = {}): Promise<Response> {
  return fetch(`${serverOrigin()}/api/v1${path}`, apiRequestInit(options));
}

/**
 * Hosts `bytes` on the e2e server as the demo store's image, as a client does (prepare, PUT, complete), and
 * answers the hosted file result.
 */
export async function hostOnServer<T = Record<string, unknown>>(
  bytes: Uint8Array,
  upload: { filename: string; content_type: string },
): Promise<T> {
  const owner = { token: demoToken, store: demoStoreId };
  const prepared = await serverApi("/media-uploads", {
    ...owner,
    method: "POST",
    body: { ...upload, size: bytes.length, type: "image" },
  });
  const reservation = await expectJson<{
    id: string;
    upload_request: { url: string; headers: Record<string, string> };
  }>(prepared, 201);
  const put = await fetch(reservation.upload_request.url, {
    method: "PUT",
    headers: reservation.upload_request.headers,
    body: bytes,
  });
  await expectStatus(put, 204);
  return expectJson<T>(await serverApi(`/media-uploads/${reservation.id}/complete`, { ...owner, method: "POST" }), 201);
}
