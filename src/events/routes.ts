import { z } from "@hono/zod-openapi";
import { setting } from "../config";
import { keyStatements } from "../db/idempotency-keys";
import { webhookEventStatuses } from "../db/schema";
import { ApiError } from "../http/errors";
import { keyClaim } from "../http/idempotency";
import { integerQuery, Pagination, pagination } from "../http/pagination";
import { bearerErrors, bearerRoute, errorResponses } from "../http/route";
import { createRouter } from "../http/router";
import { jsonAnswer } from "../lib/idempotency";
import { uuidSource } from "../lib/ids";
import { enqueueInBackground } from "./dispatch";
import { eventDetail, eventMessages, eventSummary, listEvents, markForRedelivery, requireEvent } from "./log";
import { eventTypes } from "./records";
import { rotateStoreSecret, storeSecretRow } from "./secrets";
import { targetRefusal } from "./targets";

const guard = { ability: "webhooks:manage", store: "unambiguous" } as const;
const timestamp = z.iso.datetime({ offset: true });

const WebhookSecret = z
  .object({
    secret: z.string().openapi({ description: "`whsec_` + base64 of 32 random bytes", example: "whsec_..." }),
  })
  .openapi("WebhookSecret");

const WebhookEvent = z
  .object({
    id: z.string().openapi({ description: "`evt_<uuid>`, the `webhook-id` header of every attempt" }),
    type: z.enum(eventTypes),
    product_id: z.uuid(),
    url: z.string().openapi({ description: "The product's webhook_url when the event was made" }),
    status: z.enum(webhookEventStatuses),
    attempts: z.number().int(),
    next_attempt_at: timestamp.nullable().openapi({ description: "Null once delivered or failed" }),
    last_attempt_at: timestamp.nullable(),
    last_response_status: z.number().int().nullable().openapi({ description: "Null when there was no answer" }),
    created_at: timestamp,
  })
  .openapi("WebhookEvent");

const WebhookAttempt = z
  .object({
    at: timestamp,
    response_status: z.number().int().nullable().openapi({ description: "Null when there was no answer" }),
    error: z.string().nullable().openapi({ description: "Timeout or network error; null on an answer" }),
    duration_ms: z.number().int(),
  })
  .openapi("WebhookAttempt");

const WebhookEventDetail = WebhookEvent.extend({
  payload: z
    .object({ type: z.enum(eventTypes), timestamp, data: z.record(z.string(), z.unknown()) })
    .nullable()
    .openapi({ description: "The body every attempt sends (null only until a publish's answer is written)" }),
  attempt_log: z.array(WebhookAttempt),
}).openapi("WebhookEventDetail");

const WebhookEventList = z.object({ items: z.array(WebhookEvent), pagination: Pagination }).openapi("WebhookEventList");

/** An optional filter: empty is the same as absent (docs/api.md, "Lists"). */
const filter = <T extends z.ZodType>(schema: T, name: string) =>
  z
    .preprocess((value) => (value === "" ? undefined : value), schema.optional())
    .openapi({ param: { name, in: "query" } });

const ListQuery = z.object({
  page: integerQuery({ name: "page", min: 1, fallback: 1 }).openapi({ param: { name: "page", in: "query" } }),
  per_page: integerQuery({ name: "per page", min: 1, max: 100, fallback: 25 }).openapi({
    param: { name: "per_page", in: "query" },
  }),
  status: filter(z.enum(webhookEventStatuses), "status"),
  type: filter(z.enum(eventTypes), "type"),
  product: filter(
    z.uuid().transform((value) => value.toLowerCase()),
    "product",
  ),
});

const EventParams = z.object({
  id: z
    .string()
    .regex(new RegExp(`^evt_${uuidSource}$`, "i"), {
      error: eventMessages.invalidEventId,
    })
    .overwrite((value) => value.toLowerCase())
    .openapi({ param: { name: "id", in: "path" }, description: "Event id, `evt_<uuid>`" }),
});

const storeNote =
  "The store is `X-Service-Store`, or the token's only store; a token of several stores must send the header.";

