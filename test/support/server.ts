import { inject } from "vitest";
import { type ApiCall, apiRequestInit } from "./request-init";

/*
 * The e2e server (`wrangler dev`, started by test/e2e/global-setup.ts) called over real HTTP, for the tests
 * of the e2e project (Node).
 */

/** The e2e server's address, e.g. `http://127.0.0.1:41234` (asked at call time: known once the global setup ran). */
const serverOrigin = () => inject("baseUrl");

/** Calls the e2e server's API at `/api/v1{path}`, as a client over HTTP would. */
export function serverApi(path: string, options: ApiCall = {}): Promise<Response> {
  return fetch(`${serverOrigin()}/api/v1${path}`, apiRequestInit(options));
}
