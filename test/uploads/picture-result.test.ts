import { env } from "cloudflare:workers";
import { thumbHashToRGBA } from "thumbhash";
import { describe, expect, it } from "vitest";
import { placeholderOf } from "../../converter/src/convert/placeholder";
import { paint, quadrants, writeRgbaPng } from "../../converter/test/images";
import { mediaKey } from "../../src/storage/keys";
import { hostUpload } from "../../src/uploads/complete/hosting";
import { maxPlaceholderUrlLength, placeholderUrl } from "../../src/uploads/placeholder-url";
import { publishedFile } from "../../src/uploads/srcset";
import type { UploadRecord } from "../../src/uploads/upload-state";
import { seedStore } from "../support/factories";
import { api, json, origin } from "../support/http";
import { gif, pdf } from "../support/media-bytes";
import { complete, stage } from "../support/uploads";

/**
 * What the hosted file result of a converted image gives a `<picture>` and a page before the image arrives
 * (docs/responsive-images.md): `sources`, `placeholder`, `placeholder_url`, `dominant_color`.
 */

type Published = {
  file_url: string;
  width: number | null;
  srcset: string | null;
  sources: { type: string; srcset: string }[] | null;
  placeholder: string | null;
  placeholder_url: string | null;
  dominant_color: string | null;
};

const fromBase64 = (text: string) => Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
const coordinatorOf = (storeId: string) => env.STORE_COORDINATOR.get(env.STORE_COORDINATOR.idFromName(storeId));

async function hostImage(rgba: Uint8Array, width: number, height: number) {
  const png = await writeRgbaPng(rgba, width, height);
  const { storeId, token, reservation } = await stage(png, { filename: "photo.png", content_type: "image/png" });
  const response = await complete(token, storeId, reservation.id);
  expect(response.status).toBe(201);
  return { storeId, token, uploadId: reservation.id, result: await json<Published>(response) };
}

