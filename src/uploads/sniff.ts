import { fileTypeFromBuffer } from "file-type";
import { mediaTypeEssence } from "../lib/media-type";
import { type GifScanOutcome, type ImageInput, isAnimated, scanGifInput } from "./convert";

/**
 * What the bytes are, as far as hosting is concerned. A GIF's still form carries what walking its blocks
 * found (`gifScan`), for the conversion, which then does not walk them again.
 */
export type Sniffed =
  | {
      kind: "still";
      format: "jpeg" | "png" | "webp" | "gif" | "bmp";
      mime: string;
      ext: string;
      gifScan?: GifScanOutcome;
    }
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
 * Sniffs the kind of bytes from their content, never from a name or declared type. `head` is the
 * start of the file; `file` is read (streamed, block by block) only to count a GIF's frames.
 */
export async function sniff(head: Uint8Array, file: ImageInput): Promise<Sniffed> {
  const detected = await fileTypeFromBuffer(head);
  if (!detected)
    return looksLikeSvg(head) ? { kind: "svg" } : { kind: "other", mime: "application/octet-stream", ext: null };
  const { mime, ext } = detected;
  if (heifMimes.has(mime)) return { kind: "heif" };
  if (videoMimes.has(mime)) return { kind: "video", mime, ext };
  if (mime === "image/apng") return { kind: "animated", mime: "image/apng", ext: "png" };
  if (mime === "image/webp" && isAnimated(head, "webp")) return { kind: "animated", mime, ext };
  if (mime === "image/gif") {
    const gifScan = await scanOrNothing(file);
    if (gifScan && "scan" in gifScan && gifScan.scan.frames > 1) return { kind: "animated", mime, ext };
    // A GIF that cannot be read is still: converting it reports why (from this outcome).
    return { kind: "still", format: "gif", mime, ext, ...(gifScan ? { gifScan } : {}) };
  }
  if (mime in stillFormats) {
    return { kind: "still", format: stillFormats[mime as keyof typeof stillFormats], mime, ext };
  }
  if (mime === "application/xml" && looksLikeSvg(head)) return { kind: "svg" };
  return { kind: "other", mime, ext };
}

/** What walking a GIF's blocks found; undefined when reading failed (converting it then reads it again). */
async function scanOrNothing(file: ImageInput): Promise<GifScanOutcome | undefined> {
  try {
    return await scanGifInput(file);
  } catch {
    return undefined;
  }
}

/** The hosted file result's `type` for bytes hosted as a private file. */
export function fileKind(sniffed: Sniffed): "image" | "video" | "file" {
  if (sniffed.kind === "still" || sniffed.kind === "animated") return "image";
  if (sniffed.kind === "video") return "video";
  return "file";
}
