import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { decodeWebp, near, paint, quadrantColours, quadrants, writeRgbaPng } from "../../converter/test/images";
import { createApp } from "../../src/app";
import { readConfig } from "../../src/config";
import { signFileUrl } from "../../src/media/signing";
import { rememberedWidths, widthGenerations } from "../../src/media/widths";
import { mediaKey, mediaWidthKey, privateFileKey } from "../../src/storage/keys";
import { srcset } from "../../src/uploads/srcset";
import { WidthClaims, widthClaimMs } from "../../src/uploads/width-claims";
import { uuid } from "../support/factories";
import { api, json, origin, withBindings } from "../support/http";
import { captureServiceLogs } from "../support/logs";
import { gif } from "../support/media-bytes";
import { poll } from "../support/poll";
import { complete, stage } from "../support/uploads";

const defaultWidths = [160, 320, 480, 640, 960, 1280, 1920];
const unsupported = "Unsupported width. Use one of: 160, 320, 480, 640, 960, 1280, 1920.";

type Published = {
  name: string;
  file_url: string;
  type: string;
  width: number | null;
  height: number | null;
  srcset: string | null;
};

/** Uploads RGBA pixels as a PNG prepared as `image` and completes it: the converted image's result. */
async function hostImage(rgba: Uint8Array, width: number, height: number) {
  const png = await writeRgbaPng(rgba, width, height);
  const { storeId, token, reservation } = await stage(png, { filename: "zdjecie.png", content_type: "image/png" });
  const response = await complete(token, storeId, reservation.id);
  expect(response.status).toBe(201);
  const result = await json<Published>(response);
  return { storeId, token, uploadId: reservation.id, result, url: result.file_url };
}

const fetchUrl = (url: string, init?: RequestInit) => exports.default.fetch(new Request(url, init));
const bytesOf = async (response: Response) => new Uint8Array(await response.arrayBuffer());

/** Waits until the edge cache holds `url` (it is written after the answer, in the background). */
const cachedCopy = (url: string) =>
  poll(
    () => caches.default.match(url),
    (found): found is Response => found !== undefined,
    { intervalMs: 10, what: `a cached copy of ${url}` },
  );

/** Waits until R2 holds `key` (a made width is stored after the answer, in the background). */
const storedObject = (key: string) =>
  poll(
    () => env.BUCKET.head(key),
    (found): found is R2Object => found !== null,
    { intervalMs: 10, what: `an object at ${key}` },
  );

