import type { HostedFile } from "./upload-state";

/** The hosted file result as the API answers it: a converted image's size and `srcset`, null for the rest. */
export type PublishedFile = Omit<HostedFile, "width" | "height"> & {
  width: number | null;
  height: number | null;
  srcset: string | null;
};

/**
 * The `srcset` of a converted image `width` pixels wide: each configured width below it as
 * `{file_url}?width=N Nw`, then the image itself as `{file_url} {width}w`. Computed when answering, from the
 * widths configured now, so it never lists a width the media route would refuse.
 */
export function srcset(fileUrl: string, width: number, widths: number[]): string {
  return [
    ...widths.filter((candidate) => candidate < width).map((n) => `${fileUrl}?width=${n} ${n}w`),
    `${fileUrl} ${width}w`,
  ].join(", ");
}

/** Adds `width`, `height` and `srcset` to a hosted file result (null unless it is a converted image). */
export function publishedFile(result: HostedFile, widths: number[]): PublishedFile {
  const { width, height, ...file } = result;
  if (width === undefined || height === undefined) return { ...file, width: null, height: null, srcset: null };
  return { ...file, width, height, srcset: srcset(file.file_url, width, widths) };
}
