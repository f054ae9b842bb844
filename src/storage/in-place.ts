/**
 * Hosting in place: an upload hosted unchanged (video, an animated image, a private file) keeps its bytes
 * where the PUT or the parts left them, at its staged key, and its hosted key holds an empty object whose
 * custom metadata names that key with the bytes' size and ETag. R2 has no rename, so this is what makes
 * such a complete move no bytes. The hosted object's own HTTP metadata (the sniffed Content-Type) and
 * custom metadata (a private file's name and kind) are what the media routes serve with the bytes.
 *
 * Objects hosted before this, with their bytes at the hosted key, have no such metadata and are served
 * as they are.
 */

/** The custom metadata names of a hosted object that holds no bytes itself. */
const bytesAt = "bytes-at";
const bytesSize = "bytes-size";
const bytesEtag = "bytes-etag";

/** The custom metadata that makes an empty object at a hosted key serve `staged` (an object's GET or head). */
export function inPlaceMetadata(staged: Pick<R2Object, "key" | "size" | "etag">): Record<string, string> {
  return { [bytesAt]: staged.key, [bytesSize]: String(staged.size), [bytesEtag]: staged.etag };
}

/** What the media routes serve at a hosted key: its metadata and where its bytes are read. */
type HostedObject = {
  /** The object at the hosted key: its HTTP metadata (Content-Type) and custom metadata are the response's. */
  meta: R2Object;
  size: number;
  httpEtag: string;
  /** The bytes, or one range of them; null when they are gone. */
  read(range?: R2Range): Promise<R2ObjectBody | null>;
};

/**
 * Resolves a hosted key with one R2 head: to the object itself, or for an in-place object to the staged
 * bytes it names, whose size and ETag it carries, so HEAD, 304 and 416 need no second read and a GET reads
 * the bytes with one. Null when nothing is hosted there.
 */
export async function resolveHosted(bucket: R2Bucket, key: string): Promise<HostedObject | null> {
  const meta = await bucket.head(key);
  if (!meta) return null;
  const at = meta.customMetadata?.[bytesAt];
  if (at === undefined) {
    return {
      meta,
      size: meta.size,
      httpEtag: meta.httpEtag,
      read: (range) => bucket.get(key, range ? { range } : undefined),
    };
  }
  const size = Number(meta.customMetadata?.[bytesSize]);
  const etag = meta.customMetadata?.[bytesEtag];
  if (!Number.isSafeInteger(size) || size < 0 || !etag) return null;
  return {
    meta,
    size,
    httpEtag: `"${etag}"`,
    async read(range) {
      // The ETag condition guarantees the bytes are the ones whose size and ETag the headers promised.
      const object = await bucket.get(at, { ...(range ? { range } : {}), onlyIf: { etagMatches: etag } });
      return object && "body" in object ? object : null;
    },
  };
}
