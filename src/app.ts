import { Scalar } from "@scalar/hono-api-reference";
import { Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { methodNotAllowed } from "hono/method-not-allowed";
import { requestId } from "hono/request-id";
import { devFixturesEnabled } from "./config";
import { d1Session } from "./db/session";
import { demoToken } from "./dev/demo";
import { devRoutes } from "./dev/routes";
import type { AppEnv } from "./env";
import { eventRoutes } from "./events/routes";
import { apiCors, routeCors, uploadCors } from "./http/cors";
import { ApiError, messages, renderError } from "./http/errors";
import { finishDocument } from "./http/route";
import { createRouter } from "./http/router";
import { mediaRoutes } from "./media/routes";
import { opsRoutes } from "./ops/routes";
import { crossSellRoutes } from "./products/cross-sells/routes";
import { customFieldRoutes } from "./products/custom-field-routes";
import { productRoutes } from "./products/routes";
import { subscriptionRoutes } from "./subscriptions/routes";
import { completeRoutes } from "./uploads/complete/routes";
import { putPartRoute, putPartRoutes } from "./uploads/parts/routes";
import { prepareRoutes } from "./uploads/prepare/routes";
import { putBytesRoute, putBytesRoutes } from "./uploads/put/routes";
import { statusRoutes } from "./uploads/status/routes";

export const apiBasePath = "/api/v1";

/** Largest JSON body a bearer route reads; larger ones are refused before parsing. */
const maxJsonBodyBytes = 1024 * 1024;

/**
 * The reference page: Scalar from the Worker's own static assets (public/vendor, copied from the pinned npm
 * package), without its web fonts and telemetry, so the page needs no host but this one.
 */
const referenceConfiguration = {
  url: `${apiBasePath}/openapi.json`,
  pageTitle: "Storefront Checkout API",
  cdn: "/vendor/scalar/standalone.js",
  withDefaultFonts: false,
  telemetry: false,
  // A short list of operations: every tag open shows them all at once in the sidebar.
  defaultOpenAllTags: true,
  // "Ask AI" sends the document to Scalar's service, which the page's CSP (rightly) blocks: a dead button.
  agent: { disabled: true },
  // No favicon of our own: an empty one instead of the browser's request for /favicon.ico and its 404.
  favicon: "data:,",
};

/**
 * With `DEV_FIXTURES=on` (`npm run dev`, the end-to-end server) "Test Request" starts with the demo token
 * filled in, so a newcomer's first request answers the demo data. Read per request from `c.env`: a
 * deployment (DEV_FIXTURES off) never puts a token into the page.
 */
const referencePage = Scalar<AppEnv>((c) =>
  devFixturesEnabled(c.env)
    ? {
        ...referenceConfiguration,
        authentication: {
          preferredSecurityScheme: "bearerAuth",
          securitySchemes: { bearerAuth: { token: demoToken } },
        },
      }
    : referenceConfiguration,
);

/**
 * The browser refuses whatever the page would load from another host, so a Scalar update that starts
 * fetching from a CDN shows up as a broken page in the browser test rather than as a silent dependency.
 * Inline script and style are Scalar's own start-up code and theme.
 */
const referencePageHeaders: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  c.header(
    "Content-Security-Policy",
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'",
  );
};

/** The document's own fields; `serverUrl` is the API's base URL as the caller reached it. */
function openApiObject(serverUrl: string) {
  return {
    openapi: "3.1.0",
    info: {
      title: "Storefront Checkout API",
      version: "1.0.0",
      description:
        "Hosted checkout media, custom-field deletion, product publishing, cross-sell and subscription lists. Every route but the byte PUTs needs `Authorization: Bearer <token>`; those take the upload's `X-Upload-Token` instead.",
    },
    servers: [{ url: serverUrl }],
  };
}

/** The versioned API: every documented route, mounted feature by feature. */
function createApi() {
  const api = createRouter();
  // CORS by route: the byte PUTs answer any origin (their upload token is the credential), every other
  // route only the origins of CORS_ORIGINS.
  for (const route of [putBytesRoute, putPartRoute]) api.use(...routeCors(route, uploadCors));
  api.use("*", apiCors);
  api.use("*", async (c, next) => {
    // The dev fixture route has its own, larger limit; the byte PUT streams and checks its own length.
    if (c.req.path.startsWith(`${apiBasePath}/_dev/`) || c.req.method === "PUT") return next();
    return bodyLimit({
      maxSize: maxJsonBodyBytes,
      onError: () => {
        throw new ApiError(413, messages.payloadTooLarge);
      },
    })(c, next);
  });
  api.route("/", productRoutes);
  api.route("/", customFieldRoutes);
  api.route("/", crossSellRoutes);
  // Media uploads by operation: prepare, the byte PUT, the part PUT, complete, the upload's state.
  api.route("/", prepareRoutes(apiBasePath));
  api.route("/", putBytesRoutes);
  api.route("/", putPartRoutes);
  api.route("/", completeRoutes);
  api.route("/", statusRoutes(apiBasePath));
  api.route("/", subscriptionRoutes);
  api.route("/", eventRoutes);
  // They write stores of no caller: each forgets every kept read answer, after its own gate let the request in.
  api.route("/_dev", devRoutes);
  api.route("/_ops", opsRoutes);

  api.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description:
      "An API token of the store, as `Authorization: Bearer <token>`. Each edge isolate remembers a verified token for up to `TOKEN_CACHE_SECONDS` (30 by default), so revoking a token or changing its stores or abilities takes effect within that time; an unknown token is remembered as unknown for a few seconds.",
  });
  api.openAPIRegistry.registerComponent("securitySchemes", "uploadToken", {
    type: "apiKey",
    in: "header",
    name: "X-Upload-Token",
    description:
      "The one-upload token a reservation answers in `upload_request.headers`; it authorizes the byte PUTs of that upload only. The API token is never sent there.",
  });
  api.get("/openapi.json", (c) => {
    const document = api.getOpenAPI31Document(openApiObject(new URL(apiBasePath, c.req.url).toString()));
    return c.json(finishDocument(document));
  });
  api.get("/docs", referencePageHeaders, referencePage);
  return api;
}

/** Builds the Worker's app: request ids, 404/405, errors rendered as the specification's bodies. */
export function createApp() {
  const app = new Hono<AppEnv>();
  app.use(
    "*",
    requestId({ headerName: "", generator: (c) => c.req.header("CF-Ray") || crypto.randomUUID() }),
    async (c, next) => {
      await next();
      c.header("X-Request-Id", c.get("requestId"));
    },
    d1Session,
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) => {
        if (c.req.path.startsWith(`${apiBasePath}/_dev/`) && !devFixturesEnabled(c.env)) {
          return c.json({ message: messages.notFound }, 404);
        }
        return c.json({ message: messages.methodNotAllowed }, 405, { Allow: methods.join(", ") });
      },
    }),
  );
  app.route(apiBasePath, createApi());
  app.route("/", mediaRoutes);
  app.notFound((c) => c.json({ message: messages.notFound }, 404));
  app.onError(renderError);
  return app;
}
