import { z } from "@hono/zod-openapi";
import { messages } from "../http/errors";
import { uuidParam } from "../http/params";

/** The schemas and guard more than one upload operation documents. */

export const UploadParams = z.object({
  id: uuidParam("id", messages.invalidUploadId, "Upload id"),
});

/** The guard of the bearer operations: prepare, complete and the upload's state. */
export const mediaWrite = { ability: "media:write", store: "required" } as const;

export const MultipartPlan = z
  .object({
    part_size: z.number().int().openapi({ description: "Bytes of every part but the last, which holds the rest" }),
    part_count: z.number().int(),
    part_url: z.string().openapi({
      description: "Where each part is PUT: absolute, with the literal `{part_number}` (1-based) to fill in",
      example: "https://checkout.example/api/v1/media-uploads/0b7c…/parts/{part_number}",
    }),
  })
  .openapi("MultipartPlan");

const PictureSourceSchema = z
  .object({
    type: z.enum(["image/avif", "image/webp"]),
    srcset: z.string(),
  })
  .openapi("PictureSource");

export const HostedFileSchema = z
  .object({
    name: z.string(),
    file_url: z.string(),
    type: z.enum(["image", "video", "file"]),
    width: z.number().int().nullable().openapi({
      description: "Width in pixels of a converted image (hosted as WebP); null for every other result",
      example: 2560,
    }),
    height: z.number().int().nullable().openapi({
      description: "Height in pixels of a converted image; null for every other result",
      example: 1707,
    }),
    srcset: z.string().nullable().openapi({
      description:
        "For a converted image, an `<img srcset>` value: each configured width below the image's (`IMAGE_WIDTHS`) as `{file_url}?width=N Nw`, then `{file_url} {width}w`, joined by `, `. `{file_url}?width=N` is the image N pixels wide. Null for every other result.",
      example:
        "https://media.example.com/3f0c…/9a1e….webp?width=640 640w, https://media.example.com/3f0c…/9a1e….webp 2560w",
    }),
    sources: z.array(PictureSourceSchema).nullable().openapi({
      description:
        "For a converted image, the `<source>` elements of a `<picture>`, AVIF first: `image/avif` with the same candidates as `srcset` in AVIF (`{file_url}?width=N&format=avif Nw`, then `{file_url}?format=avif {width}w`), then `image/webp` whose `srcset` equals `srcset`. Null for every other result.",
    }),
    placeholder: z.string().nullable().openapi({
      description:
        "For a converted image, its ThumbHash (base64, alpha kept): a few dozen bytes a page decodes into a blurred preview. Null for every other result, and for images converted before placeholders were made.",
      example: "3OcRJYB4d3h/iIeHeEh3eIhw+j3A",
    }),
    placeholder_url: z.string().nullable().openapi({
      description:
        "The placeholder rendered as a `data:image/png;base64,` URL of at most 1,000 characters: an `<img src>` before the image arrives, or Next.js `blurDataURL`. Null when `placeholder` is.",
      example: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAM…",
    }),
    dominant_color: z.string().nullable().openapi({
      description:
        "For a converted image, the alpha-weighted mean of its sRGB values as lowercase `#rrggbb`: a background while it loads. Null when `placeholder` is.",
      example: "#8a6f4e",
    }),
  })
  .openapi("HostedFile");

/** A 503 the client answers by trying again: what failed, and that nothing changed. */
export function retryLater(description: string) {
  return { description, content: { "application/json": { schema: z.object({ message: z.string() }) } } };
}

/** The upload's URL: where its single PUT goes, and the base of its parts'. */
export function uploadUrl(requestUrl: string, apiBasePath: string, id: string): string {
  return `${new URL(requestUrl).origin}${apiBasePath}/media-uploads/${id}`;
}

/** Where a multipart upload's parts go, with the literal `{part_number}` to fill in. */
export function partUrl(requestUrl: string, apiBasePath: string, id: string): string {
  return `${uploadUrl(requestUrl, apiBasePath, id)}/parts/{part_number}`;
}
