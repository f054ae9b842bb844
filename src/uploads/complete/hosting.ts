import { askConverter, ConverterUnavailableError, converterRetryAfterSeconds, r2Source } from "../../converter/client";
import type { ConvertedWebp, ConverterService, ConvertJob, ConvertOutcome } from "../../converter/contract";
import { ApiError } from "../../http/errors";
import { log } from "../../lib/log";
import { inPlaceMetadata } from "../../storage/in-place";
import { mediaKey, privateFileKey, stagedKey } from "../../storage/keys";
import { type CoordinatorStub, unwrap } from "../coordinator/client";
import { uploadMessages } from "../messages";
import { fileKind, type Sniffed, sniff, sniffBytes } from "../sniff";
import type { CompleteOutcome, HostedFile, UploadRecord } from "../upload-state";

/** What hosting accepts under some declared type: HEIC, HEIF and AVIF are refused under every one. */
type Hostable = Exclude<Sniffed, { kind: "heif" }>;

/** The staged object's metadata and its first bytes (what sniffing reads). */
type StagedHead = { object: R2Object; head: Uint8Array };

/** What hosting uses, passed in by complete (complete.ts). */
type HostingDeps = {
  bucket: R2Bucket;
  /**
   * The store's coordinator and this complete's attempt: every key is recorded with it before anything is
   * written there, so that what a complete that never finishes wrote is removed with the upload's staged
   * bytes when its reservation lapses.
   */
  coordinator: CoordinatorStub;
  attempt: number;
  /** The converter Worker's binding: still images become WebP there, not here. */
  converter: ConverterService | undefined;
  requestId: string;
  /** Base of public media URLs (no trailing slash), and the origin of private-file locators. */
  urls: { mediaBaseUrl: string; origin: string };
  /** Long edge of converted images (`MAX_IMAGE_EDGE`), read only for a still image. */
  settings: { maxImageEdge(): number };
};

/** Filename safe inside a URL path segment: no separators or control characters, bounded length. */
function safeFilename(filename: string): string {
  const cleaned = filename
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is removed.
    .replace(/[\u0000-\u001f\u007f/\\]+/g, "_")
    .replace(/^\.+/, "")
    .trim();
  const bounded = [...cleaned].slice(-120).join("");
  return bounded || "file";
}

/** The private locator of a file upload: answers 403 unless a signature is added. */
function privateFileUrl(origin: string, storeId: string, uploadId: string, filename: string): string {
  return `${origin}/files/${storeId}/${uploadId}/${encodeURIComponent(safeFilename(filename))}`;
}

/** The public URL of hosted media. */
function publicMediaUrl(deps: HostingDeps, storeId: string, uploadId: string, ext: string): string {
  return `${deps.urls.mediaBaseUrl}/${storeId}/${uploadId}.${ext}`;
}

/** Records `hostedKey` as the upload's with the coordinator, before anything is written there. */
async function recordHostedKey(deps: HostingDeps, uploadId: string, hostedKey: string): Promise<void> {
  unwrap(await deps.coordinator.recordHostedKey(uploadId, deps.attempt, hostedKey), uploadId);
}

/**
 * Has the converter Worker convert a still image; a converter missing or failing is 503 naming the cause,
 * with Retry-After, and leaves the upload as it was for a retry.
 */
async function askToConvert(deps: HostingDeps, uploadId: string, job: ConvertJob): Promise<ConvertOutcome> {
  try {
    return await askConverter(deps.converter, { request_id: deps.requestId, upload_id: uploadId }, (converter) =>
      converter.convert(job),
    );
  } catch (error) {
    if (!(error instanceof ConverterUnavailableError)) throw error;
    throw new ApiError(503, uploadMessages.converterUnavailable(error.reason), undefined, {
      "Retry-After": String(converterRetryAfterSeconds),
    });
  }
}

/**
 * Writes the converter's WebP at `key`, streamed from the binding into R2 (its length is known, so R2 takes it
 * as it comes), with its size in the object's metadata: that tells the media route, from its `head`, that
 * narrower widths exist. Its placeholder and dominant colour go there too, for a complete that dies after
 * the write (`hostUpload` reads them back).
 */
async function writeWebp(deps: HostingDeps, key: string, webp: ConvertedWebp): Promise<void> {
  const { readable, writable } = new FixedLengthStream(webp.size);
  const { width, height, placeholder, dominantColor } = webp;
  try {
    await Promise.all([
      deps.bucket.put(key, readable, {
        httpMetadata: { contentType: "image/webp" },
        customMetadata: { width: String(width), height: String(height), placeholder, dominant_color: dominantColor },
      }),
      webp.body.pipeTo(writable),
    ]);
  } catch (error) {
    // The converter's stream cut off (its isolate gone) or R2 refused the write: a short stream stores nothing,
    // so the upload is as it was and a retry converts again.
    log.error("upload: storing the converted image failed", { request_id: deps.requestId, error: String(error) });
    throw new ApiError(503, uploadMessages.convertedNotStored, undefined, {
      "Retry-After": String(converterRetryAfterSeconds),
    });
  }
}

/**
 * Decides from the bytes what a completed upload becomes and writes it: still images prepared as
 * `image` are converted to WebP (by the converter Worker, which reads the staged bytes through the binding
 * and answers the WebP as a stream written here), animated images and videos are hosted unchanged, `file` uploads are kept private. Bytes hosted
 * unchanged stay at the staged key and are hosted in place (in-place.ts); a converted image's staged bytes
 * are deleted once its WebP is written. Bytes that cannot be hosted write nothing and leave the staged bytes
 * for the alarm. Only the first bytes of the staged object are read here, for sniffing.
 */
