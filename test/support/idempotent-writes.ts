import { hookUrl, recordingQueue } from "./events";
import { customFields, seedProduct, seedStore, storeD1, uuid } from "./factories";
import { api, type BindingOverrides, expectStatus } from "./http";
import { coordinatorUploads } from "./idempotency";
import { pdf } from "./media-bytes";
import type { ApiCall } from "./request-init";
import { putBytes, reserve } from "./uploads";

/*
 * Every write of the API, each ready to send on fresh data with what its change did so far, for the
 * Idempotency-Key tests (test/http/idempotency*.test.ts).
 */

export type Call = ApiCall & { path: string };
/** A write ready to send, and what its change did so far (the same before and after a retry that runs nothing). */
export type Write = { storeId: string; token: string; call: Call; effect: () => Promise<unknown> };

/**
 * The queue every write's events go to: it keeps them, so the Worker's own consumer never delivers them to the
 * hooked products' URLs (a host that does not resolve, whose failed fetch workerd logs at length).
 */
const eventQueue = recordingQueue().queue;

/** Sends `call` with `key` as its Idempotency-Key (none for null), its events to {@link eventQueue}. */
export const send = (call: Call, key: string | null, overrides?: BindingOverrides) =>
  api(call.path, {
    ...call,
    headers: { ...call.headers, ...(key === null ? {} : { "Idempotency-Key": key }) },
    env: { WEBHOOK_QUEUE: eventQueue, ...overrides },
  });

/** The rows a change writes in the store's home, as a snapshot. */
export async function rows(storeId: string, query: string, ...values: unknown[]) {
  return (
    await (
      await storeD1(storeId)
    )
      .prepare(query)
      .bind(...values)
      .all()
  ).results;
}

export const eventsOf = (storeId: string, productId: string) =>
  rows(
    storeId,
    "SELECT id, type, status, next_attempt_at FROM webhook_events WHERE product_id = ? ORDER BY id",
    productId,
  );

/** A hooked product (its changes make events) with fields on every list and a draft overlay if asked. */
export async function hookedProduct(withDraft: boolean) {
  const { storeId, token } = await seedStore();
  const variantId = uuid();
  const fields = customFields("nip", "phone");
  const product = await seedProduct(storeId, {
    webhook_url: hookUrl(),
    custom_fields: fields,
    waitlist_custom_fields: fields,
    variants: [{ id: variantId, name: "V", amount: 100, currency: "pln", custom_fields: fields }],
    ...(withDraft ? { draft: { draft_version: 3, custom_fields: fields, waitlist_custom_fields: fields } } : {}),
  });
  const state = () =>
    Promise.all([
      eventsOf(storeId, product.id),
      rows(storeId, "SELECT owner_kind, name FROM custom_fields WHERE product_id = ? ORDER BY id", product.id),
      rows(storeId, "SELECT draft_version, document FROM drafts WHERE product_id = ?", product.id),
    ]);
  return { storeId, token, product, variantId, state };
}

/** Every write of the API (POST and DELETE under /api/v1), each on fresh data. */
export const writes: Record<string, () => Promise<Write>> = {
  "publish (no draft)": async () => {
    const { storeId, token, product, state } = await hookedProduct(false);
    return { storeId, token, call: { method: "POST", path: `/products/${product.id}/publish`, token }, effect: state };
  },
  "publish (draft)": async () => {
    const { storeId, token, product, state } = await hookedProduct(true);
    return { storeId, token, call: { method: "POST", path: `/products/${product.id}/publish`, token }, effect: state };
  },
  "draft delete": async () => {
    const { storeId, token, product, state } = await hookedProduct(true);
    return { storeId, token, call: { method: "DELETE", path: `/products/${product.id}/draft`, token }, effect: state };
  },
  ...Object.fromEntries(
    (["custom-fields", "waitlist-custom-fields", "variant"] as const).flatMap((list) => [
      [
        `live ${list} delete`,
        async (): Promise<Write> => {
          const { storeId, token, product, variantId, state } = await hookedProduct(false);
          const path =
            list === "variant"
              ? `/product-variants/${variantId}/custom-fields/nip`
              : `/products/${product.id}/${list}/nip`;
          return { storeId, token, call: { method: "DELETE", path, token }, effect: state };
        },
      ],
      [
        `draft ${list} delete`,
        async (): Promise<Write> => {
          const { storeId, token, product, variantId, state } = await hookedProduct(true);
          const tail = list === "variant" ? `variants/${variantId}/custom-fields` : list;
          const path = `/products/${product.id}/draft/${tail}/nip`;
          return { storeId, token, call: { method: "DELETE", path, token, body: { draft_version: 3 } }, effect: state };
        },
      ],
    ]),
  ),
  "secret rotation": async () => {
    const { storeId, token } = await seedStore();
    await expectStatus(await api("/webhooks/secret", { token }), 200);
    const effect = () =>
      rows(storeId, "SELECT secret, previous_secret FROM webhook_secrets WHERE store_id = ?", storeId);
    return { storeId, token, call: { method: "POST", path: "/webhooks/secret/rotate", token }, effect };
  },
  redeliver: async () => {
    const { storeId, token, product } = await hookedProduct(false);
    await expectStatus(
      await send({ method: "DELETE", path: `/products/${product.id}/custom-fields/phone`, token }, null),
      204,
    );
    const [event] = (await eventsOf(storeId, product.id)) as { id: string }[];
    await (await storeD1(storeId))
      .prepare("UPDATE webhook_events SET status = 'failed' WHERE id = ?")
      .bind(event?.id)
      .run();
    const path = `/webhook-events/${event?.id}/redeliver`;
    return { storeId, token, call: { method: "POST", path, token }, effect: () => eventsOf(storeId, product.id) };
  },
  prepare: async () => {
    const { storeId, token } = await seedStore();
    const body = { filename: "a.pdf", content_type: "application/pdf", size: 100, type: "file" };
    const call = { method: "POST", path: "/media-uploads", token, store: storeId, body };
    return { storeId, token, call, effect: () => coordinatorUploads(storeId) };
  },
  complete: async () => {
    const { storeId, token } = await seedStore();
    const bytes = pdf();
    const reservation = await reserve(token, storeId, bytes, { content_type: "application/pdf", type: "file" });
    await expectStatus(await putBytes(reservation, bytes), 204);
    const call = { method: "POST", path: `/media-uploads/${reservation.id}/complete`, token, store: storeId };
    return { storeId, token, call, effect: () => coordinatorUploads(storeId) };
  },
};

export const isUpload = (name: string) => name === "prepare" || name === "complete";

/** The hash under which a token's keys are recorded. */
export async function tokenHash(token: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}
