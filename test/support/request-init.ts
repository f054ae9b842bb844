/** What an API call of a test sends: method, bearer token, store header, JSON or raw body, other headers. */
export type ApiCall = {
  method?: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string | null;
  /** Sent as `X-Service-Store`. */
  store?: string;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  rawBody?: BodyInit;
};

/**
 * The request init of an API call, the same for the Worker's own fetch handler (http.ts) and the e2e server
 * over HTTP (server.ts). Plain code, so both the workerd and the Node test projects import it.
 */
export function apiRequestInit(call: ApiCall): RequestInit {
  const headers = new Headers(call.headers);
  if (call.token) headers.set("Authorization", `Bearer ${call.token}`);
  if (call.store) headers.set("X-Service-Store", call.store);
  let body: BodyInit | undefined = call.rawBody;
  if (call.body !== undefined) {
    body = JSON.stringify(call.body);
    headers.set("Content-Type", "application/json");
  }
  return { method: call.method ?? "GET", headers, body };
}
