import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env";
import { renderError } from "./errors";
import { validationHook } from "./validate";

/**
 * The router of every feature: the app's environment, the validation hook that turns zod issues into the
 * specification's 400/422 bodies, and the one error renderer. Unknown paths (404) and known paths with
 * another method (405) are answered once, by the app that mounts the routers (app.ts). A GET route also
 * answers HEAD (Hono runs it and drops the body), so no feature registers HEAD itself.
 */
export function createRouter() {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  router.onError(renderError);
  return router;
}
