import { fileTypeFromBuffer } from "file-type";
import type { StillFormat } from "../converter/contract";
import { mediaTypeEssence } from "../lib/media-type";

/**
 * What the bytes are, as far as hosting is concerned, from their first bytes. A GIF is `still` here whatever
 * its frame count: counting them means walking the whole file, which the converter does before converting
 * it (an animated GIF comes back from the converter to be hosted unchanged).
 */
export type Sniffed =
  | { kind: "still"; format: StillFormat; mime: string; ext: string }
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
  const essence = mediaTypeEssence(mediaType);
  return essence === "image/heic" || essence === "image/heif" || essence === "image/avif";
}

export function isSvgMediaType(mediaType: string): boolean {
  return mediaTypeEssence(mediaType) === "image/svg+xml";
}

function looksLikeSvg(head: Uint8Array): boolean {
  const text = new TextDecoder().decode(head.subarray(0, 4096)).replace(/^\uFEFF/, "");
  // An XML declaration, comments and a doctype may come before the root element.
  return /^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE[^>]*>\s*)*<svg[\s>]/i.test(text);
}

/**
 * Whether a WebP's first bytes announce an animation: the extended header (VP8X), when there is one, is the
 * first chunk, and its flags byte says so. Anything else is read as a still image (whose conversion then says
 * why it cannot be read, if it cannot).
 */
function isAnimatedWebp(head: Uint8Array): boolean {
  const chunk = String.fromCharCode(...head.subarray(12, 16));
  return chunk === "VP8X" && head.length > 20 && ((head[20] as number) & 0x02) !== 0;
}

/** Sniffs the kind of bytes from their first bytes (`head`), never from a name or declared type. */
export async function sniff(head: Uint8Array): Promise<Sniffed> {
  const detected = await fileTypeFromBuffer(head);
  if (!detected)
    return looksLikeSvg(head) ? { kind: "svg" } : { kind: "other", mime: "application/octet-stream", ext: null };
  const { mime, ext } = detected;
  if (heifMimes.has(mime)) return { kind: "heif" };
  if (videoMimes.has(mime)) return { kind: "video", mime, ext };
  if (mime === "image/apng") return { kind: "animated", mime: "image/apng", ext: "png" };
  if (mime === "image/webp" && isAnimatedWebp(head)) return { kind: "animated", mime, ext };
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
