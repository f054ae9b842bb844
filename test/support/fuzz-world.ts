import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { inArray } from "drizzle-orm";
import { expect } from "vitest";
import demo from "../../fixtures/demo.json";
import { createApp } from "../../src/app";
import { webhookEvents } from "../../src/db/schema";
import { bindingHomes } from "../../src/db/shards";
import { FixtureDocument } from "../../src/dev/fixture-schema";
import { loadFixtures } from "../../src/dev/fixtures";
import { insertEvent, newEvent } from "../../src/events/records";
import { recordingQueue } from "./events";
import { customFields, productInput, seedToken, storeDb, variantInput } from "./factories";
import { origin } from "./http";
import { png } from "./media-bytes";

/*
 * The world the OpenAPI fuzzer (test/openapi/fuzz.test.ts) aims its requests at, and how it sends them.
 */

export const app = createApp();
/** Limits raised as `wrangler dev --var` would: the fuzzer's thousands of calls a minute are not the subject. */
export const vars = {
  API_LIMIT_PER_MINUTE: "1000000",
  PUT_LIMIT_PER_MINUTE: "1000000",
  PART_LIMIT_PER_MINUTE: "1000000",
  COMPLETE_LIMIT_PER_MINUTE: "1000000",
};

export type Answer = { status: number; contentType: string | null; text: string };

/**
 * Events the fuzzed calls make (publish, redeliver) are enqueued on a recording queue: delivered for real, they
 * would be posted to the fixture's hooks.example.test, which never resolves.
 */
const webhookQueue = recordingQueue().queue;

/** One request through the Worker's app, its background work (storing, hosting) finished before the next. */
export async function send(request: Request): Promise<Answer> {
  const ctx = createExecutionContext();
  const response = await app.fetch(request, { ...env, ...vars, WEBHOOK_QUEUE: webhookQueue }, ctx);
  const text = await response.text();
  await waitOnExecutionContext(ctx);
  return { status: response.status, contentType: response.headers.get("Content-Type"), text };
}

// ---------------------------------------------------------------------------------------------------------
// The world the requests are aimed at: the demo fixture, one product whose draft has every kind of custom
// field, and uploads in each state.

export const [store, otherStore] = demo.stores;
const [fullToken, readOnlyToken] = demo.tokens;
if (!store || !otherStore || !fullToken || !readOnlyToken)
  throw new Error("fixtures/demo.json: two stores, two tokens");

export const draftVariant = variantInput({ status: "draft", custom_fields: customFields("rozmiar", "kolor") });
/** The demo has no draft with waitlist or variant fields; this product gives the draft deletes something to delete. */
export const draftedProduct = productInput(store.id, {
  custom_fields: customFields("nip", "telefon"),
  waitlist_custom_fields: customFields("email"),
  variants: [variantInput({ custom_fields: customFields("rozmiar") })],
  draft: {
    draft_version: 1,
    custom_fields: customFields("nip", "telefon", "firma"),
    waitlist_custom_fields: customFields("email", "miasto"),
    variants: [draftVariant],
  },
});
export const fixture = FixtureDocument.parse({ ...demo, products: [...demo.products, draftedProduct] });

/** Events of the demo store for the event-log routes: one of each type, as their changes would write them. */
const [eventProduct] = demo.products;
if (!eventProduct) throw new Error("fixtures/demo.json: a product");
export const worldEvents = [
  newEvent({ id: eventProduct.id, storeId: store.id }, "product.published", "https://hooks.example.test/a", {}),
  newEvent(
    { id: eventProduct.id, storeId: store.id },
    "product.custom_field.deleted",
    "https://hooks.example.test/b",
    {},
  ),
];

/** Loads the world again, undoing what a fuzzed operation changed (fixtures upsert by id; events are rewritten). */
export const loadWorld = async () => {
  await loadFixtures(bindingHomes(env), fixture);
  // The world's events belong to `store`: they live in its home database.
  const db = await storeDb(store.id);
  await db.delete(webhookEvents).where(
    inArray(
      webhookEvents.id,
      worldEvents.map((event) => event.id),
    ),
  );
  for (const event of worldEvents) await insertEvent(db, event);
};

/** A prepared upload: what prepare answered and what it was told. `parts` for a multipart one. */
export type Reservation = {
  id: string;
  token: string;
  contentType: string;
  size: number;
  parts?: { size: number; count: number };
};

export const tokens = { all: fullToken.token, readOnly: readOnlyToken.token, bothStores: "" };
/** Reserved uploads, single-PUT and multipart, for the byte PUTs; stored images (first) for complete. */
export const uploads = { reserved: [] as Reservation[], stored: [] as Reservation[] };

export async function prepare(body: Record<string, unknown>): Promise<Reservation> {
  const answer = await send(
    new Request(`${origin}/api/v1/media-uploads`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${tokens.all}`,
        "X-Service-Store": store?.id ?? "",
        "Content-Type": "application/json",
      },
      body: JSON.stringify(body),
    }),
  );
  expect(answer.status, answer.text).toBe(201);
  const reservation = JSON.parse(answer.text) as {
    id: string;
    upload_request: { headers: Record<string, string> };
    multipart?: { part_size: number; part_count: number };
  };
  return {
    id: reservation.id,
    token: reservation.upload_request.headers["X-Upload-Token"] ?? "",
    contentType: String(body.content_type),
    size: Number(body.size),
    parts: reservation.multipart && { size: reservation.multipart.part_size, count: reservation.multipart.part_count },
  };
}

/**
 * Loads the world and prepares its uploads: 48 reserved (every fourth kind of file, every third in parts) and
 * 6 stored PNG images; a token of both stores.
 */
export const prepareWorld = async () => {
  await loadWorld();
  tokens.bothStores = await seedToken([store.id, otherStore.id]);
  const kinds = ["image/png", "application/pdf", "video/mp4", "application/octet-stream"];
  for (let i = 0; i < 48; i += 1) {
    uploads.reserved.push(
      await prepare({
        filename: `plik-${i}.bin`,
        content_type: kinds[i % kinds.length],
        size: 1 + ((i * 977) % 4096),
        type: "file",
        multipart: i % 3 === 0,
      }),
    );
  }
  const image = await png(32, 24);
  for (let i = 0; i < 6; i += 1) {
    const reservation = await prepare({ filename: `obraz-${i}.png`, content_type: "image/png", size: image.length });
    const put = await send(
      new Request(`${origin}/api/v1/media-uploads/${reservation.id}`, {
        method: "PUT",
        headers: {
          "X-Upload-Token": reservation.token,
          "Content-Type": reservation.contentType,
          "Content-Length": String(reservation.size),
        },
        body: image,
      }),
    );
    expect(put.status, put.text).toBe(204);
    uploads.stored.push(reservation);
  }
};
