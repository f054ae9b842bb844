/**
 * The one place the R2 key layout lives: uploads writes under these keys (staging, hosting) and media/ serves
 * from them, so neither owns the scheme and both import it from here.
 */

/** Bytes as the PUT stored them, before complete decides what to host. */
export function stagedKey(storeId: string, uploadId: string): string {
  return `staging/${storeId}/${uploadId}`;
}

/** Public media served at `{MEDIA_BASE_URL}/{store_id}/{upload_id}.{ext}`. */
export function mediaKey(storeId: string, uploadId: string, extension: string): string {
  return `media/${storeId}/${uploadId}.${extension}`;
}

/** A converted image re-encoded `width` pixels wide, served at its public URL with `?width=`. */
export function mediaWidthKey(storeId: string, uploadId: string, width: number): string {
  return `media-widths/${storeId}/${uploadId}/${width}.webp`;
}

/**
 * A converted image as an AVIF, `width` pixels wide or at full size (`null`), served at its public URL with
 * `?format=avif` (and `?width=`).
 */
export function mediaAvifKey(storeId: string, uploadId: string, width: number | null): string {
  return `media-widths/${storeId}/${uploadId}/${width ?? "full"}.avif`;
}

/** Private files, served only with a valid signature. */
export function privateFileKey(storeId: string, uploadId: string): string {
  return `files/${storeId}/${uploadId}`;
}
