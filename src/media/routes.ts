import { setting } from "../config";
import { inBackground } from "../http/background";
import { ApiError, messages } from "../http/errors";
import { createRouter } from "../http/router";
import { encodeExtValue } from "../lib/encoding";
import { storedUuid as uuid } from "../lib/ids";
import { resolveHosted } from "../storage/in-place";
import { mediaKey, privateFileKey } from "../storage/keys";
import { mediaMessages } from "./messages";
import { parseRange } from "./range";
import { verifyFileSignature } from "./signing";
import { serveWidth, variesOnAccept } from "./widths";

const notFound = () => new ApiError(404, messages.notFound);

/**
 * Serves the object hosted at `key` (its bytes, or for an in-place object the staged bytes it names: see
 * src/storage/in-place.ts) with ETag, conditional GET, HEAD and single byte ranges: one R2 head, and for a
 * GET with a body one R2 read of the bytes.
 */
async function serveObject(
  request: Request,
  bucket: R2Bucket,
  key: string,
  headersFor: (object: R2Object) => Record<string, string>,
): Promise<Response> {
  const hosted = await resolveHosted(bucket, key);
  if (!hosted) throw notFound();
  const headers = new Headers(headersFor(hosted.meta));
  hosted.meta.writeHttpMetadata(headers);
  headers.set("ETag", hosted.httpEtag);
  headers.set("Accept-Ranges", "bytes");
  if (request.headers.get("If-None-Match") === hosted.httpEtag) return new Response(null, { status: 304, headers });

  const range = parseRange(request.headers.get("Range") ?? undefined, hosted.size);
  if (range === "unsatisfiable") {
    headers.set("Content-Range", `bytes */${hosted.size}`);
    return Response.json({ message: mediaMessages.rangeNotSatisfiable }, { status: 416, headers });
  }
  const status = range ? 206 : 200;
  const length = range ? range.length : hosted.size;
  if (range) headers.set("Content-Range", `bytes ${range.offset}-${range.offset + range.length - 1}/${hosted.size}`);
  headers.set("Content-Length", String(length));
  if (request.method === "HEAD") return new Response(null, { status, headers });

  const object = await hosted.read(range ?? undefined);
  if (!object) throw notFound();
  return new Response(object.body, { status, headers });
}

/**
 * Public media (`/media/{store_id}/{upload_id}.{ext}`), immutable once written, and private files
 * (`/files/{store_id}/{upload_id}/{filename}`), served only with a valid, unexpired signature. HEAD runs
 * the GET route (Hono drops the body); serveObject sees the HEAD and skips reading the bytes.
 */
export const mediaRoutes = createRouter()
  .get("/media/:storeId/:file", async (c) => {
    const { storeId, file } = c.req.param();
    const match = /^([0-9a-f-]{36})\.([a-z0-9]{2,5})$/.exec(file);
    if (!uuid.test(storeId) || !match?.[1] || !uuid.test(match[1]) || !match[2]) throw notFound();
    const [uploadId, extension] = [match[1], match[2]];
    // `?width=N` and `?format=` of a converted image (widths.ts); null serves the object as it is.
    const narrower = await serveWidth({
      request: c.req.raw,
      env: c.env,
      waitUntil: (task) => inBackground(c, task),
      storeId,
      uploadId,
      extension,
    });
    if (narrower) return narrower;
    const hosted = await serveObject(c.req.raw, c.env.BUCKET, mediaKey(storeId, match[1], match[2]), () => ({
      "Cache-Control": "public, max-age=31536000, immutable",
      "X-Content-Type-Options": "nosniff",
    }));
    // `format=auto` answered with the hosted WebP: another Accept may get an AVIF at the same URL.
    if (extension === "webp" && variesOnAccept(c.req.raw)) hosted.headers.set("Vary", "Accept");
    return hosted;
  })
  .get("/files/:storeId/:uploadId/:filename", async (c) => {
    const { storeId, uploadId } = c.req.param();
    if (!uuid.test(storeId) || !uuid.test(uploadId)) throw notFound();
    const signed = await verifyFileSignature(
      setting(c.env, "FILE_SIGNING_SECRET"),
      new URL(c.req.url).pathname,
      c.req.query("expires"),
      c.req.query("signature"),
    );
    if (!signed) throw new ApiError(403, mediaMessages.linkInvalid);
    return serveObject(c.req.raw, c.env.BUCKET, privateFileKey(storeId, uploadId), (object) => {
      const filename = object.customMetadata?.filename ?? "file";
      const inline = object.customMetadata?.kind === "image" || object.customMetadata?.kind === "video";
      return {
        "Cache-Control": "private, max-age=300",
        "X-Content-Type-Options": "nosniff",
        "Content-Disposition": `${inline ? "inline" : "attachment"}; filename*=UTF-8''${encodeExtValue(filename)}`,
      };
    });
  });
