import { exports } from "cloudflare:workers";

export const origin = "https://checkout.test";

type CallOptions = {
  method?: string;
  token?: string | null;
  store?: string;
  body?: unknown;
  rawBody?: BodyInit;
  headers?: Record<string, string>;
};

/** Calls the Worker's own fetch handler at `/api/v1{path}`, as a client would. */
export function api(path: string, options: CallOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  if (options.token) headers.set("Authorization", `Bearer ${options.token}`);
  if (options.store) headers.set("X-Service-Store", options.store);
  let body: BodyInit | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers.set("Content-Type", "application/json");
  }
  return exports.default.fetch(
    new Request(`${origin}/api/v1${path}`, { method: options.method ?? "GET", headers, body }),
  );
}

/** Status first, then the parsed JSON body. */
export async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}
