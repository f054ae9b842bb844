// HTTP against the bench servers: the API's authenticated calls, uploads, timed reads, and load.
import autocannon from "autocannon";
import { bearer } from "./bench-fixture.mjs";
import { percentile } from "./bench-report.mjs";

/** An authenticated JSON call to the bench server; throws unless the status is `expected`. */
export async function call(server, method, path, { body, expected = 200, headers = {} } = {}) {
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: {
      ...bearer,
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== expected) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 500)}`);
  return { response, body: text ? JSON.parse(text) : null };
}

/** prepare + PUT of a file, an image unless `type` says otherwise (`name` says which in an error); the upload's id. */
export async function prepareAndPut(server, { bytes, filename, contentType, type = "image", name = filename }) {
  const { body: reservation } = await call(server, "POST", "/media-uploads", {
    body: { filename, content_type: contentType, size: bytes.length, type },
    expected: 201,
  });
  const put = await fetch(reservation.upload_request.url, {
    method: "PUT",
    headers: reservation.upload_request.headers,
    body: bytes,
  });
  if (put.status !== 204) throw new Error(`PUT ${name}: ${put.status} ${(await put.text()).slice(0, 300)}`);
  return reservation.id;
}

/** prepare + PUT + complete of an image: the hosted result, which must be converted (`hasField` set). */
export async function hostImage(server, image, hasField = "srcset") {
  const id = await prepareAndPut(server, image);
  const { body } = await call(server, "POST", `/media-uploads/${id}/complete`, { expected: 201 });
  if (!body[hasField]) throw new Error(`not converted: ${JSON.stringify(body)}`);
  return body;
}

/** A GET timed from here, body included; throws unless 200. */
export async function timedGet(url, init) {
  const start = performance.now();
  const response = await fetch(url, init);
  const bytes = Buffer.from(await response.arrayBuffer());
  const ms = performance.now() - start;
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${bytes.toString().slice(0, 300)}`);
  return { ms, bytes, type: response.headers.get("Content-Type") };
}

/**
 * `seconds` of autocannon on `url` over `connections`: answers per second, p50 and p99 (whole ms). Any error,
 * timeout or non-2xx fails it, naming `name`.
 */
export async function loadRoute(url, { connections, seconds, headers, name = url }) {
  const result = await autocannon({ url, connections, duration: seconds, ...(headers ? { headers } : {}) });
  const answered = result["2xx"];
  if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0 || answered === 0) {
    throw new Error(
      `${name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts under load`,
    );
  }
  return { rps: answered / result.duration, p50: result.latency.p50, p99: result.latency.p99 };
}

/**
 * `count` GETs one at a time over a kept-alive connection (what a single client waits): p50 and p99 in ms.
 * `accept(status)` says which answers are right.
 */
export async function sequentialGets(url, { count, headers, accept, name = url }) {
  const samples = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    const response = await fetch(url, headers ? { headers } : undefined);
    await response.arrayBuffer();
    samples.push(performance.now() - start);
    if (!accept(response.status)) throw new Error(`${name}: ${response.status}`);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}
