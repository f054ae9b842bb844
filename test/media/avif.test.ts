import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  decodeAvif,
  decodeWebp,
  meanDifference,
  near,
  photoLike,
  quadrantColours,
  quadrants,
  writeRgbaPng,
} from "../../converter/test/images";
import type { ConverterService } from "../../src/converter/contract";
import { signFileUrl } from "../../src/media/signing";
import { rememberedWidths, widthGenerations } from "../../src/media/widths";
import { mediaAvifKey, mediaKey, privateFileKey } from "../../src/storage/keys";
import { widthClaimMs } from "../../src/uploads/width-claims";
import { uuid } from "../support/factories";
import { fetchApp, json, origin } from "../support/http";
import { captureServiceLogs } from "../support/logs";
import { gif } from "../support/media-bytes";
import { poll } from "../support/poll";
import { complete, stage } from "../support/uploads";

/** `{file_url}?format=` (docs/responsive-images.md, "AVIF"): an AVIF made once per width and format. */

const unsupportedFormat = "Unsupported format. Use one of: webp, avif, auto.";
const chromeAccept = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";

async function hostImage(rgba: Uint8Array, width: number, height: number) {
  const png = await writeRgbaPng(rgba, width, height);
  const { storeId, token, reservation } = await stage(png, { filename: "photo.png", content_type: "image/png" });
  const response = await complete(token, storeId, reservation.id);
  expect(response.status).toBe(201);
  const result = await json<{ file_url: string }>(response);
  return { storeId, token, uploadId: reservation.id, url: result.file_url };
}

const fetchUrl = (url: string, init?: RequestInit) => exports.default.fetch(new Request(url, init));
const bytesOf = async (response: Response) => new Uint8Array(await response.arrayBuffer());

