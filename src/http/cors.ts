import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { optionalSetting } from "../config";
import type { AppEnv } from "../env";

/** Headers browser code may read on API responses. */
const exposedHeaders = [
  "Retry-After",
  "RateLimit",
  "RateLimit-Policy",
  "X-Request-Id",
  "ETag",
  "X-D1-Bookmark",
  "Idempotent-Replayed",
];

/** CORS for bearer routes: only the origins listed in `CORS_ORIGINS` (comma-separated). */
const bearerCors = cors({
  origin: (origin, c) => {
    const allowed = optionalSetting(c.env, "CORS_ORIGINS") ?? [];
    return allowed.includes(origin) ? origin : null;
  },
  allowHeaders: ["Authorization", "Content-Type", "X-Service-Store", "X-D1-Bookmark", "Idempotency-Key"],
  allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
  exposeHeaders: exposedHeaders,
  maxAge: 600,
});

/** CORS for the byte PUTs (the whole body, or one part): any origin, so a browser can send the bytes straight to the edge. */
export const uploadCors = cors({
  origin: "*",
  allowHeaders: ["X-Upload-Token", "Content-Type"],
  allowMethods: ["PUT", "OPTIONS"],
  exposeHeaders: exposedHeaders,
  maxAge: 600,
});

/** A documented route as the router registers it: its method and its OpenAPI path (`/media-uploads/{id}`). */
type RouteAddress = { method: string; path: string };

/**
 * A route's own CORS policy, registered by the app on the route's path before the API's bearer policy:
 * it answers the route's requests and the preflights that ask for the route's method, and the bearer
 * policy then stands aside (`apiCors`). Requests of the path's other routes go on to the bearer policy.
 */
export function routeCors(
  route: RouteAddress,
  policy: MiddlewareHandler,
): [path: string, handler: MiddlewareHandler<AppEnv>] {
  const method = route.method.toUpperCase();
  return [
    route.path.replace(/\{(\w+)\}/g, ":$1"),
    (c, next) => {
      const asked = c.req.method === "OPTIONS" ? c.req.header("Access-Control-Request-Method") : c.req.method;
      if (asked?.toUpperCase() !== method) return next();
      c.set("corsAnswered", true);
      return policy(c, next);
    },
  ];
}

/** The API's CORS policy: the bearer one, on every path (404, 405 and 413 included), unless a route's own answered. */
export const apiCors: MiddlewareHandler<AppEnv> = (c, next) => (c.get("corsAnswered") ? next() : bearerCors(c, next));
