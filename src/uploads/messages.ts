import type { Refusal } from "./upload-state";

/** The client-facing message of an upload refusal (see {@link Refusal} for `detail`). */
export function refusalMessage(
  uploadId: string,
  { reason, detail, part }: Pick<Refusal, "reason" | "detail" | "part">,
): string {
  switch (reason) {
    case "not_found":
      return `Upload with ID ${uploadId} not found`;
    case "already_stored":
      return "The bytes of this upload are already stored.";
    case "being_stored":
      return "The bytes of this upload are being stored by another request.";
    case "not_stored":
      return "The bytes of this upload have not been stored yet; PUT them first.";
    case "being_processed":
      return "This upload is being processed by another request.";
    case "completed":
      return "The upload has already been completed.";
    case "content_type_mismatch":
      return `The Content-Type does not match the reserved content type ${detail}.`;
    case "content_length_mismatch":
      return `The Content-Length does not match the reserved size of ${detail} bytes.`;
    case "unhostable":
      return detail ?? "The file cannot be hosted.";
    case "multipart_only":
      return "This upload takes its bytes in parts: PUT each part to multipart.part_url.";
    case "not_multipart":
      return "This upload takes its bytes in one PUT to upload_request.url, not in parts.";
    case "part_number":
      return `The part number must be an integer between 1 and ${detail}.`;
    case "part_being_stored":
      return `Part ${part} of this upload is being stored by another request.`;
    case "part_length_mismatch":
      return `The Content-Length does not match the size of part ${part}, ${detail} bytes.`;
    case "parts_missing":
      return detail === "1"
        ? "1 part of this upload has not been stored yet; PUT it first."
        : `${detail} parts of this upload have not been stored yet; PUT them first.`;
  }
}

/** Every client-facing message of uploads, from prepare to complete (serving what they hosted: media/messages.ts). */
export const uploadMessages = {
  tokenRequired: "The upload token is required (X-Upload-Token header).",
  /** At prepare (declared type) and at complete (sniffed bytes, under any declared type). */
  heif: "HEIC, HEIF and AVIF images are not supported; convert the image to JPG or PNG and upload it again.",
  /** At prepare (declared `image/svg+xml` as `image`) and at complete (SVG bytes under another type). */
  svgAsImage: "SVG images cannot be hosted as media; upload PNG or JPG, or upload the SVG with type file.",
  notMedia:
    "The file cannot be hosted as media: only JPG, PNG, WebP, GIF and BMP images and MP4, MOV, M4V, WebM and Ogg videos can. Upload it with type file to host it as a download.",
  corrupt: (reason: string) => `The image cannot be hosted: ${reason}`,
  bodyLength: "The request body does not match its Content-Length; nothing was stored.",
  storageFailed: "The bytes could not be stored; retry the PUT.",
  assemblyFailed: "The parts could not be assembled; retry the complete.",
  convertedNotStored: "The converted image could not be stored; the upload is stored as it was, retry the complete.",
  /** `reason`: why the converter Worker could not be asked (src/converter/client.ts). */
  converterUnavailable: (reason: string) =>
    `The image converter is unavailable (${reason}); the upload is stored as it was, retry the complete in a moment.`,
  reserveFailed: "The upload could not be reserved; retry.",
  size: (limit: number) => `The size must be an integer between 1 and ${limit} bytes.`,
  tooManyParts: (partLimit: number, partSize: number) =>
    `The size is too large to upload: it needs more than ${partLimit} parts of at most ${partSize} bytes.`,
  invalidPartNumber: "Invalid part number.",
  sizeOverLimit: (size: number, limit: number) =>
    `The upload's size of ${size} bytes is outside the store's upload limit of ${limit} bytes.`,
} as const;