async function until<T>(find: () => Promise<T | null | undefined>, what: string): Promise<T> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const found = await find();
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never found: ${what}`);
}

const md5 = async (bytes: Uint8Array) =>
  `"${[...new Uint8Array(await crypto.subtle.digest("MD5", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("")}"`;

describe("GET {file_url}?format=avif", () => {
  it("answers an AVIF of the image at full size, and with width N an AVIF exactly N wide, the picture kept", async () => {
    const { url } = await hostImage(quadrants(1000, 600), 1000, 600);
    for (const [query, width, height] of [
      ["format=avif", 1000, 600],
      ["width=640&format=avif", 640, 384],
      ["format=avif&width=160", 160, 96],
    ] as const) {
      const response = await fetchUrl(`${url}?${query}`);
      expect(response.status, query).toBe(200);
      expect(response.headers.get("Content-Type"), query).toBe("image/avif");
      const decoded = await decodeAvif(await bytesOf(response));
      expect([decoded.width, decoded.height], query).toEqual([width, height]);
      const at = (x: number, y: number) =>
        Array.from(decoded.data.subarray((y * width + x) * 4, (y * width + x) * 4 + 3));
      expect(near(at(3, 3), quadrantColours.topLeft), query).toBe(true);
      expect(near(at(width - 4, height - 4), quadrantColours.bottomRight), query).toBe(true);
    }
  });

  it("a width at or above the image's own with format=avif answers the full-size AVIF (same bytes and ETag as ?format=avif)", async () => {
    const { url } = await hostImage(quadrants(600, 400), 600, 400);
    const full = await fetchUrl(`${url}?format=avif`);
    const fullBytes = await bytesOf(full);
    const before = widthGenerations();
    for (const width of [640, 1920]) {
      const response = await fetchUrl(`${url}?width=${width}&format=avif`);
      expect(response.headers.get("ETag")).toBe(full.headers.get("ETag"));
      expect(await bytesOf(response)).toEqual(fullBytes);
    }
    expect(widthGenerations()).toBe(before);
  });

  it("format=webp is the default: it answers what the URL answers without it", async () => {
    const { url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const hosted = await fetchUrl(url);
    const asWebp = await fetchUrl(`${url}?format=webp`);
    expect(asWebp.headers.get("ETag")).toBe(hosted.headers.get("ETag"));
    expect(await bytesOf(asWebp)).toEqual(await bytesOf(hosted));
    const width = await fetchUrl(`${url}?width=320`);
    const widthAsWebp = await fetchUrl(`${url}?width=320&format=webp`);
    expect(widthAsWebp.headers.get("Content-Type")).toBe("image/webp");
    expect(widthAsWebp.headers.get("ETag")).toBe(width.headers.get("ETag"));
    expect(await bytesOf(widthAsWebp)).toEqual(await bytesOf(width));
  });

  it("any other format, or format repeated, answers 400 naming the formats", async () => {
    const { url } = await hostImage(quadrants(400, 300), 400, 300);
    for (const query of [
      "format=png",
      "format=AVIF",
      "format=",
      "format=jpeg&width=160",
      "format=avif&format=avif",
      "format=webp&format=avif",
    ]) {
      const response = await fetchUrl(`${url}?${query}`);
      expect(response.status, query).toBe(400);
      expect(await response.json(), query).toEqual({ message: unsupportedFormat });
    }
  });
});

describe("GET {file_url}?format=avif: media without variants, and the headers of an AVIF", () => {
  it("media without variants ignores format: video, animated images and private files answer their bytes unchanged", async () => {
    const [store, upload] = [uuid(), uuid()];
    const video = Uint8Array.from({ length: 3000 }, (_, i) => i % 251);
    await env.BUCKET.put(mediaKey(store, upload, "mp4"), video, { httpMetadata: { contentType: "video/mp4" } });
    const played = await fetchUrl(`${origin}/media/${store}/${upload}.mp4?format=avif`);
    expect([played.status, played.headers.get("Content-Type")]).toEqual([200, "video/mp4"]);
    expect(await bytesOf(played)).toEqual(video);

    const { storeId, token, reservation } = await stage(gif(2), { filename: "anim.gif", content_type: "image/gif" });
    const { file_url } = await json<{ file_url: string }>(await complete(token, storeId, reservation.id));
    for (const query of ["format=avif", "format=auto&width=160"]) {
      const animated = await fetchUrl(`${file_url}?${query}`, { headers: { Accept: chromeAccept } });
      expect(animated.status).toBe(200);
      expect(await bytesOf(animated)).toEqual(gif(2));
    }
    expect(await env.BUCKET.list({ prefix: `media-widths/${storeId}/` }).then((list) => list.objects)).toEqual([]);

    const bytes = Uint8Array.from({ length: 50 }, (_, i) => i);
    await env.BUCKET.put(privateFileKey(store, upload), bytes, {
      httpMetadata: { contentType: "image/png" },
      customMetadata: { filename: "a.png", kind: "image" },
    });
    const link = await signFileUrl(
      env.FILE_SIGNING_SECRET,
      `${origin}/files/${store}/${upload}/a.png`,
      new Date(Date.now() + 60_000),
    );
    const file = await fetchUrl(`${link}&format=avif`);
    expect(file.status).toBe(200);
    expect(await bytesOf(file)).toEqual(bytes);
  });

  it("has the WebP widths' headers: strong ETag of its bytes, immutable, Content-Length, HEAD, Range, If-None-Match", async () => {
    const { storeId, uploadId, url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const variantUrl = `${url}?width=480&format=avif`;
    const check = async (label: string) => {
      const response = await fetchUrl(variantUrl);
      const body = await bytesOf(response);
      const etag = await md5(body);
      const stored = await until(() => env.BUCKET.head(mediaAvifKey(storeId, uploadId, 480)), "the stored AVIF");
      expect(response.headers.get("ETag"), label).toBe(etag);
      expect(stored.httpEtag, label).toBe(etag);
      expect(response.headers.get("Content-Type"), label).toBe("image/avif");
      expect(response.headers.get("Cache-Control"), label).toBe("public, max-age=31536000, immutable");
      expect(response.headers.get("Content-Length"), label).toBe(String(body.length));
      const head = await fetchUrl(variantUrl, { method: "HEAD" });
      expect([head.status, head.headers.get("Content-Length"), await head.text()], label).toEqual([
        200,
        String(body.length),
        "",
      ]);
      const range = await fetchUrl(variantUrl, { headers: { Range: "bytes=4-11" } });
      expect([range.status, range.headers.get("Content-Range")], label).toEqual([206, `bytes 4-11/${body.length}`]);
      expect(await bytesOf(range), label).toEqual(body.slice(4, 12));
      const revalidated = await fetchUrl(variantUrl, { headers: { "If-None-Match": etag } });
      expect(revalidated.status, label).toBe(304);
    };
    await check("first answer");
    await until(() => caches.default.match(variantUrl), "the cached AVIF");
    rememberedWidths.clear();
    await check("from the edge cache");
  });
});

describe("format=auto", () => {
  it("answers AVIF when Accept lists image/avif, else WebP, always with Vary: Accept", async () => {
    const { url } = await hostImage(quadrants(1000, 600), 1000, 600);
    for (const [accept, type] of [
      [chromeAccept, "image/avif"],
      ["image/avif;q=0.9, image/webp", "image/avif"],
      ["image/webp,image/*,*/*;q=0.8", "image/webp"],
      ["image/avif;q=0, image/webp", "image/webp"],
      [null, "image/webp"],
    ] as const) {
      for (const query of ["format=auto", "format=auto&width=320"]) {
        const headers: HeadersInit = accept ? { Accept: accept } : {};
        const response = await fetchUrl(`${url}?${query}`, { headers });
        const label = `${query} ${accept}`;
        expect(response.status, label).toBe(200);
        expect(response.headers.get("Content-Type"), label).toBe(type);
        expect(response.headers.get("Vary"), label).toBe("Accept");
        await response.body?.cancel();
      }
    }
  });

  it("the cache key includes the chosen format: after an AVIF was cached, a browser without AVIF still gets WebP", async () => {
    const { url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const avif = await fetchUrl(`${url}?format=auto&width=640`, { headers: { Accept: chromeAccept } });
    expect(await decodeAvif(await bytesOf(avif))).toMatchObject({ width: 640 });
    await until(() => caches.default.match(`${url}?width=640&format=avif`), "the cached AVIF");
    const webp = await fetchUrl(`${url}?format=auto&width=640`, { headers: { Accept: "image/webp,*/*" } });
    expect(webp.headers.get("Content-Type")).toBe("image/webp");
    expect(await decodeWebp(await bytesOf(webp))).toMatchObject({ width: 640 });
    // And the other way round, with the hosted image: a WebP answered first never reaches an AVIF browser.
    const hosted = await fetchUrl(`${url}?format=auto`, { headers: { Accept: "image/webp" } });
    expect(hosted.headers.get("Content-Type")).toBe("image/webp");
    const full = await fetchUrl(`${url}?format=auto`, { headers: { Accept: chromeAccept } });
    expect(full.headers.get("Content-Type")).toBe("image/avif");
  });
});

describe("an AVIF is made once, then served from the cache or R2", () => {
  // The failures provoked on purpose (a damaged hosted file) are logged by the API: captured and checked.
  const logs = captureServiceLogs();

  it("concurrent first requests answer identical bytes and encode once per (width, format)", async () => {
    const { url } = await hostImage(quadrants(1600, 1000), 1600, 1000);
    const before = widthGenerations();
    const urls = [...Array(4).fill(`${url}?width=960&format=avif`), ...Array(2).fill(`${url}?width=960`)];
    const answers = await Promise.all(urls.map((each) => fetchUrl(each)));
    expect(answers.map((response) => response.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const bodies = await Promise.all(answers.map(bytesOf));
    for (const body of bodies.slice(1, 4)) expect(body).toEqual(bodies[0]);
    expect(bodies[4]).toEqual(bodies[5]);
    expect(answers[4]?.headers.get("Content-Type")).toBe("image/webp");
    // One AVIF and one WebP of that width.
    expect(widthGenerations() - before).toBe(2);
  });

  it("later requests encode nothing: served from the isolate's memory, the edge cache, or R2", async () => {
    const { storeId, uploadId, url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const made = await bytesOf(await fetchUrl(`${url}?format=avif`));
    await until(() => env.BUCKET.head(mediaAvifKey(storeId, uploadId, null)), "the stored AVIF");
    await until(() => caches.default.match(`${url}?format=avif`), "the cached AVIF");
    const generated = widthGenerations();
    expect(await bytesOf(await fetchUrl(`${url}?format=avif`))).toEqual(made);
    rememberedWidths.clear();
    expect(await bytesOf(await fetchUrl(`${url}?format=avif`))).toEqual(made);
    rememberedWidths.clear();
    await caches.default.delete(`${url}?format=avif`);
    expect(await bytesOf(await fetchUrl(`${url}?format=avif`))).toEqual(made);
    expect(widthGenerations()).toBe(generated);
  });

  it("an AVIF that cannot be made answers 503 with Retry-After, stores nothing, and the next request makes it", async () => {
    const { storeId, uploadId, url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const key = mediaKey(storeId, uploadId, "webp");
    const good = new Uint8Array((await (await env.BUCKET.get(key))?.arrayBuffer()) ?? new ArrayBuffer(0));
    const damaged = good.slice();
    damaged.fill(0x55, 40);
    await env.BUCKET.put(key, damaged, { customMetadata: { width: "1000", height: "600" } });
    const failed = await fetchUrl(`${url}?width=640&format=avif`);
    expect(failed.status).toBe(503);
    expect(Number(failed.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(await failed.json()).toEqual({ message: expect.stringContaining("AVIF") });
    expect(await env.BUCKET.head(mediaAvifKey(storeId, uploadId, 640))).toBeNull();
    expect(await caches.default.match(`${url}?width=640&format=avif`)).toBeUndefined();
    logs.expectLogged("error", {
      message: "media: making a width failed",
      width: 640,
      format: "avif",
      error: expect.stringContaining("refused the hosted image (unconvertible)"),
    });
    // The converter answered a refusal: its call did not fail (an exception out of it is reported as uncaught).
    expect(logs.lines("error")).not.toContainEqual(expect.objectContaining({ message: "converter: the call failed" }));

    await env.BUCKET.put(key, good, { customMetadata: { width: "1000", height: "600" } });
    const retried = await fetchUrl(`${url}?width=640&format=avif`);
    expect(retried.status).toBe(200);
    expect((await decodeAvif(await bytesOf(retried))).width).toBe(640);
  });

  it("an image past the encoder's pixel budget gets its full-size AVIF at exactly its size (2560 × 1920, a grid of tiles), showing the hosted WebP; its 1920 width too", async () => {
    const { url } = await hostImage(photoLike(2560, 1920), 2560, 1920);
    const decoded = await decodeAvif(await bytesOf(await fetchUrl(`${url}?format=avif`)));
    expect([decoded.width, decoded.height]).toEqual([2560, 1920]);
    const webp = await decodeWebp(await bytesOf(await fetchUrl(url)));
    expect(meanDifference(decoded.data, webp.data)).toBeLessThan(6);
    // Its 1920 width, past the budget too, is made exactly, and so is one within the budget.
    expect(await decodeAvif(await bytesOf(await fetchUrl(`${url}?width=1920&format=avif`)))).toMatchObject({
      width: 1920,
      height: 1440,
    });
    expect(await decodeAvif(await bytesOf(await fetchUrl(`${url}?width=1280&format=avif`)))).toMatchObject({
      width: 1280,
      height: 960,
    });
  }, 240_000);
});

describe("an AVIF's claim lasts as long as its encode", () => {
  it("concurrent first requests encode once even when the encode outlasts a claim's lease (a grid, a busy converter): the maker renews its claim", async () => {
    const { url } = await hostImage(quadrants(1000, 600), 1000, 600);
    // An encode that takes longer than a lease: the time is the point, the coordinator's claims run on real time.
    // Its own count of encodes, not the isolate's (widthGenerations): the test files share the isolate.
    let encodes = 0;
    const slowConverter: ConverterService = {
      convert: (job) => env.CONVERTER.convert(job),
      makeWidth: (job) => env.CONVERTER.makeWidth(job),
      describe: (head) => env.CONVERTER.describe(head),
      async makeAvif(job) {
        encodes += 1;
        const started = Date.now();
        await poll(Date.now, (now) => now - started > widthClaimMs + 500, { timeoutMs: 2 * widthClaimMs });
        return env.CONVERTER.makeAvif(job);
      },
    };
    const asked = Array.from({ length: 4 }, () =>
      fetchApp(`${url}?width=640&format=avif`, {}, { CONVERTER: slowConverter }),
    );
    const answers = await Promise.all(asked);
    expect(answers.map((response) => response.status)).toEqual([200, 200, 200, 200]);
    const bodies = await Promise.all(answers.map(bytesOf));
    for (const body of bodies.slice(1)) expect(body).toEqual(bodies[0]);
    expect(encodes).toBe(1);
  }, 60_000);
});
