import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { createApp } from "../../src/app";
import { type ApiCall, apiRequestInit } from "./request-init";

export { type AnyResponse, expectJson, expectStatus } from "./responses";

export const origin = "https://checkout.test";

/** Bindings a test puts in place of the configured ones: variables as `wrangler dev --var` sets them, or stand-ins. */
export type BindingOverrides = Partial<Record<keyof Env, unknown>>;

type CallOptions = ApiCall & {
  /** Bindings over the test ones: the call then goes to the app with them (see {@link fetchApp}). */
  env?: BindingOverrides;
};

/**
 * The test bindings with `overrides` over them, typed as the Worker's: a variable set to a value wrangler.toml
 * never holds (`"abc"` where a number is meant), or a stand-in for a binding.
 */
export function withBindings(overrides: BindingOverrides): Env {
  return { ...env, ...overrides } as Env;
}

/** Calls the Worker's own fetch handler at `/api/v1{path}`, as a client would. */
export function api(path: string, options: CallOptions = {}): Promise<Response> {
  const init = apiRequestInit(options);
  if (options.env) return fetchApp(`/api/v1${path}`, init, options.env);
  return exports.default.fetch(new Request(`${origin}/api/v1${path}`, init));
}

let app: ReturnType<typeof createApp> | undefined;

/**
 * Calls the app at `url` (absolute, or a path on the test origin) with `overrides` over the test bindings,
 * as a deployment configured that way would answer, and waits for what the request left running after its
 * answer (`waitUntil`: background refills, enqueues).
 */
export async function fetchApp(url: string, init: RequestInit = {}, overrides: BindingOverrides = {}) {
  const ctx = createExecutionContext();
  const absolute = url.startsWith("http") ? url : `${origin}${url}`;
  app ??= createApp();
  const response = await app.fetch(new Request(absolute, init), withBindings(overrides), ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

/**
 * The parsed JSON body, without a status check: for a caller that has just checked the status. Prefer
 * {@link expectJson}, which checks the status first and shows the body when it is not the expected one.
 */
export async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}