/** The pixels of a PNG as placeholder-url.ts writes it (one stored deflate block), its checksums verified. */
async function readPng(bytes: Uint8Array) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  expect(Array.from(bytes.subarray(0, 8))).toEqual([137, 80, 78, 71, 13, 10, 26, 10]);
  const chunks = new Map<string, Uint8Array>();
  for (let at = 8; at < bytes.length; ) {
    const length = view.getUint32(at);
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    chunks.set(type, bytes.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  const header = chunks.get("IHDR") as Uint8Array;
  const hv = new DataView(header.buffer, header.byteOffset, header.byteLength);
  const inflated = new Response(
    new Blob([chunks.get("IDAT") as Uint8Array]).stream().pipeThrough(new DecompressionStream("deflate")),
  );
  const rows = new Uint8Array(await inflated.arrayBuffer()); // throws on a wrong Adler-32
  return { width: hv.getUint32(0), height: hv.getUint32(4), colourType: header[9], rows, ends: chunks.has("IEND") };
}

// The file's first complete also starts the converter's codec instances (a second or two on a shared machine).
describe("the hosted result of a converted image", { timeout: 30_000 }, () => {
  it("complete and GET /media-uploads/{id} add sources (AVIF, then WebP), placeholder, placeholder_url and dominant_color", async () => {
    const { storeId, token, uploadId, result } = await hostImage(quadrants(1000, 600), 1000, 600);
    const url = result.file_url;
    const avif = [160, 320, 480, 640, 960]
      .map((n) => `${url}?width=${n}&format=avif ${n}w`)
      .concat(`${url}?format=avif 1000w`)
      .join(", ");
    expect(result.sources).toEqual([
      { type: "image/avif", srcset: avif },
      { type: "image/webp", srcset: result.srcset },
    ]);
    expect(result.placeholder).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(thumbHashToRGBA(fromBase64(result.placeholder ?? "")).w).toBeGreaterThan(0);
    expect(result.placeholder_url).toBe(placeholderUrl(result.placeholder ?? ""));
    // The four quadrants' mean: red, green, blue and white in equal parts.
    expect(result.dominant_color).toMatch(/^#(7f|80)(7f|80)(7f|80)$/);
    const read = await json<{ result: Published }>(await api(`/media-uploads/${uploadId}`, { token, store: storeId }));
    expect(read.result).toEqual(result);
  });

  it("dominant_color is the alpha-weighted mean of the sRGB values (what is transparent does not count)", async () => {
    const rgba = paint(400, 200, (x) =>
      x < 100 ? [10, 20, 200, 255] : x < 200 ? [250, 250, 250, 0] : [200, 60, 20, 255],
    );
    const { result } = await hostImage(rgba, 400, 200);
    const [r, g, b] = [1, 3, 5].map((at) => Number.parseInt(result.dominant_color?.slice(at, at + 2) ?? "", 16));
    // One part blue to two parts orange.
    expect(Math.abs((r as number) - 137)).toBeLessThanOrEqual(1);
    expect(Math.abs((g as number) - 47)).toBeLessThanOrEqual(1);
    expect(Math.abs((b as number) - 80)).toBeLessThanOrEqual(1);
  });

  it("every other result (animation, private file) has sources, placeholder, placeholder_url and dominant_color null", async () => {
    const owner = await seedStore();
    for (const [bytes, options] of [
      [gif(2), { filename: "anim.gif", content_type: "image/gif" }],
      [pdf(), { filename: "a.pdf", content_type: "application/pdf", type: "file" }],
    ] as const) {
      const { reservation } = await stage(bytes, options, owner);
      const result = await json<Published>(await complete(owner.token, owner.storeId, reservation.id));
      expect(result).toMatchObject({ sources: null, placeholder: null, placeholder_url: null, dominant_color: null });
    }
  });

  it("an upload completed before placeholders were made answers them null (its sources still listed)", () => {
    const old = { name: "a.png", file_url: "https://m.test/a.webp", type: "image" as const, width: 800, height: 600 };
    const published = publishedFile(old, [320, 640]);
    expect(published).toMatchObject({ placeholder: null, placeholder_url: null, dominant_color: null });
    expect(published.sources?.map((source) => source.type)).toEqual(["image/avif", "image/webp"]);
  });

  it("a complete that died after writing the WebP recovers its placeholder and colour from the WebP's metadata", async () => {
    const { storeId, uploadId, result } = await hostImage(quadrants(640, 480), 640, 480);
    const record: UploadRecord & { hostedKey: string } = {
      id: uploadId,
      tokenHash: "",
      filename: "photo.png",
      contentType: "image/png",
      size: 1,
      type: "image",
      state: "processing",
      expiresAt: Date.now() + 60_000,
      leaseUntil: null,
      putAttempt: 1,
      completeAttempt: 1,
      result: null,
      failure: null,
      multipart: null,
      hostedKey: mediaKey(storeId, uploadId, "webp"),
    };
    const deps = {
      bucket: env.BUCKET,
      coordinator: coordinatorOf(storeId),
      attempt: 1,
      converter: env.CONVERTER,
      requestId: "recovery",
      urls: { mediaBaseUrl: `${origin}/media`, origin },
      settings: { maxImageEdge: () => 2560 },
    };
    const outcome = await hostUpload(deps, storeId, record);
    expect(outcome).toMatchObject({
      hosted: { width: 640, height: 480, placeholder: result.placeholder, dominant_color: result.dominant_color },
    });
  });
});

describe("placeholder_url", () => {
  it("is a data:image/png;base64 URL of at most 1,000 characters for every shape, opaque or not, and a valid PNG of the ThumbHash's render", async () => {
    const shapes = [
      [1000, 600],
      [600, 1000],
      [2560, 100],
      [100, 2560],
      [300, 300],
    ] as const;
    for (const [width, height] of shapes)
      for (const alpha of [255, 128]) {
        const rgba = paint(width, height, (x, y) => [
          (x * 7) & 255,
          (y * 3) & 255,
          (x ^ y) & 255,
          x < width / 2 ? alpha : 255,
        ]);
        const { placeholder } = placeholderOf(rgba, width, height);
        const url = placeholderUrl(placeholder);
        const label = `${width} × ${height}, alpha ${alpha}`;
        expect(url.startsWith("data:image/png;base64,"), label).toBe(true);
        expect(url.length, label).toBeLessThanOrEqual(maxPlaceholderUrlLength);
        const png = await readPng(fromBase64(url.slice("data:image/png;base64,".length)));
        expect(png.ends, label).toBe(true);
        expect(png.colourType, label).toBe(alpha === 255 ? 2 : 6);
        const render = thumbHashToRGBA(fromBase64(placeholder));
        // The render's aspect, within a pixel.
        expect(Math.abs(png.width / png.height - render.w / render.h), label).toBeLessThan(
          render.w / render.h / png.height + 0.5,
        );
        expect(png.rows.length, label).toBe(png.height * (1 + png.width * (alpha === 255 ? 3 : 4)));
      }
  });

  it("shows the ThumbHash's colours: its top-left pixel is the render's, within the reduction's averaging", async () => {
    const { placeholder } = placeholderOf(quadrants(400, 300), 400, 300);
    const render = thumbHashToRGBA(fromBase64(placeholder));
    const png = await readPng(fromBase64(placeholderUrl(placeholder).slice(22)));
    const first = Array.from(png.rows.subarray(1, 4));
    const corner = Array.from(render.rgba.subarray(0, 3));
    first.forEach((value, c) => {
      expect(Math.abs(value - (corner[c] as number))).toBeLessThan(40);
    });
  });
});
