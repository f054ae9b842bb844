// A Worker entry for `npm run bench` only (`wrangler dev scripts/bench-worker.ts`), never deployed. It is
// the project's own Worker, unchanged, plus two things the benchmarks need and the app must not have:
//
// - its D1 binding wrapped so that every response says how many SQL statements the request ran and in
//   how many round trips (headers X-Bench-D1-Statements, X-Bench-D1-Round-Trips). That makes "D1
//   statements per publish" a measurement of the real code path in workerd, not a count read off the code;
// - its Durable Object namespaces wrapped likewise (header X-Bench-DO-Calls: RPCs started during the
//   request, background lease refills included);
// - with the variable BENCH_DELAY_MS set, every D1 round trip and Durable Object call waits that long
//   first: what a Worker that far from D1's primary and the objects sees (bench-latency.mjs);
// - PUT /_bench/stream/{discard,r2,r2-transform}: the steps of the upload PUT taken one at a time (read the
//   body and drop it; stream it into R2 through a FixedLengthStream; the same through a JS TransformStream
//   first, as the PUT's byte counter did until this measurement had it removed), so the report can say
//   where an upload's time and memory go;
// - PUT /_bench/stage (the body stored in R2 at a new key, answered with its size) and
//   POST /_bench/convert/{in-process,binding} ({key, size, format, maxEdge} as JSON): the conversion of a staged
//   image as complete runs it (the source read from R2 through `r2Source`, the WebP streamed into R2 beside it),
//   the converter's job run either here, in this isolate, by the converter's own code (`convertStill`, as the
//   API ran it before the conversion had a Worker of its own), or through the CONVERTER binding as complete asks
//   it, so bench-two-workers.mjs can time what the binding adds.

import { convertStill } from "../converter/src/jobs";
import { r2Source } from "../src/converter/client";
import type { ConverterService, ConvertJob, ConvertOutcome, StillFormat } from "../src/converter/contract";
import { homeBinding, homeNames } from "../src/db/shards";
import worker from "../src/index";
import { countingD1, countingNamespace, delayedBy, type Trips } from "./counting-bindings";

export { RateLimiter, StoreCoordinator } from "../src/index";

/** The steps of the upload PUT, one at a time (see the top of the file). */
async function streamStep(step: string, request: Request, env: Env): Promise<Response> {
  const body = request.body;
  const length = Number(request.headers.get("Content-Length"));
  if (!body || !Number.isSafeInteger(length)) return new Response("a body with a Content-Length", { status: 400 });
  const key = `bench/stream/${crypto.randomUUID()}`;
  if (step === "discard") {
    const reader = body.getReader();
    for (;;) if ((await reader.read()).done) break;
  } else if (step === "r2") {
    await env.BUCKET.put(key, body.pipeThrough(new FixedLengthStream(length)));
  } else if (step === "r2-transform") {
    let bytes = 0;
    const counter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    await env.BUCKET.put(key, body.pipeThrough(counter).pipeThrough(new FixedLengthStream(length)));
    if (bytes !== length) return new Response("short body", { status: 400 });
  } else {
    return new Response("unknown step", { status: 404 });
  }
  // The object is left in the throwaway bucket: deleting it would add time the app's PUT does not spend.
  return new Response(null, { status: 204 });
}

/** Stores the body at a new key of the bucket, untimed setup for {@link convertJob}; answers the key and size. */
async function stage(request: Request, env: Env): Promise<Response> {
  const key = `bench/staged/${crypto.randomUUID()}`;
  const bytes = await request.arrayBuffer();
  await env.BUCKET.put(key, bytes);
  return Response.json({ key, size: bytes.byteLength });
}

/**
 * The conversion of the image staged at `key`, the converter's job run in this isolate or through the binding
 * (see the top of the file), its WebP streamed into R2 at `key`.webp as complete writes it; answers the outcome
 * without the body.
 */
async function convertJob(how: string, request: Request, env: Env): Promise<Response> {
  const { key, size, format, maxEdge } = await request.json<{
    key: string;
    size: number;
    format: StillFormat;
    maxEdge: number;
  }>();
  const job: ConvertJob = { source: r2Source(env.BUCKET, key, size), format, maxEdge };
  const converter: ConverterService = env.CONVERTER;
  let outcome: ConvertOutcome;
  if (how === "in-process") outcome = await convertStill(job);
  else if (how === "binding") outcome = await converter.convert(job);
  else return new Response("unknown way", { status: 404 });
  if (!("converted" in outcome)) return Response.json(outcome);
  const { body, ...webp } = outcome.converted;
  const { readable, writable } = new FixedLengthStream(webp.size);
  await Promise.all([
    env.BUCKET.put(`${key}.webp`, readable, {
      httpMetadata: { contentType: "image/webp" },
      customMetadata: { width: String(webp.width), height: String(webp.height) },
    }),
    body.pipeTo(writable),
  ]);
  return Response.json({ converted: webp });
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (request.method === "PUT" && url.pathname.startsWith("/_bench/stream/")) {
      return streamStep(url.pathname.slice("/_bench/stream/".length), request, env);
    }
    if (request.method === "PUT" && url.pathname === "/_bench/stage") return stage(request, env);
    if (request.method === "POST" && url.pathname.startsWith("/_bench/convert/")) {
      return convertJob(url.pathname.slice("/_bench/convert/".length), request, env);
    }
    const far = delayedBy(Number((env as unknown as { BENCH_DELAY_MS?: string }).BENCH_DELAY_MS ?? 0) || 0);
    const trips: Trips = [];
    const calls = { count: 0 };
    const response = await worker.fetch(
      request,
      {
        ...env,
        // The global database and every shard: a request's trips to any of them, counted and delayed alike.
        ...Object.fromEntries(homeNames(env).map((name) => [name, countingD1(homeBinding(env, name), trips, far)])),
        RATE_LIMITER: countingNamespace(env.RATE_LIMITER, calls, far),
        STORE_COORDINATOR: countingNamespace(env.STORE_COORDINATOR, calls, far),
      },
      ctx,
    );
    const counted = new Response(response.body, response);
    counted.headers.set("X-Bench-D1-Statements", String(trips.reduce((sum, n) => sum + n, 0)));
    counted.headers.set("X-Bench-D1-Round-Trips", trips.join(" "));
    counted.headers.set("X-Bench-DO-Calls", String(calls.count));
    return counted;
  },
} satisfies ExportedHandler<Env>;
