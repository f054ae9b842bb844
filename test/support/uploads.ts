import { expect } from "vitest";
import { seedStore } from "./factories";
import { api, json } from "./http";

/** The prepare answer, as a client reads it. */
export type Reservation = {
  id: string;
  expires_at: string;
  upload_request: { method: string; url: string; headers: Record<string, string> };
};

let ipCounter = 0;
/** A fresh client IP per call, so the per-IP PUT limit of one test never touches another. */
export const freshIp = () => `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter++ & 255}`;

/** Prepares an upload of `bytes` and expects the reservation. */
export async function reserve(token: string, store: string, bytes: Uint8Array, options: Record<string, unknown> = {}) {
  const response = await api("/media-uploads", {
    method: "POST",
    token,
    store,
    body: { filename: "plik.bin", content_type: "application/octet-stream", size: bytes.length, ...options },
  });
  expect(response.status).toBe(201);
  return json<Reservation>(response);
}

/** The byte PUT with the headers prepare returned. */
export function putBytes(reservation: Reservation, body: BodyInit | null, headers: Record<string, string> = {}) {
  return api(`/media-uploads/${reservation.id}`, {
    method: "PUT",
    rawBody: body ?? undefined,
    headers: { ...reservation.upload_request.headers, "CF-Connecting-IP": freshIp(), ...headers },
  });
}

/** The complete call. */
export const complete = (token: string, store: string, id: string) =>
  api(`/media-uploads/${id}/complete`, { method: "POST", token, store });

/** Prepare and PUT in one go, for a store of its own unless given; answers what complete needs. */
export async function stage(
  bytes: Uint8Array,
  options: Record<string, unknown> = {},
  owner?: { storeId: string; token: string },
) {
  const { storeId, token } = owner ?? (await seedStore());
  const reservation = await reserve(token, storeId, bytes, options);
  const put = await putBytes(reservation, bytes);
  expect(put.status).toBe(204);
  return { storeId, token, reservation };
}
