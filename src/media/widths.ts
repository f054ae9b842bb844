import { setting } from "../config";
import { askConverter, converterRetryAfterSeconds, r2Source } from "../converter/client";
import type { Refusal, SourceBytes } from "../converter/contract";
import { ApiError } from "../http/errors";
import { renewEvery } from "../lib/lease";
import { log } from "../lib/log";
import { mediaAvifKey, mediaKey, mediaWidthKey } from "../storage/keys";
import { widthClaims } from "../uploads/for-media";
import { mediaMessages } from "./messages";
import { parseRange } from "./range";
import { type RememberedVariant, VariantMemory } from "./variant-memory";

/**
 * `{file_url}?width=N` and `?format=`: a converted image re-encoded N pixels wide, or as an AVIF at full size
 * or N pixels wide (docs/responsive-images.md). Made once from the hosted WebP by the converter Worker, for the
 * request that first asks for it, then served from the edge cache or R2.
 */

/** The formats a variant is made in. */
type Format = "webp" | "avif";

/** What the media route needs to answer a `?width=` request. */
type WidthRequest = {
  request: Request;
  env: Env;
  /** Keeps the edge-cache write alive after the answer (the execution context's waitUntil). */
  waitUntil: (promise: Promise<unknown>) => void;
  storeId: string;
  uploadId: string;
  extension: string;
};

/** The hosted image's headers (media/routes.ts), for a variant of `size` bytes whose entity tag is `etag`. */
function variantHeaders(etag: string, size: number, format: Format): Headers {
  return new Headers({
    "Content-Type": `image/${format}`,
    "Cache-Control": "public, max-age=31536000, immutable",
    "X-Content-Type-Options": "nosniff",
    ETag: etag,
    "Accept-Ranges": "bytes",
    "Content-Length": String(size),
  });
}

/**
 * How often a request making a variant renews its claim: a third of the coordinator's lease (10 s,
 * uploads/width-claims.ts), so one renewal late or lost does not let the claim lapse.
 */
const claimRenewalMs = 3_000;

/** How long a request waits for another request's generation of the same width before answering 503. */
const waitLimitMs = 25_000;

const widthMessages = {
  unsupported: (widths: number[]) => `Unsupported width. Use one of: ${widths.join(", ")}.`,
  failed:
    "The image could not be made at this width just now. Nothing was stored; please try again in a moment (see Retry-After).",
  failedAvif:
    "The image could not be made as an AVIF just now. Nothing was stored; please try again in a moment (see Retry-After).",
  unsupportedFormat: "Unsupported format. Use one of: webp, avif, auto.",
};

let generations = 0;

/** The widths this isolate served last (variant-memory.ts): a read from here touches neither cache nor R2. */
export const rememberedWidths = new VariantMemory();

/** How many widths this isolate has made (hosted images decoded): tests and the benchmark count with it. */
export function widthGenerations(): number {
  return generations;
}

/**
 * The `width` asked for, or null when the request has none. Anything but exactly one `width` parameter
 * spelled as one of the configured widths is spelled in the list (`640`, not `0640` or `640.0`) is 400,
 * naming the widths: every other spelling would be one more edge-cache entry of the same variant.
 */
function requestedWidth(url: URL, widths: number[]): number | null {
  const values = url.searchParams.getAll("width");
  if (values.length === 0) return null;
  const [value] = values;
  const width = values.length === 1 ? widths.find((listed) => String(listed) === value) : undefined;
  if (width === undefined) throw new ApiError(400, widthMessages.unsupported(widths));
  return width;
}

/**
 * The `format` asked for, or null when the request has none: `webp`, `avif` or `auto`, exactly once; anything
 * else is 400.
 */
function requestedFormat(url: URL): Format | "auto" | null {
  const values = url.searchParams.getAll("format");
  if (values.length === 0) return null;
  const [value] = values;
  if (values.length === 1 && (value === "webp" || value === "avif" || value === "auto")) return value;
  throw new ApiError(400, widthMessages.unsupportedFormat);
}

/** Whether an `Accept` header lists `image/avif` (with a quality above 0). */
function acceptsAvif(accept: string | null): boolean {
  return (accept ?? "").split(",").some((item) => {
    const [type, ...parameters] = item.split(";").map((part) => part.trim().toLowerCase());
    const quality = parameters.find((parameter) => parameter.startsWith("q="));
    return type === "image/avif" && (quality === undefined || Number(quality.slice(2)) > 0);
  });
}

/**
 * Whether the answer to this media request depends on its `Accept` (`format=auto`): every answer to it, the
 * hosted image's included, says `Vary: Accept`.
 */
export function variesOnAccept(request: Request): boolean {
  return new URL(request.url).searchParams.getAll("format").includes("auto");
}

