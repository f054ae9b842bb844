import { setting } from "../config";
import { ApiError } from "../http/errors";
import { type ImageInput, resizeHostedWebp } from "../uploads/convert";
import { readWebpHeader } from "../uploads/convert/webp-header";
import { storeCoordinator } from "../uploads/coordinator";
import { mediaKey, mediaWidthKey } from "../uploads/keys";
import { uploadMessages } from "../uploads/messages";
import { parseRange } from "./range";

/**
 * `{file_url}?width=N`: a converted image re-encoded N pixels wide (docs/responsive-images.md). Made once
 * from the hosted WebP, by the request that first asks for it, then served from the edge cache or R2.
 */

/** Serves an R2 object the way the media route does (ETag, HEAD, Range, If-None-Match): routes.ts's serveObject. */
export type ServeObject = (
  request: Request,
  bucket: R2Bucket,
  key: string,
  headersFor: (object: R2Object) => Record<string, string>,
) => Promise<Response>;

/** What the media route needs to answer a `?width=` request. */
export type WidthRequest = {
  request: Request;
  env: Env;
  /** Keeps the edge-cache write alive after the answer (the execution context's waitUntil). */
  waitUntil: (promise: Promise<unknown>) => void;
  storeId: string;
  uploadId: string;
  extension: string;
  serveObject: ServeObject;
};

const mediaHeaders = () => ({
  "Cache-Control": "public, max-age=31536000, immutable",
  "X-Content-Type-Options": "nosniff",
});

/** How long a request waits for another request's generation of the same width before answering 503. */
const waitLimitMs = 25_000;
/** Seconds a 503 asks the client to wait before trying again. */
const retryAfterSeconds = 2;

export const widthMessages = {
  unsupported: (widths: number[]) => `Unsupported width. Use one of: ${widths.join(", ")}.`,
  failed:
    "The image could not be made at this width just now. Nothing was stored; please try again in a moment (see Retry-After).",
};

let generations = 0;

/** How many widths this isolate has made (hosted images decoded): tests and the benchmark count with it. */
export function widthGenerations(): number {
  return generations;
}

/**
 * The `width` asked for, or null when the request has none. Anything but exactly one `width` parameter that
 * is one of the configured widths in plain decimal is 400, naming the widths.
 */
export function requestedWidth(url: URL, widths: number[]): number | null {
  const values = url.searchParams.getAll("width");
  if (values.length === 0) return null;
  const [value] = values;
  const width = values.length === 1 && value !== undefined && /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
  if (!widths.includes(width)) throw new ApiError(400, widthMessages.unsupported(widths));
  return width;
}

/** The height of an image `width × height` scaled to `target` pixels wide (at least 1). */
export function scaledHeight(width: number, height: number, target: number): number {
  return Math.max(1, Math.round((height * target) / width));
}

/**
 * The `?width=` hook of the public media route: the answer for the asked width, or null to serve what the
 * route serves without it (no `width`; media without narrower widths: video, animations; a width at or
 * above the image's own).
 */
export async function serveWidth(ask: WidthRequest): Promise<Response | null> {
  const { request, env, storeId, uploadId, extension } = ask;
  const url = new URL(request.url);
  if (!url.searchParams.has("width")) return null;
  const width = requestedWidth(url, setting(env, "IMAGE_WIDTHS"));
  if (width === null || extension !== "webp") return null;

  // One cache entry per image and width, whatever else the query holds.
  const cacheKey = `${url.origin}${url.pathname}?width=${width}`;
  const cached = await caches.default.match(cacheKey);
  if (cached) return answerFromCache(request, cached);

  const key = mediaWidthKey(storeId, uploadId, width);
  if (await env.BUCKET.head(key)) return serveStored(ask, key, cacheKey);

  const size = await hostedSize(env.BUCKET, mediaKey(storeId, uploadId, "webp"));
  if (!size || width >= size.width) return null;
  return makeOnce(ask, width, { width, height: scaledHeight(size.width, size.height, width) }, key, cacheKey);
}

/**
 * The size of a converted image, from its metadata (written by hosting), or for images hosted before it was
 * recorded from the WebP's first bytes; null when the object is absent or an animation (hosted unchanged).
 */
async function hostedSize(bucket: R2Bucket, key: string): Promise<{ width: number; height: number } | null> {
  const head = await bucket.head(key);
  if (!head) return null;
  const width = Number(head.customMetadata?.width);
  const height = Number(head.customMetadata?.height);
  if (Number.isInteger(width) && width > 0 && Number.isInteger(height) && height > 0) return { width, height };
  const start = await bucket.get(key, { range: { offset: 0, length: 64 } });
  if (!start) return null;
  try {
    const header = readWebpHeader(new Uint8Array(await start.arrayBuffer()));
    return header.animated ? null : { width: header.width, height: header.height };
  } catch {
    return null; // not a WebP the pipeline could read: served as it is
  }
}

/** Serves the stored variant from R2 and, for a whole GET, keeps a copy in the edge cache. */
async function serveStored(ask: WidthRequest, key: string, cacheKey: string): Promise<Response> {
  const response = await ask.serveObject(ask.request, ask.env.BUCKET, key, mediaHeaders);
  if (ask.request.method === "GET" && response.status === 200) {
    ask.waitUntil(caches.default.put(cacheKey, response.clone()));
  }
  return response;
}

