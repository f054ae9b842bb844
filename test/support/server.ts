import { inject } from "vitest";

/*
 * The e2e server (`wrangler dev`, started by test/e2e/global-setup.ts) called over real HTTP, for the tests
 * of the e2e project (Node).
 */

type ServerCall = {
  method?: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as `X-Service-Store`. */
  store?: string;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  rawBody?: BodyInit;
};

/** The e2e server's address, e.g. `http://127.0.0.1:41234` (asked at call time: known once the global setup ran). */
const serverOrigin = () => inject("baseUrl");

/** Calls the e2e server's API at `/api/v1{path}`, as a client over HTTP would. */
export function serverApi(path: string, options: ServerCall = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  if (options.token) headers.set("Authorization", `Bearer ${options.token}`);
  if (options.store) headers.set("X-Service-Store", options.store);
  let body: BodyInit | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers.set("Content-Type", "application/json");
  }
  return fetch(`${serverOrigin()}/api/v1${path}`, { method: options.method ?? "GET", headers, body });
}
