import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import { createApp } from "../../src/app";
import { seedStore, storeD1 } from "./factories";
import { api, expectJson, expectStatus, origin } from "./http";
import { isoMedia } from "./media-bytes";

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
  return expectJson<Reservation>(response, 201);
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
  await expectStatus(put, 204);
  return { storeId, token, reservation };
}

/** A multipart reservation: the prepare answer with its plan. */
export type MultipartReservation = Reservation & {
  multipart: { part_size: number; part_count: number; part_url: string };
};

export const MiB = 2 ** 20;

/**
 * Bindings whose single-PUT ceiling is R2's smallest part (5 MiB), so multipart uploads in tests are cut
 * into 5 MiB parts instead of 8 MiB ones; `overrides` replaces other variables too.
 */
export function multipartEnv(overrides: Partial<Record<keyof Env, string>> = {}): Env {
  return { ...env, SINGLE_PUT_LIMIT_BYTES: String(5 * MiB), ...overrides } as Env;
}

const app = createApp();

/** Calls the app with `bindings` at an absolute URL or at `/api/v1{path}`. */
export function callWith(bindings: Env, pathOrUrl: string, init: RequestInit = {}): Promise<Response> {
  const url = pathOrUrl.startsWith("http") ? pathOrUrl : `${origin}/api/v1${pathOrUrl}`;
  return Promise.resolve(app.request(url, init, bindings));
}

/** Prepares an upload of `size` bytes in parts (`multipart: true` unless `options` says otherwise) and expects the reservation. */
export async function reserveParts(
  owner: { storeId: string; token: string },
  size: number,
  bindings: Env = multipartEnv(),
  options: Record<string, unknown> = {},
): Promise<MultipartReservation> {
  const response = await callWith(bindings, "/media-uploads", {
    method: "POST",
    headers: {
      Authorization: `Bearer ${owner.token}`,
      "X-Service-Store": owner.storeId,
      "Content-Type": "application/json",
    },
    body: JSON.stringify({ filename: "film.mp4", content_type: "video/mp4", size, multipart: true, ...options }),
  });
  const reservation = await expectJson<MultipartReservation>(response, 201);
  expect(reservation.multipart).toBeDefined();
  return reservation;
}

/** The URL of part `partNumber` of a reservation. */
export const partUrl = (reservation: MultipartReservation, partNumber: number | string) =>
  reservation.multipart.part_url.replace("{part_number}", String(partNumber));

/** The bytes of part `partNumber` (1-based) of `file` as the reservation cuts it. */
export function partOf(reservation: MultipartReservation, file: Uint8Array, partNumber: number): Uint8Array {
  const start = (partNumber - 1) * reservation.multipart.part_size;
  return file.subarray(start, Math.min(start + reservation.multipart.part_size, file.length));
}

/**
 * A part PUT with the headers prepare returned, the Content-Length of `body` (a request built in the test
 * carries none by itself; give it in `headers` for a stream) and a fresh client IP unless `headers` names one.
 */
export function putPart(
  reservation: MultipartReservation,
  partNumber: number | string,
  body: Uint8Array | ReadableStream | null,
  headers: Record<string, string> = {},
  bindings: Env = multipartEnv(),
): Promise<Response> {
  const length: Record<string, string> = body instanceof Uint8Array ? { "Content-Length": String(body.length) } : {};
  return callWith(bindings, partUrl(reservation, partNumber), {
    method: "PUT",
    body,
    headers: { ...reservation.upload_request.headers, ...length, "CF-Connecting-IP": freshIp(), ...headers },
  });
}

/** An MP4 of exactly `size` bytes (a `ftyp` box, then one `mdat` box), pseudo-random from `seed` after its header, so no two parts are alike. */
export function mp4OfSize(size: number, seed = 1): Uint8Array {
  const file = isoMedia("isom", size - 32);
  let state = seed >>> 0 || 1;
  const words = new Uint32Array(file.buffer, 32, Math.floor((size - 32) / 4));
  for (let i = 0; i < words.length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    words[i] = state >>> 0;
  }
  return file;
}

/** The bytes the Worker serves at a hosted file's URL, read as a browser would (expects 200). */
export async function servedBytes(url: string): Promise<Uint8Array> {
  const response = await exports.default.fetch(url);
  await expectStatus(response, 200, url);
  return new Uint8Array(await response.arrayBuffer());
}

/** The prepare call with `body` as sent, whatever it holds (for tests of its refusals). */
export const prepare = (token: string, store: string, body: Record<string, unknown>) =>
  api("/media-uploads", { method: "POST", token, store, body });

/** Prepare, PUT and complete in one go, for a store of its own; answers the complete response. */
export async function host(bytes: Uint8Array, options: Record<string, unknown> = {}) {
  const staged = await stage(bytes, options);
  return { ...staged, response: await complete(staged.token, staged.storeId, staged.reservation.id) };
}

/** The coordinator of a store's uploads. */
export const coordinatorOf = (storeId: string) => env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));

/** The upload's stored state as its coordinator keeps it (`storing` and `processing` included). */
export const storedState = (storeId: string, id: string) =>
  runInDurableObject(
    coordinatorOf(storeId),
    (_instance, state) =>
      state.storage.sql.exec<{ state: string }>("SELECT state FROM uploads WHERE id = ?", id).one().state,
  );

/** As the platform changes a store: its row in the global database and its copy in the store's home, which the API reads. */
export async function setUploadLimit(storeId: string, bytes: number) {
  for (const db of new Set([env.DB, await storeD1(storeId)])) {
    await db.prepare("UPDATE stores SET upload_limit_bytes = ? WHERE id = ?").bind(bytes, storeId).run();
  }
}

/** The fields of a hosted result that only a converted still image fills: null in every other result. */
export const notConvertedFields = {
  width: null,
  height: null,
  srcset: null,
  sources: null,
  placeholder: null,
  placeholder_url: null,
  dominant_color: null,
} as const;