/** The height of an image `width × height` scaled to `target` pixels wide (at least 1). */
function scaledHeight(width: number, height: number, target: number): number {
  return Math.max(1, Math.round((height * target) / width));
}

/**
 * The `?width=` and `?format=` hook of the public media route: the answer for the asked variant, or null to serve
 * what the route serves without them (neither; media without variants: video, animations; a WebP width at or
 * above the image's own, or `format=webp` alone). `format=auto` answers AVIF when `Accept` lists it, else WebP.
 */
export async function serveWidth(ask: WidthRequest): Promise<Response | null> {
  const { request, env, extension } = ask;
  const url = new URL(request.url);
  if (!url.searchParams.has("width") && !url.searchParams.has("format")) return null;
  const width = requestedWidth(url, setting(env, "IMAGE_WIDTHS"));
  const asked = requestedFormat(url);
  if (extension !== "webp") return null;
  const format = asked === "auto" ? (acceptsAvif(request.headers.get("Accept")) ? "avif" : "webp") : (asked ?? "webp");
  if (format === "webp" && width === null) return null;
  const response = await serveVariant(ask, width, format);
  if (response && asked === "auto") response.headers.set("Vary", "Accept");
  return response;
}

/**
 * A variant: WebP `width` pixels wide, or AVIF at full size (`width` null) or `width` pixels wide. One entry per
 * image, width and format (in memory and in the edge cache), whatever else the query holds: the chosen format is
 * in the key, so a `format=auto` answer is never another format's.
 */
async function serveVariant(ask: WidthRequest, width: number | null, format: Format): Promise<Response | null> {
  const { request, env, storeId, uploadId } = ask;
  const url = new URL(request.url);
  const query = [width === null ? null : `width=${width}`, format === "avif" ? "format=avif" : null];
  const cacheKey = `${url.origin}${url.pathname}?${query.filter(Boolean).join("&")}`;
  const remembered = rememberedWidths.get(cacheKey);
  if (remembered) return answerBytes(request, remembered, format);

  const cached = await caches.default.match(cacheKey);
  if (cached) {
    const etag = cached.headers.get("ETag");
    const kept = etag && (await keep(cacheKey, etag, Number(cached.headers.get("Content-Length")), cached));
    return kept ? answerBytes(request, kept, format) : answer(request, cached.headers, cached);
  }

  const key = format === "webp" ? mediaWidthKey(storeId, uploadId, width ?? 0) : mediaAvifKey(storeId, uploadId, width);
  const hostedKey = mediaKey(storeId, uploadId, "webp");
  // Both at once: a stored variant is answered; otherwise the hosted image's size decides what is made.
  const [stored, hosted] = await Promise.all([env.BUCKET.get(key), env.BUCKET.head(hostedKey)]);
  const served = { cacheKey, format };
  if (stored) return serveStored(ask, served, stored.httpEtag, stored.size, new Response(stored.body));
  if (!hosted) return null;
  let source: { width: number; height: number } | null;
  try {
    source = await hostedSize(ask, hosted);
  } catch (error) {
    logFailure(ask, width, error, format);
    return unavailable(format);
  }
  if (!source) return null;
  if (width !== null && width >= source.width) return format === "webp" ? null : serveVariant(ask, null, "avif");
  const size = width === null ? source : { width, height: scaledHeight(source.width, source.height, width) };
  const claimKey = `${uploadId}/${width ?? "full"}${format === "avif" ? "/avif" : ""}`;
  const origin = r2Source(env.BUCKET, hostedKey, hosted.size);
  return makeOnce(ask, { width, format, key, cacheKey, claimKey, size, hosted: origin });
}

/**
 * The size of a converted image, from its metadata (written by the conversion), or for images hosted before it
 * was recorded from the WebP's first bytes, which the converter reads; null for an animation (hosted
 * unchanged) or an unreadable file.
 */
async function hostedSize(ask: WidthRequest, hosted: R2Object): Promise<{ width: number; height: number } | null> {
  const width = Number(hosted.customMetadata?.width);
  const height = Number(hosted.customMetadata?.height);
  if (Number.isInteger(width) && width > 0 && Number.isInteger(height) && height > 0) return { width, height };
  const start = await ask.env.BUCKET.get(hosted.key, { range: { offset: 0, length: 64 } });
  if (!start) return null;
  const head = new Uint8Array(await start.arrayBuffer());
  const header = await askConverter(ask.env.CONVERTER, { upload_id: ask.uploadId }, (converter) =>
    converter.describe(head),
  );
  return header && !header.animated ? { width: header.width, height: header.height } : null;
}