/** The webhook secret and the event log of a store (ability `webhooks:manage`). */
export const eventRoutes = createRouter()
  .openapi(
    bearerRoute({
      method: "get",
      path: "/webhooks/secret",
      operationId: "getWebhookSecret",
      summary: "Read the store's webhook signing secret",
      description: `Made on first read. Receivers verify \`webhook-signature\` with it (Standard Webhooks). ${storeNote}`,
      tags: ["Webhooks"],
      guard,
      responses: {
        200: { description: "The secret", content: { "application/json": { schema: WebhookSecret } } },
        ...errorResponses(400, ...bearerErrors),
      },
    }),
    async (c) => {
      const row = await storeSecretRow(c.var.db, c.var.caller.storeId);
      return c.json({ secret: row.secret }, 200);
    },
  )
  .openapi(
    bearerRoute({
      method: "post",
      path: "/webhooks/secret/rotate",
      operationId: "rotateWebhookSecret",
      summary: "Rotate the store's webhook signing secret",
      description: `Answers the new secret. For \`WEBHOOK_SECRET_OVERLAP_SECONDS\` (a day by default) every delivery carries two signatures, space-separated: the new secret's and the old one's. ${storeNote}`,
      tags: ["Webhooks"],
      guard,
      responses: {
        200: { description: "The new secret", content: { "application/json": { schema: WebhookSecret } } },
        ...errorResponses(400, ...bearerErrors),
      },
    }),
    async (c) => {
      const overlap = setting(c.env, "WEBHOOK_SECRET_OVERLAP_SECONDS");
      // The secret row made if missing, beside the Idempotency-Key's claim: one round trip for both.
      const [, { ref }] = await Promise.all([storeSecretRow(c.var.db, c.var.caller.storeId), keyClaim(c)]);
      return c.json({ secret: await rotateStoreSecret(c.var.db, c.var.caller.storeId, overlap, { key: ref }) }, 200);
    },
  )
  .openapi(
    bearerRoute({
      method: "get",
      path: "/webhook-events",
      operationId: "listWebhookEvents",
      summary: "List the store's webhook events",
      description: [
        "Newest first; events are kept `WEBHOOK_RETENTION_DAYS` (30 by default). Filters: `status`, `type`, `product` (a product id); an empty parameter is no filter.",
        storeNote,
      ].join("\n\n"),
      tags: ["Webhooks"],
      guard,
      request: { query: ListQuery },
      responses: {
        200: { description: "A page of events", content: { "application/json": { schema: WebhookEventList } } },
        ...errorResponses(400, ...bearerErrors, 422),
      },
    }),
    async (c) => {
      const query = c.req.valid("query");
      const retention = setting(c.env, "WEBHOOK_RETENTION_DAYS");
      const { items, total } = await listEvents(
        c.var.db,
        c.var.caller.storeId,
        { status: query.status, type: query.type, productId: query.product },
        { page: query.page, perPage: query.per_page },
        retention,
      );
      return c.json({ items, pagination: pagination(query.page, query.per_page, total, 1) }, 200);
    },
  )
  .openapi(
    bearerRoute({
      method: "get",
      path: "/webhook-events/{id}",
      operationId: "getWebhookEvent",
      summary: "Read a webhook event with its payload and attempt log",
      description: `The body every attempt sends, and one line per attempt. ${storeNote}`,
      tags: ["Webhooks"],
      guard,
      request: { params: EventParams },
      responses: {
        200: { description: "The event", content: { "application/json": { schema: WebhookEventDetail } } },
        ...errorResponses(400, ...bearerErrors, 404),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const row = await requireEvent(c.var.db, c.var.caller.storeId, id, setting(c.env, "WEBHOOK_RETENTION_DAYS"));
      return c.json(eventDetail(row), 200);
    },
  )
  .openapi(
    bearerRoute({
      method: "post",
      path: "/webhook-events/{id}/redeliver",
      operationId: "redeliverWebhookEvent",
      summary: "Redeliver a webhook event",
      description: `One new attempt soon, with the same \`webhook-id\` (receivers that already have it drop it). A failed or delivered event is pending again for that one attempt; a pending one is due at once. An event whose \`url\` may not be sent to (not \`https:\`, with credentials, or a host on this machine or a private network) answers 422 and stays as it was. ${storeNote}`,
      tags: ["Webhooks"],
      guard,
      request: { params: EventParams },
      responses: {
        202: { description: "The event, pending", content: { "application/json": { schema: WebhookEvent } } },
        ...errorResponses(400, ...bearerErrors, 404, 422),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const retention = setting(c.env, "WEBHOOK_RETENTION_DAYS");
      const [row, { ref }] = await Promise.all([
        requireEvent(c.var.db, c.var.caller.storeId, id, retention),
        keyClaim(c),
      ]);
      // The consumer would refuse it anyway (delivery.ts); the caller learns why now, and the event stays as it was.
      const refused = targetRefusal(row.url, () => setting(c.env, "WEBHOOK_ALLOW_HTTP"));
      if (refused !== null) throw new ApiError(422, eventMessages.targetRefused(refused));
      const updated = await markForRedelivery(c.var.db, row, new Date(), (event) =>
        keyStatements(c.var.db, ref, jsonAnswer(202, eventSummary(event))),
      );
      enqueueInBackground(c, updated.id);
      return c.json(eventSummary(updated), 202);
    },
  );
