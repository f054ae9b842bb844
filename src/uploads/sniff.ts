import { fileTypeFromBuffer } from "file-type";

/** What the bytes are, as far as hosting is concerned. */
export type Sniffed =
  | { kind: "still"; format: "jpeg" | "png" | "webp" | "gif" | "bmp"; mime: string; ext: string }
  | { kind: "animated"; mime: string; ext: string }
  | { kind: "video"; mime: string; ext: string }
  | { kind: "heif" }
  | { kind: "svg" }
  | { kind: "other"; mime: string; ext: string | null };

/** How many leading bytes sniffing needs (file-type reads at most a few KiB; SVG text may start later). */
export const sniffBytes = 64 * 1024;

const stillFormats = {
  "image/jpeg": "jpeg",
  "image/png": "png",
  "image/webp": "webp",
  "image/gif": "gif",
  "image/bmp": "bmp",
} as const;
const videoMimes = new Set(["video/mp4", "video/quicktime", "video/x-m4v", "video/webm", "video/ogg"]);
const heifMimes = new Set(["image/heic", "image/heif", "image/heic-sequence", "image/heif-sequence", "image/avif"]);

/** The media types refused at prepare: HEIC, HEIF and AVIF (case-insensitive, parameters ignored). */
export function isHeifMediaType(mediaType: string): boolean {
  const essence = mediaType.split(";")[0]?.trim().toLowerCase() ?? "";
  return essence === "image/heic" || essence === "image/heif" || essence === "image/avif";
}

export function isSvgMediaType(mediaType: string): boolean {
  return mediaType.split(";")[0]?.trim().toLowerCase() === "image/svg+xml";
}

function looksLikeSvg(head: Uint8Array): boolean {
  const text = new TextDecoder().decode(head.subarray(0, 4096)).replace(/^\uFEFF/, "");
  // An XML declaration, comments and a doctype may come before the root element.
  return /^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE[^>]*>\s*)*<svg[\s>]/i.test(text);
}

/** Whether a GIF has more than one image: walks its blocks rather than trusting any header flag. */
export function gifFrameCount(bytes: Uint8Array, stopAt = 2): number {
  if (bytes.length < 13) return 0;
  let offset = 13;
  const flags = bytes[10] ?? 0;
  if (flags & 0x80) offset += 3 * 2 ** ((flags & 0x07) + 1);
  let frames = 0;
  const skipSubBlocks = () => {
    while (offset < bytes.length) {
      const size = bytes[offset] ?? 0;
      offset += 1;
      if (size === 0) return;
      offset += size;
    }
  };
  while (offset < bytes.length) {
    const introducer = bytes[offset];
    if (introducer === 0x2c) {
      frames += 1;
      if (frames >= stopAt) return frames;
      const imageFlags = bytes[offset + 9] ?? 0;
      offset += 10;
      if (imageFlags & 0x80) offset += 3 * 2 ** ((imageFlags & 0x07) + 1);
      offset += 1; // LZW minimum code size
      skipSubBlocks();
    } else if (introducer === 0x21) {
      offset += 2;
      skipSubBlocks();
    } else {
      break; // 0x3b trailer, or bytes that are not a GIF block
    }
  }
  return frames;
}

/** Whether a WebP is animated: the VP8X header's animation flag. */
export function isAnimatedWebp(bytes: Uint8Array): boolean {
  const chunk = new TextDecoder().decode(bytes.subarray(12, 16));
  return chunk === "VP8X" && ((bytes[20] ?? 0) & 0x02) !== 0;
}

/**
 * Sniffs the kind of bytes from their content, never from a name or declared type. `head` is the
 * start of the file; `whole` reads everything, needed only to count GIF frames.
 */
export async function sniff(head: Uint8Array, whole: () => Promise<Uint8Array>): Promise<Sniffed> {
  const detected = await fileTypeFromBuffer(head);
  if (!detected)
    return looksLikeSvg(head) ? { kind: "svg" } : { kind: "other", mime: "application/octet-stream", ext: null };
  const { mime, ext } = detected;
  if (heifMimes.has(mime)) return { kind: "heif" };
  if (videoMimes.has(mime)) return { kind: "video", mime, ext };
  if (mime === "image/apng") return { kind: "animated", mime: "image/apng", ext: "png" };
  if (mime === "image/webp" && isAnimatedWebp(head)) return { kind: "animated", mime, ext };
  if (mime === "image/gif" && gifFrameCount(await whole()) > 1) return { kind: "animated", mime, ext };
  if (mime in stillFormats) {
    return { kind: "still", format: stillFormats[mime as keyof typeof stillFormats], mime, ext };
  }
  if (mime === "application/xml" && looksLikeSvg(head)) return { kind: "svg" };
  return { kind: "other", mime, ext };
}

/** The hosted file result's `type` for bytes hosted as a private file. */
export function fileKind(sniffed: Sniffed): "image" | "video" | "file" {
  if (sniffed.kind === "still" || sniffed.kind === "animated") return "image";
  if (sniffed.kind === "video") return "video";
  return "file";
}
