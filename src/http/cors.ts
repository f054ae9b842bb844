import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { optionalSetting } from "../config";

/** Headers browser code may read on API responses. */
export const exposedHeaders = ["Retry-After", "RateLimit", "RateLimit-Policy", "X-Request-Id", "ETag", "X-D1-Bookmark"];

/** CORS for bearer routes: only the origins listed in `CORS_ORIGINS` (comma-separated). */
export const bearerCors = cors({
  origin: (origin, c) => {
    const allowed = optionalSetting(c.env, "CORS_ORIGINS") ?? [];
    return allowed.includes(origin) ? origin : null;
  },
  allowHeaders: ["Authorization", "Content-Type", "X-Service-Store", "X-D1-Bookmark"],
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

const bytePutPath = /\/media-uploads\/[^/]+(\/parts\/[^/]+)?$/;

/** The byte PUT (and its preflight) take the open policy; every other route the bearer one. */
export const apiCors: MiddlewareHandler = (c, next) => {
  const method = c.req.method === "OPTIONS" ? c.req.header("Access-Control-Request-Method") : c.req.method;
  return method?.toUpperCase() === "PUT" && bytePutPath.test(c.req.path) ? uploadCors(c, next) : bearerCors(c, next);
};
