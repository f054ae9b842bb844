import { placeholderUrl } from "./placeholder-url";
import type { HostedFile } from "./upload-state";

/** One `<source>` of a `<picture>`: its media type and `srcset`. */
type PictureSource = { type: "image/avif" | "image/webp"; srcset: string };

/**
 * The hosted file result as the API answers it: a converted image's size, `srcset`, `<picture>` sources,
 * placeholder and dominant colour; null for the rest.
 */
export type PublishedFile = Omit<HostedFile, "width" | "height" | "placeholder" | "dominant_color"> & {
  width: number | null;
  height: number | null;
  srcset: string | null;
  sources: PictureSource[] | null;
  placeholder: string | null;
  placeholder_url: string | null;
  dominant_color: string | null;
};

/**
 * The `srcset` of a converted image `width` pixels wide: each configured width below it as
 * `{file_url}?width=N Nw`, then the image itself as `{file_url} {width}w`. Computed when answering, from the
 * widths configured now, so it never lists a width the media route would refuse. `avif` gives the same
 * candidates as AVIFs: `{file_url}?width=N&format=avif Nw`, then `{file_url}?format=avif {width}w`.
 */
export function srcset(fileUrl: string, width: number, widths: number[], avif = false): string {
  const format = avif ? "&format=avif" : "";
  return [
    ...widths.filter((candidate) => candidate < width).map((n) => `${fileUrl}?width=${n}${format} ${n}w`),
    `${fileUrl}${avif ? "?format=avif" : ""} ${width}w`,
  ].join(", ");
}

/**
 * Adds `width`, `height`, `srcset`, `sources` (AVIF first, then WebP), `placeholder`, `placeholder_url` and
 * `dominant_color` to a hosted file result: null unless it is a converted image; the last three null too for
 * an image converted before placeholders were made.
 */
export function publishedFile(result: HostedFile, widths: number[]): PublishedFile {
  const { width, height, placeholder, dominant_color, ...file } = result;
  const look = {
    placeholder: placeholder ?? null,
    placeholder_url: placeholder ? placeholderUrl(placeholder) : null,
    dominant_color: dominant_color ?? null,
  };
  if (width === undefined || height === undefined)
    return { ...file, width: null, height: null, srcset: null, sources: null, ...look };
  const webp = srcset(file.file_url, width, widths);
  const sources: PictureSource[] = [
    { type: "image/avif", srcset: srcset(file.file_url, width, widths, true) },
    { type: "image/webp", srcset: webp },
  ];
  return { ...file, width, height, srcset: webp, sources, ...look };
}