/**
 * Makes the variant unless another request is making it: the store's coordinator hands out one claim per
 * image and width; the others look for the stored result until it is there, and answer 503 if the attempt
 * they waited on failed. A failure stores nothing, so the next request tries again.
 */
async function makeOnce(
  ask: WidthRequest,
  width: number,
  size: { width: number; height: number },
  key: string,
  cacheKey: string,
): Promise<Response> {
  try {
    return await claimAndMake(ask, width, size, key, cacheKey);
  } catch (error) {
    // The coordinator or R2 failed: nothing was stored, the next request tries again.
    logFailure(ask, width, error);
    return unavailable();
  }
}

function logFailure(ask: WidthRequest, width: number, error: unknown): void {
  console.error(
    JSON.stringify({
      level: "error",
      message: "media: making a width failed",
      store_id: ask.storeId,
      upload_id: ask.uploadId,
      width,
      error: String(error),
    }),
  );
}

async function claimAndMake(
  ask: WidthRequest,
  width: number,
  size: { width: number; height: number },
  key: string,
  cacheKey: string,
): Promise<Response> {
  const { env, storeId, uploadId } = ask;
  const coordinator = storeCoordinator(env, storeId);
  const claimKey = `${uploadId}/${width}`;
  const deadline = Date.now() + waitLimitMs;
  let waitedOn: number | null = null;
  let pause = 20;
  for (;;) {
    const claim = await coordinator.claimWidth(claimKey, waitedOn);
    if (claim.verdict === "failed") return unavailable();
    if (claim.verdict === "make") {
      let made = false;
      try {
        // Stored between this request's look and its claim: nothing to make.
        if (!(await env.BUCKET.head(key))) await make(env.BUCKET, mediaKey(storeId, uploadId, "webp"), key, size);
        made = true;
      } catch (error) {
        logFailure(ask, width, error);
      }
      // Unreported, the claim lapses after its lease and the next request takes it over.
      await coordinator.finishWidth(claimKey, claim.attempt, made).catch((error) => logFailure(ask, width, error));
      return made ? serveStored(ask, key, cacheKey) : unavailable();
    }
    waitedOn = claim.attempt;
    if (Date.now() + pause > deadline) return unavailable();
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 250);
    if (await env.BUCKET.head(key)) return serveStored(ask, key, cacheKey);
  }
}

/** Decodes the hosted WebP scaled to `size`, encodes it as conversion does, and stores it at `key`. */
async function make(bucket: R2Bucket, hostedKey: string, key: string, size: { width: number; height: number }) {
  const hosted = await bucket.head(hostedKey);
  if (!hosted) throw new Error(`hosted image missing at ${hostedKey}`);
  const input: ImageInput = {
    size: hosted.size,
    open: async () => {
      const object = await bucket.get(hostedKey);
      if (!object) throw new Error(`hosted image missing at ${hostedKey}`);
      return object.body;
    },
  };
  generations += 1;
  const variant = await resizeHostedWebp(input, size);
  await bucket.put(key, variant.bytes, {
    httpMetadata: { contentType: "image/webp" },
    customMetadata: { width: String(variant.width), height: String(variant.height) },
  });
}

function unavailable(): Response {
  return Response.json(
    { message: widthMessages.failed },
    { status: 503, headers: { "Retry-After": String(retryAfterSeconds), "Cache-Control": "no-store" } },
  );
}

/**
 * Answers from the edge cache's copy, as the R2 path would: 304 for a matching If-None-Match, HEAD without
 * the body, a single byte range (the variant is small: the range is cut from its bytes).
 */
async function answerFromCache(request: Request, cached: Response): Promise<Response> {
  const headers = new Headers(cached.headers);
  const etag = headers.get("ETag");
  const size = Number(headers.get("Content-Length"));
  if (etag !== null && request.headers.get("If-None-Match") === etag) {
    headers.delete("Content-Length");
    return new Response(null, { status: 304, headers });
  }
  const range = parseRange(request.headers.get("Range") ?? undefined, size);
  if (range === "unsatisfiable") {
    headers.delete("Content-Length");
    headers.set("Content-Range", `bytes */${size}`);
    return Response.json({ message: uploadMessages.rangeNotSatisfiable }, { status: 416, headers });
  }
  if (request.method === "HEAD") {
    if (range) {
      headers.set("Content-Range", `bytes ${range.offset}-${range.offset + range.length - 1}/${size}`);
      headers.set("Content-Length", String(range.length));
    }
    return new Response(null, { status: range ? 206 : 200, headers });
  }
  if (!range) return new Response(cached.body, { status: 200, headers });
  const bytes = new Uint8Array(await cached.arrayBuffer());
  headers.set("Content-Range", `bytes ${range.offset}-${range.offset + range.length - 1}/${size}`);
  headers.set("Content-Length", String(range.length));
  return new Response(bytes.subarray(range.offset, range.offset + range.length), { status: 206, headers });
}
