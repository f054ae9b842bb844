import { cors } from "hono/cors";

/** Headers browser code may read on API responses. */
export const exposedHeaders = ["Retry-After", "RateLimit", "RateLimit-Policy", "X-Request-Id", "ETag"];

/** CORS for bearer routes: only the origins listed in `CORS_ORIGINS` (comma-separated). */
export const bearerCors = cors({
  origin: (origin, c) => {
    const allowed = String(c.env.CORS_ORIGINS ?? "")
      .split(",")
      .map((entry) => entry.trim())
      .filter(Boolean);
    return allowed.includes(origin) ? origin : null;
  },
  allowHeaders: ["Authorization", "Content-Type", "X-Service-Store"],
  allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
  exposeHeaders: exposedHeaders,
  maxAge: 600,
});