/**
 * Answers a stored variant (R2's, or one just made), keeps it in the isolate's memory when it is small
 * enough, and for a whole GET keeps a copy in the edge cache.
 */
async function serveStored(
  ask: WidthRequest,
  served: { cacheKey: string; format: Format },
  etag: string,
  size: number,
  body: Response,
): Promise<Response> {
  const { cacheKey, format } = served;
  const kept = await keep(cacheKey, etag, size, body);
  const response = kept
    ? await answerBytes(ask.request, kept, format)
    : await answer(ask.request, variantHeaders(etag, size, format), body);
  if (ask.request.method === "GET" && response.status === 200) {
    ask.waitUntil(caches.default.put(cacheKey, response.clone()));
  }
  return response;
}

/**
 * Reads a variant's body and keeps it in the isolate's memory when it is small enough; null (the body
 * unread) when it is not. A body shorter than its recorded size is answered but not kept.
 */
async function keep(cacheKey: string, etag: string, size: number, body: Response): Promise<RememberedVariant | null> {
  if (!rememberedWidths.fits(size)) return null;
  const variant = { bytes: new Uint8Array(await body.arrayBuffer()), etag };
  if (variant.bytes.byteLength === size) rememberedWidths.remember(cacheKey, variant);
  return variant;
}

/** Answers a variant whose bytes are at hand. */
function answerBytes(request: Request, variant: RememberedVariant, format: Format): Promise<Response> {
  const headers = variantHeaders(variant.etag, variant.bytes.byteLength, format);
  return answer(request, headers, new Response(variant.bytes));
}

type Variant = {
  /** The width asked for; null for a full-size AVIF. */
  width: number | null;
  format: Format;
  key: string;
  cacheKey: string;
  /** What the store's coordinator knows the variant by: the upload, the width (or `full`) and an AVIF's format. */
  claimKey: string;
  size: { width: number; height: number };
  /** The hosted image, which the converter reads (through the binding) if this request makes the width. */
  hosted: SourceBytes;
};

/**
 * Makes the variant unless another request is making it: the store's coordinator hands out one claim per
 * image and width; the others look for the stored result until it is there, and answer 503 if the attempt
 * they waited on failed. A failure stores nothing, so the next request tries again.
 */
async function makeOnce(ask: WidthRequest, variant: Variant): Promise<Response> {
  try {
    return await claimAndMake(ask, variant);
  } catch (error) {
    // The coordinator or R2 failed: nothing was stored, the next request tries again.
    logFailure(ask, variant.width, error, variant.format);
    return unavailable(variant.format);
  }
}

function logFailure(ask: WidthRequest, width: number | null, error: unknown, format: Format = "webp"): void {
  log.error("media: making a width failed", {
    store_id: ask.storeId,
    upload_id: ask.uploadId,
    width,
    format,
    error: String(error),
  });
}

async function claimAndMake(ask: WidthRequest, variant: Variant): Promise<Response> {
  const { env, storeId } = ask;
  const { width, key, cacheKey, claimKey, format } = variant;
  const claims = widthClaims(env, storeId);
  const served = { cacheKey, format };
  const deadline = Date.now() + waitLimitMs;
  let waitedOn: number | null = null;
  let notStored = false;
  let pause = 20;
  const storedNow = async () => {
    const stored = await env.BUCKET.get(key);
    return stored && serveStored(ask, served, stored.httpEtag, stored.size, new Response(stored.body));
  };
  for (;;) {
    const claim = await claims.claim(claimKey, waitedOn, notStored);
    if (claim.verdict === "failed") return unavailable(format);
    if (claim.verdict === "stored") {
      const stored = await storedNow();
      if (stored) return stored;
      notStored = true;
      continue;
    }
    if (claim.verdict === "make") {
      const held = holdClaim(ask, variant, claim.attempt);
      let made: Made;
      try {
        made = await make(ask, variant);
      } catch (error) {
        logFailure(ask, width, error, format);
        held.release();
        await finish(ask, variant, claim.attempt, false);
        return unavailable(format);
      }
      // Stored and reported after the answer: requests waiting meanwhile find it in R2 once it is there.
      const stored = store(ask, variant, made).finally(() => held.release());
      ask.waitUntil(stored.then((done) => finish(ask, variant, claim.attempt, done)));
      return serveStored(ask, served, made.etag, made.bytes.length, new Response(made.bytes));
    }
    waitedOn = claim.attempt;
    if (Date.now() + pause > deadline) return unavailable(format);
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 250);
    const stored = await storedNow();
    if (stored) return stored;
  }
}

/**
 * Renews this request's claim on the variant every {@link claimRenewalMs} until released: an encode longer than
 * a lease (an AVIF grid, a converter busy with other jobs) keeps its claim, so the requests waiting never make
 * it a second time, while a maker that died stops renewing and its claim lapses after one lease.
 */
