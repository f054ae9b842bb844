import { convertToWebp, type ImageInput, ImageTooLargeError, UnconvertibleImageError } from "./convert";
import { mediaKey, privateFileKey, stagedKey } from "./keys";
import { uploadMessages } from "./messages";
import { fileKind, type Sniffed, sniff, sniffBytes } from "./sniff";
import type { CompleteOutcome, HostedFile, UploadRecord } from "./upload-state";

/** What hosting accepts under some declared type: HEIC, HEIF and AVIF are refused under every one. */
type Hostable = Exclude<Sniffed, { kind: "heif" }>;

export type HostingDeps = {
  bucket: R2Bucket;
  /** Long edge of converted images (`MAX_IMAGE_EDGE`). */
  maxImageEdge: number;
  /** Base of public media URLs, without a trailing slash. */
  mediaBaseUrl: string;
  /** Origin of private-file locators. */
  origin: string;
};

/** Filename safe inside a URL path segment: no separators or control characters, bounded length. */
export function safeFilename(filename: string): string {
  const cleaned = filename
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is removed.
    .replace(/[\u0000-\u001f\u007f/\\]+/g, "_")
    .replace(/^\.+/, "")
    .trim();
  const bounded = [...cleaned].slice(-120).join("");
  return bounded || "file";
}

/** The private locator of a file upload: answers 403 unless a signature is added. */
export function privateFileUrl(origin: string, storeId: string, uploadId: string, filename: string): string {
  return `${origin}/files/${storeId}/${uploadId}/${encodeURIComponent(safeFilename(filename))}`;
}

/** The staged upload as the conversion reads it: its size, and its bytes streamed from R2 on demand. */
function stagedInput(bucket: R2Bucket, key: string, size: number): ImageInput {
  return {
    size,
    open: async () => {
      const object = await bucket.get(key);
      if (!object) throw new Error(`staged bytes missing at ${key}`);
      return object.body;
    },
  };
}

async function readStaged(bucket: R2Bucket, key: string, length?: number): Promise<Uint8Array> {
  const object = await bucket.get(key, length === undefined ? undefined : { range: { offset: 0, length } });
  if (!object) throw new Error(`staged bytes missing at ${key}`);
  return new Uint8Array(await object.arrayBuffer());
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

/** Streams the staged object to `destination` without holding it in memory. */
async function copyStaged(bucket: R2Bucket, source: string, destination: string, options: R2PutOptions) {
  const object = await bucket.get(source);
  if (!object) throw new Error(`staged bytes missing at ${source}`);
  await bucket.put(destination, object.body.pipeThrough(new FixedLengthStream(object.size)), options);
}

/**
 * Decides from the bytes what a completed upload becomes and writes it: still images prepared as
 * `image` are converted to WebP, animated images and videos are hosted unchanged, `file` uploads are
 * kept private. Bytes that cannot be hosted write nothing and leave the staged bytes for the alarm.
 */
export async function hostUpload(deps: HostingDeps, storeId: string, upload: UploadRecord): Promise<CompleteOutcome> {
  const staged = stagedKey(storeId, upload.id);
  const head = await readStaged(deps.bucket, staged, Math.min(sniffBytes, upload.size));
  const sniffed = await sniff(head, stagedInput(deps.bucket, staged, upload.size));
  if (sniffed.kind === "heif") return { unhostable: uploadMessages.heif }; // under any declared type
  const hosted =
    upload.type === "file"
      ? await hostPrivately(deps, storeId, upload, sniffed)
      : await hostAsMedia(deps, storeId, upload, sniffed);
  if ("unhostable" in hosted) return hosted;
  await deps.bucket.delete(staged);
  return { hosted };
}

async function hostPrivately(
  deps: HostingDeps,
  storeId: string,
  upload: UploadRecord,
  sniffed: Sniffed,
): Promise<HostedFile> {
  const contentType =
    "mime" in sniffed ? sniffed.mime : sniffed.kind === "svg" ? "image/svg+xml" : "application/octet-stream";
  await copyStaged(deps.bucket, stagedKey(storeId, upload.id), privateFileKey(storeId, upload.id), {
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
): Promise<HostedFile | { unhostable: string }> {
  const publicUrl = (ext: string) => `${deps.mediaBaseUrl}/${storeId}/${upload.id}.${ext}`;
  switch (sniffed.kind) {
    case "svg":
      return { unhostable: uploadMessages.svgAsImage };
    case "other":
      return { unhostable: uploadMessages.notMedia };
    case "video":
    case "animated": {
      await copyStaged(deps.bucket, stagedKey(storeId, upload.id), mediaKey(storeId, upload.id, sniffed.ext), {
        httpMetadata: { contentType: sniffed.mime },
      });
      return {
        name: upload.filename,
        file_url: publicUrl(sniffed.ext),
        type: sniffed.kind === "video" ? "video" : "image",
      };
    }
    case "still": {
      const staged = stagedInput(deps.bucket, stagedKey(storeId, upload.id), upload.size);
      let converted: Awaited<ReturnType<typeof convertToWebp>>;
      try {
        converted = await convertToWebp(staged, sniffed.format, { maxEdge: deps.maxImageEdge });
      } catch (error) {
        if (error instanceof ImageTooLargeError) return { unhostable: error.message };
        if (error instanceof UnconvertibleImageError) return { unhostable: uploadMessages.corrupt(error.message) };
        throw error;
      }
      // The size in the object's metadata tells the media route, from its `head`, that narrower widths exist.
      const { width, height } = converted;
      await putPieces(deps.bucket, mediaKey(storeId, upload.id, "webp"), converted.chunks, converted.size, {
        httpMetadata: { contentType: "image/webp" },
        customMetadata: { width: String(width), height: String(height) },
      });
      return { name: upload.filename, file_url: publicUrl("webp"), type: "image", width, height };
    }
  }
}