export async function hostUpload(
  deps: HostingDeps,
  storeId: string,
  upload: UploadRecord & { hostedKey?: string | null },
): Promise<CompleteOutcome> {
  const key = stagedKey(storeId, upload.id);
  const staged = await readHead(deps.bucket, key);
  if (!staged) {
    // A complete that died after writing the WebP and deleting the original, before it was recorded:
    // the WebP is the result.
    const webp = mediaKey(storeId, upload.id, "webp");
    const written = upload.type === "image" && upload.hostedKey === webp ? await deps.bucket.head(webp) : null;
    if (written) {
      // Its size is in the metadata written with it (below).
      const width = Number(written.customMetadata?.width);
      const height = Number(written.customMetadata?.height);
      const size = Number.isInteger(width) && Number.isInteger(height) ? { width, height } : {};
      const { placeholder, dominant_color } = written.customMetadata ?? {};
      return {
        hosted: {
          name: upload.filename,
          file_url: publicMediaUrl(deps, storeId, upload.id, "webp"),
          type: "image",
          ...size,
          ...(placeholder && dominant_color ? { placeholder, dominant_color } : {}),
        },
      };
    }
    throw new Error(`staged bytes missing at ${key}`);
  }
  const sniffed = await sniff(staged.head);
  if (sniffed.kind === "heif") return { unhostable: uploadMessages.heif }; // under any declared type
  const hosted =
    upload.type === "file"
      ? await hostPrivately(deps, storeId, upload, sniffed, staged)
      : await hostAsMedia(deps, storeId, upload, sniffed, staged);
  if ("unhostable" in hosted) return hosted;
  return { hosted };
}

/** The staged object's first `sniffBytes` bytes and its metadata, in one ranged GET; null when it is missing. */
async function readHead(bucket: R2Bucket, key: string): Promise<StagedHead | null> {
  const object = await bucket.get(key, { range: { offset: 0, length: sniffBytes } });
  if (!object) return null;
  return { object, head: new Uint8Array(await object.arrayBuffer()) };
}

/**
 * Hosts the staged bytes unchanged at `hostedKey` without moving them: an empty object there names them
 * (in-place.ts). Written again by a retried complete, it names the same bytes.
 */
async function hostInPlace(
  deps: HostingDeps,
  staged: StagedHead,
  uploadId: string,
  hostedKey: string,
  options: R2PutOptions,
) {
  await recordHostedKey(deps, uploadId, hostedKey);
  await deps.bucket.put(hostedKey, null, {
    ...options,
    customMetadata: { ...options.customMetadata, ...inPlaceMetadata(staged.object) },
  });
}

async function hostPrivately(
  deps: HostingDeps,
  storeId: string,
  upload: UploadRecord,
  sniffed: Sniffed,
  staged: StagedHead,
): Promise<HostedFile> {
  const contentType =
    "mime" in sniffed ? sniffed.mime : sniffed.kind === "svg" ? "image/svg+xml" : "application/octet-stream";
  await hostInPlace(deps, staged, upload.id, privateFileKey(storeId, upload.id), {
    httpMetadata: { contentType },
    customMetadata: { filename: upload.filename, kind: fileKind(sniffed) },
  });
  return {
    name: upload.filename,
    file_url: privateFileUrl(deps.urls.origin, storeId, upload.id, upload.filename),
    type: fileKind(sniffed),
  };
}

async function hostAsMedia(
  deps: HostingDeps,
  storeId: string,
  upload: UploadRecord,
  sniffed: Hostable,
  staged: StagedHead,
): Promise<HostedFile | { unhostable: string }> {
  const publicUrl = (ext: string) => publicMediaUrl(deps, storeId, upload.id, ext);
  switch (sniffed.kind) {
    case "svg":
      return { unhostable: uploadMessages.svgAsImage };
    case "other":
      return { unhostable: uploadMessages.notMedia };
    case "video":
    case "animated": {
      await hostInPlace(deps, staged, upload.id, mediaKey(storeId, upload.id, sniffed.ext), {
        httpMetadata: { contentType: sniffed.mime },
      });
      return {
        name: upload.filename,
        file_url: publicUrl(sniffed.ext),
        type: sniffed.kind === "video" ? "video" : "image",
      };
    }
    case "still": {
      const webp = mediaKey(storeId, upload.id, "webp");
      // Recorded while the image converts, not after: the coordinator's round trip overlaps the conversion.
      // Nothing is written at the key until both are done; a key recorded for a conversion that then fails
      // names nothing, and the upload's expiry removes nothing there.
      const recorded = recordHostedKey(deps, upload.id, webp);
      recorded.catch(() => {}); // awaited below, unless the conversion fails first
      const outcome = await askToConvert(deps, upload.id, {
        source: r2Source(deps.bucket, staged.object.key, staged.object.size),
        format: sniffed.format,
        maxEdge: deps.settings.maxImageEdge(),
      });
      await recorded;
      if ("refused" in outcome)
        return {
          unhostable: outcome.refused === "too-large" ? outcome.detail : uploadMessages.corrupt(outcome.detail),
        };
      if ("animated" in outcome) {
        // A GIF of more than one frame (the converter walked its blocks): hosted unchanged, as an animation.
        await hostInPlace(deps, staged, upload.id, mediaKey(storeId, upload.id, sniffed.ext), {
          httpMetadata: { contentType: sniffed.mime },
        });
        return { name: upload.filename, file_url: publicUrl(sniffed.ext), type: "image" };
      }
      await writeWebp(deps, webp, outcome.converted);
      // The WebP is what is hosted: the original's bytes are not kept.
      await deps.bucket.delete(staged.object.key);
      const { width, height, placeholder, dominantColor } = outcome.converted;
      const look = { placeholder, dominant_color: dominantColor };
      return { name: upload.filename, file_url: publicUrl("webp"), type: "image", width, height, ...look };
    }
  }
}
