import { api, expectJson } from "./http";

/** GET /products/{id} with `token`, expecting 200: the live Product resource. */
export async function readProduct<T = Record<string, unknown>>(id: string, token: string): Promise<T> {
  return expectJson<T>(await api(`/products/${id}`, { token }), 200);
}

/** GET /products/{id}/draft with `token`, expecting 200: the draft overlay in the Product shape. */
export async function readDraft<T = Record<string, unknown>>(id: string, token: string): Promise<T> {
  return expectJson<T>(await api(`/products/${id}/draft`, { token }), 200);
}

/** The product as D1 holds it (draft version, courses, wall), read through the `_dev` route, expecting 200. */
export async function storedProduct<T = Record<string, unknown>>(id: string): Promise<T> {
  return expectJson<T>(await api(`/_dev/products/${id}`), 200);
}