function holdClaim(ask: WidthRequest, variant: Variant, attempt: number): { release(): void } {
  const release = renewEvery(claimRenewalMs, () => widthClaims(ask.env, ask.storeId).renew(variant.claimKey, attempt), {
    store_id: ask.storeId,
    width: variant.width,
    format: variant.format,
  });
  return { release };
}

/** Reports the end of an attempt to the coordinator; unreported (it failed), the claim lapses after its lease. */
async function finish(ask: WidthRequest, variant: Variant, attempt: number, made: boolean): Promise<void> {
  try {
    await widthClaims(ask.env, ask.storeId).finish(variant.claimKey, attempt, made);
  } catch (error) {
    logFailure(ask, variant.width, error, variant.format);
  }
}

/** A made variant: its bytes, their entity tag, and the size it was encoded at. */
type Made = { bytes: Uint8Array; etag: string; width: number; height: number };

/**
 * Has the converter decode the hosted WebP scaled to the variant's size and encode it, as a WebP the way
 * conversion does or as an AVIF (which the converter may encode smaller, within its encoder's memory); answers
 * the bytes and their entity tag, R2's for a single put (the MD5 of the bytes), so the answer need not wait for
 * the put.
 */
async function make(ask: WidthRequest, variant: Variant): Promise<Made> {
  generations += 1;
  const context = { upload_id: ask.uploadId, width: variant.width, format: variant.format };
  const job = { source: variant.hosted, ...variant.size };
  if (variant.format === "avif")
    return madeOrThrow(await askConverter(ask.env.CONVERTER, context, (converter) => converter.makeAvif(job)));
  const made = madeOrThrow(await askConverter(ask.env.CONVERTER, context, (converter) => converter.makeWidth(job)));
  return { ...made, ...variant.size };
}

/**
 * The variant the converter made; its refusal (the hosted file damaged since it was hosted) thrown, to be
 * answered as any failure to make it: 503, nothing stored, the next request tries again.
 */
function madeOrThrow<T extends object>(outcome: T | Refusal): T {
  if ("refused" in outcome)
    throw new Error(`the converter refused the hosted image (${outcome.refused}): ${outcome.detail}`);
  return outcome;
}

/** Stores a made variant; whether it was stored (a failure is logged, and the next request makes it again). */
async function store(ask: WidthRequest, variant: Variant, made: Made): Promise<boolean> {
  try {
    await ask.env.BUCKET.put(variant.key, made.bytes, {
      httpMetadata: { contentType: `image/${variant.format}` },
      customMetadata: { width: String(made.width), height: String(made.height) },
    });
    return true;
  } catch (error) {
    logFailure(ask, variant.width, error, variant.format);
    return false;
  }
}

function unavailable(format: Format = "webp"): Response {
  return Response.json(
    { message: format === "avif" ? widthMessages.failedAvif : widthMessages.failed },
    { status: 503, headers: { "Retry-After": String(converterRetryAfterSeconds), "Cache-Control": "no-store" } },
  );
}

/**
 * Answers a variant as the hosted image is answered (media/routes.ts): 304 for a matching If-None-Match, HEAD
 * without the body, a single byte range (a variant is small: the range is cut from its bytes), else the whole.
 * `headers` carry its ETag and Content-Length; `body` holds its bytes.
 */
async function answer(request: Request, stored: Headers, body: Response): Promise<Response> {
  const headers = new Headers(stored);
  const etag = headers.get("ETag");
  const size = Number(headers.get("Content-Length"));
  const range = parseRange(request.headers.get("Range") ?? undefined, size);
  const notModified = etag !== null && request.headers.get("If-None-Match") === etag;
  if (notModified || range === "unsatisfiable" || request.method === "HEAD") await body.body?.cancel();
  if (notModified) {
    headers.delete("Content-Length");
    return new Response(null, { status: 304, headers });
  }
  if (range === "unsatisfiable") {
    headers.delete("Content-Length");
    headers.set("Content-Type", "application/json");
    headers.set("Content-Range", `bytes */${size}`);
    return Response.json({ message: mediaMessages.rangeNotSatisfiable }, { status: 416, headers });
  }
  if (range) {
    headers.set("Content-Range", `bytes ${range.offset}-${range.offset + range.length - 1}/${size}`);
    headers.set("Content-Length", String(range.length));
  }
  if (request.method === "HEAD") return new Response(null, { status: range ? 206 : 200, headers });
  if (!range) return new Response(body.body, { status: 200, headers });
  const bytes = new Uint8Array(await body.arrayBuffer());
  return new Response(bytes.subarray(range.offset, range.offset + range.length), { status: 206, headers });
}