/** A WebP whose VP8X header announces an animation (what hosting keeps unchanged). */
function animatedWebp(): Uint8Array {
  const text = (value: string) => Array.from(value, (char) => char.charCodeAt(0));
  const vp8x = [...text("VP8X"), 10, 0, 0, 0, 0x02, 0, 0, 0, 99, 0, 0, 49, 0, 0];
  const anim = [...text("ANIM"), 6, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  const body = [...text("WEBP"), ...vp8x, ...anim];
  return Uint8Array.from([...text("RIFF"), body.length & 255, body.length >> 8, 0, 0, ...body]);
}

describe("hosted result of a converted image", () => {
  it("complete and GET /media-uploads/{id} answer width, height and a srcset of the widths below it, then the image", async () => {
    const { storeId, token, uploadId, result, url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const expected = [160, 320, 480, 640, 960]
      .map((n) => `${url}?width=${n} ${n}w`)
      .concat(`${url} 1000w`)
      .join(", ");
    expect(result).toMatchObject({ type: "image", width: 1000, height: 600, srcset: expected });
    const read = await json<{ result: Published }>(await api(`/media-uploads/${uploadId}`, { token, store: storeId }));
    expect(read.result).toEqual(result);
  });

  it("srcset of an image no wider than the smallest width lists the image alone", () => {
    expect(srcset("https://m.test/a.webp", 160, defaultWidths)).toBe("https://m.test/a.webp 160w");
    expect(srcset("https://m.test/a.webp", 2560, [640, 1280])).toBe(
      "https://m.test/a.webp?width=640 640w, https://m.test/a.webp?width=1280 1280w, https://m.test/a.webp 2560w",
    );
  });

  it("every other result (video, animation) has width, height and srcset null", async () => {
    const { storeId, token, reservation } = await stage(gif(2), { filename: "anim.gif", content_type: "image/gif" });
    const response = await complete(token, storeId, reservation.id);
    expect(await json(response)).toMatchObject({ type: "image", width: null, height: null, srcset: null });
  });
});

describe("GET {file_url}?width=N: the width made", () => {
  it("answers a WebP exactly N wide, height round(height × N / width), the picture kept", async () => {
    const { url } = await hostImage(quadrants(1000, 333), 1000, 333);
    for (const [width, height] of [
      [160, 53],
      [640, 213],
    ] as const) {
      const response = await fetchUrl(`${url}?width=${width}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("Content-Type")).toBe("image/webp");
      const decoded = await decodeWebp(await bytesOf(response));
      expect([decoded.width, decoded.height]).toEqual([width, height]);
      const at = (x: number, y: number) =>
        Array.from(decoded.data.subarray((y * width + x) * 4, (y * width + x) * 4 + 3));
      expect(near(at(2, 2), quadrantColours.topLeft)).toBe(true);
      expect(near(at(width - 3, height - 3), quadrantColours.bottomRight)).toBe(true);
    }
  });

  it("scales a portrait image by its width too (the long edge is the height)", async () => {
    const { url } = await hostImage(quadrants(600, 1000), 600, 1000);
    const decoded = await decodeWebp(await bytesOf(await fetchUrl(`${url}?width=480`)));
    expect([decoded.width, decoded.height]).toEqual([480, 800]);
  });

  it("keeps transparency", async () => {
    const rgba = paint(800, 400, (x) => (x < 400 ? [255, 0, 0, 0] : [0, 0, 255, 255]));
    const { url } = await hostImage(rgba, 800, 400);
    const decoded = await decodeWebp(await bytesOf(await fetchUrl(`${url}?width=320`)));
    expect([decoded.width, decoded.height]).toEqual([320, 160]);
    expect(decoded.data[(80 * 320 + 20) * 4 + 3]).toBe(0);
    expect(decoded.data[(80 * 320 + 300) * 4 + 3]).toBe(255);
  });

  it("a width at or above the image's own answers the hosted image itself: same bytes and ETag", async () => {
    const { url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const hosted = await fetchUrl(url);
    const hostedBytes = await bytesOf(hosted);
    const before = widthGenerations();
    for (const width of [1280, 1920]) {
      const response = await fetchUrl(`${url}?width=${width}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("ETag")).toBe(hosted.headers.get("ETag"));
      expect(await bytesOf(response)).toEqual(hostedBytes);
    }
    expect(widthGenerations()).toBe(before);
  });
});

describe("GET {file_url}?width=N: widths refused or ignored", () => {
  it("any width not in the list, not a decimal integer, or repeated answers 400 naming the configured widths", async () => {
    const { url } = await hostImage(quadrants(400, 300), 400, 300);
    for (const query of [
      "width=100",
      "width=abc",
      "width=320.0",
      "width=-320",
      "width=",
      "width=%20320",
      "width=320&width=320",
      "width=1e3",
    ]) {
      const response = await fetchUrl(`${url}?${query}`);
      expect(response.status, query).toBe(400);
      expect(await response.json(), query).toEqual({ message: unsupported });
    }
    const configured = await createApp().request(`${url}?width=100`, {}, { ...env, IMAGE_WIDTHS: "400, 200,200" });
    expect(configured.status).toBe(400);
    expect(await configured.json()).toEqual({ message: "Unsupported width. Use one of: 200, 400." });
    const allowed = await createApp().request(`${url}?width=200`, {}, { ...env, IMAGE_WIDTHS: "400, 200,200" });
    expect(allowed.status).toBe(200);
  });

  it("ignores other query parameters: no second variant is made", async () => {
    const { url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const first = await fetchUrl(`${url}?width=480`);
    const before = widthGenerations();
    const other = await fetchUrl(`${url}?v=2&width=480&utm_source=mail`);
    expect(other.status).toBe(200);
    expect(other.headers.get("ETag")).toBe(first.headers.get("ETag"));
    expect(await bytesOf(other)).toEqual(await bytesOf(first));
    expect(widthGenerations()).toBe(before);
  });

  it("video and animated images answer ?width= with the original, unchanged", async () => {
    const [store, upload] = [uuid(), uuid()];
    const video = Uint8Array.from({ length: 3000 }, (_, i) => i % 251);
    await env.BUCKET.put(mediaKey(store, upload, "mp4"), video, { httpMetadata: { contentType: "video/mp4" } });
    const played = await fetchUrl(`${origin}/media/${store}/${upload}.mp4?width=320`);
    expect(played.status).toBe(200);
    expect(await bytesOf(played)).toEqual(video);

    const animation = animatedWebp();
    await env.BUCKET.put(mediaKey(store, upload, "webp"), animation, { httpMetadata: { contentType: "image/webp" } });
    const animated = await fetchUrl(`${origin}/media/${store}/${upload}.webp?width=320`);
    expect(animated.status).toBe(200);
    expect(await bytesOf(animated)).toEqual(animation);

    const { storeId, token, reservation } = await stage(gif(2), { filename: "anim.gif", content_type: "image/gif" });
    const { file_url } = await json<Published>(await complete(token, storeId, reservation.id));
    const gifAnswer = await fetchUrl(`${file_url}?width=160`);
    expect(gifAnswer.status).toBe(200);
    expect(await bytesOf(gifAnswer)).toEqual(gif(2));
    expect(await env.BUCKET.list({ prefix: `media-widths/${storeId}/` }).then((list) => list.objects)).toEqual([]);
  });

  it("private files ignore width", async () => {
    const [store, upload] = [uuid(), uuid()];
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
    for (const width of ["320", "7"]) {
      const response = await fetchUrl(`${link}&width=${width}`);
      expect(response.status).toBe(200);
      expect(await bytesOf(response)).toEqual(bytes);
    }
  });
});

describe("GET {file_url}?width=N: the hosted image's headers", () => {
  it("has the hosted image's headers: strong ETag of its bytes, immutable, Content-Length, HEAD, Range, If-None-Match", async () => {
    const { storeId, uploadId, url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const variantUrl = `${url}?width=640`;
    const check = async (label: string) => {
      const response = await fetchUrl(variantUrl);
      const body = await bytesOf(response);
      const stored = await storedObject(mediaWidthKey(storeId, uploadId, 640));
      const md5 = [...new Uint8Array(await crypto.subtle.digest("MD5", body))]
        .map((b) => b.toString(16).padStart(2, "0"))
        .join("");
      expect(response.headers.get("ETag"), label).toBe(`"${md5}"`);
      expect(stored.httpEtag, label).toBe(`"${md5}"`);
      expect(response.headers.get("Cache-Control"), label).toBe("public, max-age=31536000, immutable");
      expect(response.headers.get("Content-Length"), label).toBe(String(body.length));
      const head = await fetchUrl(variantUrl, { method: "HEAD" });
      expect([head.status, head.headers.get("Content-Length"), await head.text()], label).toEqual([
        200,
        String(body.length),
        "",
      ]);
      const range = await fetchUrl(variantUrl, { headers: { Range: "bytes=10-19" } });
      expect(range.status, label).toBe(206);
      expect(range.headers.get("Content-Range"), label).toBe(`bytes 10-19/${body.length}`);
      expect(await bytesOf(range), label).toEqual(body.slice(10, 20));
      const unsatisfiable = await fetchUrl(variantUrl, { headers: { Range: `bytes=${body.length}-` } });
      expect(unsatisfiable.status, label).toBe(416);
      expect(unsatisfiable.headers.get("Content-Range"), label).toBe(`bytes */${body.length}`);
      const revalidated = await fetchUrl(variantUrl, { headers: { "If-None-Match": `"${md5}"` } });
      expect(revalidated.status, label).toBe(304);
    };
    await check("first answer, from R2");
    await cachedCopy(variantUrl);
    await check("from the edge cache");
  });
});

describe("a width made once, then served from memory, the cache or R2", () => {
  it("concurrent first requests answer identical bytes and decode the hosted image once", async () => {
    const { url } = await hostImage(quadrants(1600, 1000), 1600, 1000);
    const before = widthGenerations();
    const answers = await Promise.all(Array.from({ length: 6 }, () => fetchUrl(`${url}?width=960`)));
    expect(answers.map((response) => response.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const bodies = await Promise.all(answers.map(bytesOf));
    for (const body of bodies) expect(body).toEqual(bodies[0]);
    expect(widthGenerations() - before).toBe(1);
  });

  it("later requests decode nothing: served from the isolate's memory, the edge cache, or R2", async () => {
    const { storeId, uploadId, url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const made = new Map<number, Uint8Array>();
    for (const width of [320, 480, 640]) {
      made.set(width, await bytesOf(await fetchUrl(`${url}?width=${width}`)));
      await cachedCopy(`${url}?width=${width}`);
      await storedObject(mediaWidthKey(storeId, uploadId, width));
    }
    const generated = widthGenerations();

    // Only the isolate's memory has 320 now.
    await env.BUCKET.delete(mediaWidthKey(storeId, uploadId, 320));
    await caches.default.delete(`${url}?width=320`);
    const fromMemory = await fetchUrl(`${url}?width=320`);
    expect(fromMemory.status).toBe(200);
    expect(await bytesOf(fromMemory)).toEqual(made.get(320));

    // Only the edge cache has 480 now.
    rememberedWidths.clear();
    await env.BUCKET.delete(mediaWidthKey(storeId, uploadId, 480));
    const fromCache = await fetchUrl(`${url}?width=480`);
    expect(fromCache.status).toBe(200);
    expect(await bytesOf(fromCache)).toEqual(made.get(480));

    // Only R2 has 640 now.
    rememberedWidths.clear();
    await caches.default.delete(`${url}?width=640`);
    const fromR2 = await fetchUrl(`${url}?width=640`);
    expect(fromR2.status).toBe(200);
    expect(await bytesOf(fromR2)).toEqual(made.get(640));
    expect(widthGenerations()).toBe(generated);
  });

  it("a width read from memory has the same headers as one read from the edge cache", async () => {
    const { url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const first = await fetchUrl(`${url}?width=160`);
    await bytesOf(first);
    await cachedCopy(`${url}?width=160`);
    const fromMemory = await fetchUrl(`${url}?width=160`, { headers: { Range: "bytes=0-9" } });
    rememberedWidths.clear();
    const fromCache = await fetchUrl(`${url}?width=160`, { headers: { Range: "bytes=0-9" } });
    for (const response of [fromMemory, fromCache]) {
      expect(response.status).toBe(206);
      expect(response.headers.get("ETag")).toBe(first.headers.get("ETag"));
      expect(response.headers.get("Content-Range")).toBe(`bytes 0-9/${first.headers.get("Content-Length")}`);
      expect(response.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
    }
    expect(await bytesOf(fromMemory)).toEqual(await bytesOf(fromCache));
  });
});

describe("a width made once: failed generations and several widths at once", () => {
  // The damaged images' failed generations are logged; the lines are captured and checked.
  const logs = captureServiceLogs();

  it("a failed generation answers 503 with Retry-After, stores nothing, and the next request makes it", async () => {
    const { storeId, uploadId, url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const key = mediaKey(storeId, uploadId, "webp");
    const good = await env.BUCKET.get(key);
    const goodBytes = new Uint8Array((await good?.arrayBuffer()) ?? new ArrayBuffer(0));
    const damaged = goodBytes.slice();
    damaged.fill(0x55, 40);
    await env.BUCKET.put(key, damaged, { customMetadata: { width: "1000", height: "600" } });

    const failed = await fetchUrl(`${url}?width=640`);
    expect(failed.status).toBe(503);
    expect(Number(failed.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(await failed.json()).toEqual({ message: expect.stringContaining("try again") });
    expect(await env.BUCKET.head(mediaWidthKey(storeId, uploadId, 640))).toBeNull();
    expect(await caches.default.match(`${url}?width=640`)).toBeUndefined();
    logs.expectLogged("error", { message: "media: making a width failed", upload_id: uploadId, width: 640 });

    await env.BUCKET.put(key, goodBytes, { customMetadata: { width: "1000", height: "600" } });
    const retried = await fetchUrl(`${url}?width=640`);
    expect(retried.status).toBe(200);
    expect((await decodeWebp(await bytesOf(retried))).width).toBe(640);
  });
  it("requests waiting on a failed attempt answer 503 too, without each decoding again", async () => {
    const { storeId, uploadId, url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const key = mediaKey(storeId, uploadId, "webp");
    const damaged = new Uint8Array((await (await env.BUCKET.get(key))?.arrayBuffer()) ?? new ArrayBuffer(0));
    damaged.fill(0x55, 40);
    await env.BUCKET.put(key, damaged, { customMetadata: { width: "1000", height: "600" } });
    const before = widthGenerations();
    const answers = await Promise.all(Array.from({ length: 4 }, () => fetchUrl(`${url}?width=480`)));
    expect(answers.map((response) => response.status)).toEqual([503, 503, 503, 503]);
    for (const response of answers) expect(response.headers.get("Retry-After")).toBeTruthy();
    expect(widthGenerations() - before).toBe(1);
    logs.expectLogged("error", { message: "media: making a width failed", upload_id: uploadId, width: 480 });
  });

  it("several widths of one image and other requests at once: every one answered, each width made once", async () => {
    const { url } = await hostImage(quadrants(1200, 800), 1200, 800);
    const before = widthGenerations();
    const [narrow, middle, wide, hosted, ping] = await Promise.all([
      fetchUrl(`${url}?width=320`),
      fetchUrl(`${url}?width=640`),
      fetchUrl(`${url}?width=960`),
      fetchUrl(url),
      fetchUrl(`${origin}/api/v1/_dev/ping`),
    ]);
    for (const [response, width] of [
      [narrow, 320],
      [middle, 640],
      [wide, 960],
    ] as const) {
      expect(response.status).toBe(200);
      expect((await decodeWebp(await bytesOf(response))).width).toBe(width);
    }
    expect(hosted.status).toBe(200);
    expect(ping.status).toBe(204);
    expect(widthGenerations() - before).toBe(3);
  });

  it("an image hosted before sizes were recorded (no metadata) gets its size from the WebP header", async () => {
    const { storeId, uploadId, url } = await hostImage(quadrants(1000, 600), 1000, 600);
    const key = mediaKey(storeId, uploadId, "webp");
    const bytes = new Uint8Array((await (await env.BUCKET.get(key))?.arrayBuffer()) ?? new ArrayBuffer(0));
    await env.BUCKET.put(key, bytes, { httpMetadata: { contentType: "image/webp" } });
    const response = await fetchUrl(`${url}?width=480`);
    expect(response.status).toBe(200);
    const decoded = await decodeWebp(await bytesOf(response));
    expect([decoded.width, decoded.height]).toEqual([480, 288]);
    const same = await fetchUrl(`${url}?width=1280`);
    expect(await bytesOf(same)).toEqual(bytes);
  });
});

describe("width claims (the store coordinator's record of who makes a width)", () => {
  it("one request makes a width; the others wait, and learn of a failure of the attempt they waited on", () => {
    const claims = new WidthClaims();
    const first = claims.claim("u/640", null, 0);
    expect(first).toEqual({ verdict: "make", attempt: 1 });
    expect(claims.claim("u/640", null, 5)).toEqual({ verdict: "wait", attempt: 1 });
    expect(claims.claim("u/320", null, 5)).toEqual({ verdict: "make", attempt: 2 });
    claims.finish("u/640", 1, false, 10);
    expect(claims.claim("u/640", 1, 11)).toEqual({ verdict: "failed" });
    // A request that did not wait on the failed attempt tries again.
    expect(claims.claim("u/640", null, 12)).toEqual({ verdict: "make", attempt: 3 });
    claims.finish("u/640", 3, true, 20);
    // Made moments ago: read it; told so but found nothing (removed since): make it again.
    expect(claims.claim("u/640", null, 21)).toEqual({ verdict: "stored" });
    expect(claims.claim("u/640", null, 22, true)).toEqual({ verdict: "make", attempt: 4 });
    claims.finish("u/640", 4, true, 30);
    expect(claims.claim("u/640", null, 30 + widthClaimMs)).toEqual({ verdict: "make", attempt: 5 });
  });

  it("a claim whose holder never reports (its process died) is taken over within 10 s, and the stale report is ignored", () => {
    expect(widthClaimMs).toBeLessThanOrEqual(10_000);
    const claims = new WidthClaims();
    claims.claim("u/640", null, 0);
    expect(claims.claim("u/640", null, widthClaimMs - 1).verdict).toBe("wait");
    expect(claims.claim("u/640", 1, widthClaimMs)).toEqual({ verdict: "make", attempt: 2 });
    claims.finish("u/640", 1, false, widthClaimMs + 1);
    expect(claims.claim("u/640", 2, widthClaimMs + 2)).toEqual({ verdict: "wait", attempt: 2 });
  });
});

describe("IMAGE_WIDTHS", () => {
  it("defaults to 160…1920, is kept sorted without repeats, and a malformed list is reported", () => {
    expect(readConfig(withBindings({ IMAGE_WIDTHS: "" })).IMAGE_WIDTHS).toEqual({
      ok: true,
      value: defaultWidths,
    });
    expect(readConfig(withBindings({ IMAGE_WIDTHS: " 800, 400 ,800" })).IMAGE_WIDTHS).toEqual({
      ok: true,
      value: [400, 800],
    });
    for (const bad of ["abc", "0,320", "320,,640", "4000", "320.5"]) {
      const entry = readConfig(withBindings({ IMAGE_WIDTHS: bad })).IMAGE_WIDTHS;
      expect(entry, bad).toMatchObject({ ok: false, problem: expect.stringContaining("IMAGE_WIDTHS must be") });
    }
  });
});
