import { z } from "@hono/zod-openapi";
import { Pagination, pagination } from "../http/pagination";
import { bearerErrors, bearerRoute, errorResponses } from "../http/route";
import { createRouter } from "../http/router";
import { listRequest, SubscriptionListQuery, subscriptionQueryHook } from "./filters";
import { listSubscriptions } from "./query";
import { Subscription } from "./resource";

const SubscriptionList = z.object({ items: z.array(Subscription), pagination: Pagination }).openapi("SubscriptionList");

const listRoute = bearerRoute({
  method: "get",
  path: "/subscriptions",
  operationId: "listSubscriptions",
  summary: "List a store's subscriptions",
  description: [
    "Newest first unless `sort` says otherwise. Every subscription of the store is listed, including ones the customer hid from their portal.",
    "`pagination.total` is the filtered total (`per_page=1` gives a count); `total_pages` is 0 when nothing matches.",
    "Date bounds are whole UTC days, both ends inclusive; a `_from` after its `_to` matches nothing.",
    "An omitted or empty parameter is no filter; a repeated parameter is read by its first occurrence.",
    "A non-empty value that cannot be parsed answers 400 `Invalid value for '<field>': '<value>'`, naming the first such field in the order the parameters are listed here.",
    "The store is `X-Service-Store`, or the token's only store; a token of several stores must send the header.",
  ].join("\n\n"),
  tags: ["Subscriptions"],
  guard: { ability: "subscriptions:read", store: "unambiguous" },
  request: { query: SubscriptionListQuery },
  responses: {
    200: { description: "A page of subscriptions", content: { "application/json": { schema: SubscriptionList } } },
    ...errorResponses(400, ...bearerErrors),
  },
});

/** The subscription list of a store. */
export const subscriptionRoutes = createRouter().openapi(
  listRoute,
  async (c) => {
    const request = listRequest(c.req.valid("query"));
    const { items, total } = await listSubscriptions(c.var.db, c.var.caller.storeId, request);
    return c.json({ items, pagination: pagination(request.page, request.perPage, total, 0) }, 200);
  },
  subscriptionQueryHook,
);
