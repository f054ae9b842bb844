import { inPlaceMetadata } from "../../storage/in-place";
import { mediaKey, privateFileKey, stagedKey } from "../../storage/keys";
import { convertToWebp, ImageTooLargeError, UnconvertibleImageError } from "../convert";
import { uploadMessages } from "../messages";
import { fileKind, type Sniffed, sniff, sniffBytes } from "../sniff";
import type { CompleteOutcome, HostedFile, UploadRecord } from "../upload-state";
import { openStaged, type StagedRead } from "./staged-read";

/** What hosting accepts under some declared type: HEIC, HEIF and AVIF are refused under every one. */
type Hostable = Exclude<Sniffed, { kind: "heif" }>;

type HostingDeps = {
  bucket: R2Bucket;
  /** Long edge of converted images (`MAX_IMAGE_EDGE`). */
  maxImageEdge: number;
  /** Base of public media URLs, without a trailing slash. */
  mediaBaseUrl: string;
  /** Origin of private-file locators. */
  origin: string;
  /**
   * Called with the hosted key before anything is written there, so that what a complete that never
   * finishes wrote is removed with the upload's staged bytes when its reservation lapses.
   */
  beforeWrite: (hostedKey: string) => Promise<void>;
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
  return `${deps.mediaBaseUrl}/${storeId}/${uploadId}.${ext}`;
}

/** Writes `pieces` to R2 as one object of `size` bytes, in order, without joining them into one more copy. */
async function putPieces(bucket: R2Bucket, key: string, pieces: Uint8Array[], size: number, options: R2PutOptions) {
  const { readable, writable } = new FixedLengthStream(size);
  const writing = (async () => {
    const writer = writable.getWriter();
    for (const piece of pieces) await writer.write(piece);
    await writer.close();
  })();
  await Promise.all([bucket.put(key, readable, options), writing]);
}

/**
 * Decides from the bytes what a completed upload becomes and writes it: still images prepared as
 * `image` are converted to WebP, animated images and videos are hosted unchanged, `file` uploads are
 * kept private. Bytes hosted unchanged stay at the staged key and are hosted in place (in-place.ts);
 * a converted image's staged bytes are deleted once its WebP is written. Bytes that cannot be hosted
 * write nothing and leave the staged bytes for the alarm.
 *
 * The staged object is read once: sniffing takes its first bytes, and the same GET goes on to a GIF's
 * frame count or to the conversion (staged-read.ts).
 */
export async function hostUpload(
  deps: HostingDeps,
  storeId: string,
  upload: UploadRecord & { hostedKey?: string | null },
): Promise<CompleteOutcome> {
  const key = stagedKey(storeId, upload.id);
  const staged = await openStaged(deps.bucket, key, sniffBytes);
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
      return {
        hosted: {
          name: upload.filename,
          file_url: publicMediaUrl(deps, storeId, upload.id, "webp"),
          type: "image",
          ...size,
        },
      };
    }
    throw new Error(`staged bytes missing at ${key}`);
  }
  try {
    const sniffed = await sniff(staged.head, staged.input);
    if (sniffed.kind === "heif") return { unhostable: uploadMessages.heif }; // under any declared type
    const hosted =
      upload.type === "file"
        ? await hostPrivately(deps, storeId, upload, sniffed, staged)
        : await hostAsMedia(deps, storeId, upload, sniffed, staged);
    if ("unhostable" in hosted) return hosted;
    return { hosted };
  } finally {
    await staged.close();
  }
}

/**
 * Hosts the staged bytes unchanged at `hostedKey` without moving them: an empty object there names them
 * (in-place.ts). Written again by a retried complete, it names the same bytes.
 */
async function hostInPlace(deps: HostingDeps, staged: StagedRead, hostedKey: string, options: R2PutOptions) {
  await deps.beforeWrite(hostedKey);
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
  staged: StagedRead,
): Promise<HostedFile> {
  const contentType =
    "mime" in sniffed ? sniffed.mime : sniffed.kind === "svg" ? "image/svg+xml" : "application/octet-stream";
  await hostInPlace(deps, staged, privateFileKey(storeId, upload.id), {
    httpMetadata: { contentType },
    customMetadata: { filename: upload.filename, kind: fileKind(sniffed) },
  });
  return {
    name: upload.filename,
    file_url: privateFileUrl(deps.origin, storeId, upload.id, upload.filename),
    type: fileKind(sniffed),
  };
}

async function hostAsMedia(
  deps: HostingDeps,
  storeId: string,
  upload: UploadRecord,
  sniffed: Hostable,
  staged: StagedRead,
): Promise<HostedFile | { unhostable: string }> {
  const publicUrl = (ext: string) => publicMediaUrl(deps, storeId, upload.id, ext);
  switch (sniffed.kind) {
    case "svg":
      return { unhostable: uploadMessages.svgAsImage };
    case "other":
      return { unhostable: uploadMessages.notMedia };
    case "video":
    case "animated": {
      await hostInPlace(deps, staged, mediaKey(storeId, upload.id, sniffed.ext), {
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
      const recorded = deps.beforeWrite(webp);
      recorded.catch(() => {}); // awaited below, unless the conversion fails first
      let converted: Awaited<ReturnType<typeof convertToWebp>>;
      try {
        converted = await convertToWebp(staged.input, sniffed.format, {
          maxEdge: deps.maxImageEdge,
          gifScan: sniffed.gifScan,
        });
      } catch (error) {
        if (error instanceof ImageTooLargeError) return { unhostable: error.message };
        if (error instanceof UnconvertibleImageError) return { unhostable: uploadMessages.corrupt(error.message) };
        throw error;
      }
      await recorded;
      // The size in the object's metadata tells the media route, from its `head`, that narrower widths exist.
      const { width, height } = converted;
      await putPieces(deps.bucket, webp, converted.chunks, converted.size, {
        httpMetadata: { contentType: "image/webp" },
        customMetadata: { width: String(width), height: String(height) },
      });
      // The WebP is what is hosted: the original's bytes are not kept.
      await deps.bucket.delete(staged.object.key);
      return { name: upload.filename, file_url: publicUrl("webp"), type: "image", width, height };
    }
  }
}
