import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parseRange } from "../../src/media/range";
import { signFileUrl, verifyFileSignature } from "../../src/media/signing";
import { inPlaceMetadata } from "../../src/storage/in-place";
import { mediaKey, privateFileKey, stagedKey } from "../../src/storage/keys";
import { uuid } from "../support/factories";
import { origin } from "../support/http";
import { countAllTrips } from "../support/round-trips";

const get = (path: string, init?: RequestInit) => exports.default.fetch(new Request(`${origin}${path}`, init));
const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => i % 251);

/**
 * Writes `data` as hosted at `key` with `options`: `"at the hosted key"` as complete wrote everything before
 * hosting in place (and still writes converted images), `"in place"` as it hosts bytes unchanged now: the
 * bytes at the upload's staged key (stored under the type the client declared), an empty object at the
 * hosted key naming them.
 */
async function host(
  layout: Layout,
  key: string,
  staged: string,
  data: Uint8Array,
  options: R2PutOptions,
): Promise<R2Object> {
  if (layout === "at the hosted key") return (await env.BUCKET.put(key, data, options)) as R2Object;
  const object = (await env.BUCKET.put(staged, data, {
    httpMetadata: { contentType: "application/octet-stream" },
  })) as R2Object;
  await env.BUCKET.put(key, null, {
    ...options,
    customMetadata: { ...options.customMetadata, ...inPlaceMetadata(object) },
  });
  return object;
}

type Layout = "at the hosted key" | "in place";
const layouts: Layout[] = ["at the hosted key", "in place"];

for (const layout of layouts) {
  async function publicVideo() {
    const [store, upload] = [uuid(), uuid()];
    await host(layout, mediaKey(store, upload, "mp4"), stagedKey(store, upload), bytes(1000), {
      httpMetadata: { contentType: "video/mp4" },
    });
    return `/media/${store}/${upload}.mp4`;
  }

  describe(`public media, bytes ${layout}`, () => {
    it("serves the object with Content-Type, ETag and immutable caching", async () => {
      const path = await publicVideo();
      const response = await get(path);
      expect(response.status).toBe(200);
      expect(response.headers.get("Content-Type")).toBe("video/mp4");
      expect(response.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
      expect(response.headers.get("ETag")).toMatch(/^".+"$/);
      expect(response.headers.get("Content-Length")).toBe("1000");
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes(1000));
    });

    it("answers HEAD with the headers and no body", async () => {
      const response = await get(await publicVideo(), { method: "HEAD" });
      expect(response.status).toBe(200);
      expect(response.headers.get("Content-Length")).toBe("1000");
      expect(await response.text()).toBe("");
    });

    it("serves a single byte range with 206 and Content-Range (video seeking)", async () => {
      const path = await publicVideo();
      const response = await get(path, { headers: { Range: "bytes=100-199" } });
      expect(response.status).toBe(206);
      expect(response.headers.get("Content-Range")).toBe("bytes 100-199/1000");
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes(1000).slice(100, 200));
      const tail = await get(path, { headers: { Range: "bytes=-10" } });
      expect(tail.headers.get("Content-Range")).toBe("bytes 990-999/1000");
    });

    it("answers an unsatisfiable range 416 with Content-Range bytes */size", async () => {
      const response = await get(await publicVideo(), { headers: { Range: "bytes=5000-" } });
      expect(response.status).toBe(416);
      expect(response.headers.get("Content-Range")).toBe("bytes */1000");
    });

    it("answers a matching If-None-Match 304", async () => {
      const path = await publicVideo();
      const etag = (await get(path, { method: "HEAD" })).headers.get("ETag") ?? "";
      expect((await get(path, { headers: { "If-None-Match": etag } })).status).toBe(304);
    });

    it("answers unknown and malformed media paths 404", async () => {
      for (const path of [`/media/${uuid()}/${uuid()}.webp`, "/media/x/y.webp", `/media/${uuid()}/../secret`]) {
        expect((await get(path)).status, path).toBe(404);
      }
    });
  });

  describe(`private files, bytes ${layout}`, () => {
    async function privateFile(kind: string, filename = "faktura 2026.pdf") {
      const [store, upload] = [uuid(), uuid()];
      await host(layout, privateFileKey(store, upload), stagedKey(store, upload), bytes(50), {
        httpMetadata: { contentType: "application/pdf" },
        customMetadata: { filename, kind },
      });
      return `${origin}/files/${store}/${upload}/${encodeURIComponent(filename)}`;
    }

    it("answers 403 without a signature", async () => {
      const response = await exports.default.fetch(await privateFile("file"));
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({ message: "The link is invalid or has expired." });
    });

    it("serves a validly signed link as an attachment with nosniff", async () => {
      const link = await signFileUrl(env.FILE_SIGNING_SECRET, await privateFile("file"), new Date(Date.now() + 60_000));
      const response = await exports.default.fetch(link);
      expect(response.status).toBe(200);
      expect(response.headers.get("Content-Disposition")).toBe("attachment; filename*=UTF-8''faktura%202026.pdf");
      expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes(50));
    });

    it("writes the filename as RFC 8187's ext-value: every byte but attr-char percent-encoded, ' ( ) * included", async () => {
      const filename = "it's (final)*~!#$&+^`|-_.ł.pdf";
      const link = await signFileUrl(
        env.FILE_SIGNING_SECRET,
        await privateFile("file", filename),
        new Date(Date.now() + 60_000),
      );
      const header = (await exports.default.fetch(link)).headers.get("Content-Disposition") ?? "";
      expect(header).toBe("attachment; filename*=UTF-8''it%27s%20%28final%29%2A~!%23%24%26%2B%5E%60%7C-_.%C5%82.pdf");
      // Only attr-char is left as it is (RFC 8187, section 3.2.1), and the value decodes to the filename.
      const value = header.slice(header.indexOf("''") + 2);
      expect(value).toMatch(/^(?:[A-Za-z0-9!#$&+\-.^_`|~]|%[0-9A-F]{2})+$/);
      expect(decodeURIComponent(value)).toBe(filename);
    });

    it("serves private images and videos inline", async () => {
      const link = await signFileUrl(
        env.FILE_SIGNING_SECRET,
        await privateFile("image", "a.png"),
        new Date(Date.now() + 60_000),
      );
      expect((await exports.default.fetch(link)).headers.get("Content-Disposition")).toMatch(/^inline;/);
    });

    it("refuses an expired, tampered or other-path signature with 403", async () => {
      const locator = await privateFile("file");
      const expired = await signFileUrl(env.FILE_SIGNING_SECRET, locator, new Date(Date.now() - 1000));
      const valid = new URL(await signFileUrl(env.FILE_SIGNING_SECRET, locator, new Date(Date.now() + 60_000)));
      const tampered = new URL(valid);
      tampered.searchParams.set("expires", String(Number(valid.searchParams.get("expires")) + 3600));
      const otherPath = new URL(await privateFile("file"));
      otherPath.search = valid.search;
      const wrongKey = await signFileUrl("another-secret", locator, new Date(Date.now() + 60_000));
      for (const link of [expired, tampered.toString(), otherPath.toString(), wrongKey]) {
        expect((await exports.default.fetch(link)).status, link).toBe(403);
      }
    });
  });
}

describe("ranges and signatures", () => {
  it("parses ranges by RFC 9110, ignoring what it may ignore", () => {
    expect(parseRange("bytes=0-0", 10)).toEqual({ offset: 0, length: 1 });
    expect(parseRange("bytes=5-", 10)).toEqual({ offset: 5, length: 5 });
    expect(parseRange("bytes=5-100", 10)).toEqual({ offset: 5, length: 5 });
    expect(parseRange("bytes=-20", 10)).toEqual({ offset: 0, length: 10 });
    expect(parseRange("bytes=10-", 10)).toBe("unsatisfiable");
    expect(parseRange("bytes=-0", 10)).toBe("unsatisfiable");
    expect(parseRange("bytes=0-1,3-4", 10)).toBeNull();
    expect(parseRange("items=0-1", 10)).toBeNull();
    expect(parseRange("bytes=7-3", 10)).toBeNull();
  });

  it("verifies signatures without accepting malformed inputs", async () => {
    expect(await verifyFileSignature("s", "/files/a", undefined, "x")).toBe(false);
    expect(await verifyFileSignature("s", "/files/a", "12ab", "x")).toBe(false);
    expect(await verifyFileSignature("", "/files/a", "99999999999", "x")).toBe(false);
  });
});

describe("in-place objects", () => {
  async function inPlaceVideo(size = 1000) {
    const [store, upload] = [uuid(), uuid()];
    const staged = await host("in place", mediaKey(store, upload, "mp4"), stagedKey(store, upload), bytes(size), {
      httpMetadata: { contentType: "video/mp4" },
    });
    return { path: `/media/${store}/${upload}.mp4`, staged };
  }

  it("serve the staged bytes under the hosted object's Content-Type (not the declared one) and the staged bytes' ETag", async () => {
    const { path, staged } = await inPlaceVideo();
    const response = await get(path);
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("video/mp4");
    expect(response.headers.get("ETag")).toBe(staged.httpEtag);
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes(1000));
  });

  it("answer 404 when the bytes they name are gone or were replaced, never other bytes under the old headers", async () => {
    const gone = await inPlaceVideo();
    await env.BUCKET.delete(gone.staged.key);
    expect((await get(gone.path)).status).toBe(404);
    const replaced = await inPlaceVideo();
    await env.BUCKET.put(replaced.staged.key, bytes(999));
    expect((await get(replaced.path)).status).toBe(404);
    expect((await get(replaced.path, { headers: { Range: "bytes=0-9" } })).status).toBe(404);
  });

  it("an empty object with malformed size metadata is not served (404)", async () => {
    const [store, upload] = [uuid(), uuid()];
    await env.BUCKET.put(mediaKey(store, upload, "mp4"), null, {
      customMetadata: {
        ...inPlaceMetadata({ key: stagedKey(store, upload), size: 5, etag: "x" }),
        "bytes-size": "many",
      },
    });
    expect((await get(`/media/${store}/${upload}.mp4`)).status).toBe(404);
  });
});

describe("round trips of a media request", () => {
  for (const layout of layouts) {
    it(`bytes ${layout}: one R2 head for HEAD, 304 and 416, one R2 get more for a GET or a range; no D1 or Durable Object call`, async () => {
      const [store, upload] = [uuid(), uuid()];
      const staged = await host(layout, mediaKey(store, upload, "mp4"), stagedKey(store, upload), bytes(1000), {
        httpMetadata: { contentType: "video/mp4" },
      });
      const path = `/media/${store}/${upload}.mp4`;
      for (const [name, init, status, r2] of [
        ["HEAD", { method: "HEAD" }, 200, { head: 1 }],
        ["GET", {}, 200, { head: 1, get: 1 }],
        ["range", { headers: { Range: "bytes=10-19" } }, 206, { head: 1, get: 1 }],
        ["304", { headers: { "If-None-Match": staged.httpEtag } }, 304, { head: 1 }],
        ["416", { headers: { Range: "bytes=5000-" } }, 416, { head: 1 }],
      ] as const) {
        const { response, body, trips } = await countAllTrips(path, init);
        expect(response.status, name).toBe(status);
        if (name === "range") expect(body, name).toEqual(bytes(1000).slice(10, 20));
        expect(trips, name).toEqual({ d1: 0, durableObjects: 0, r2 });
      }
    });
  }

  it("a signed private file in place: one R2 head and one R2 get, no D1 or Durable Object call", async () => {
    const [store, upload] = [uuid(), uuid()];
    await host("in place", privateFileKey(store, upload), stagedKey(store, upload), bytes(50), {
      httpMetadata: { contentType: "application/pdf" },
      customMetadata: { filename: "a.pdf", kind: "file" },
    });
    const link = await signFileUrl(
      env.FILE_SIGNING_SECRET,
      `${origin}/files/${store}/${upload}/a.pdf`,
      new Date(Date.now() + 60_000),
    );
    const { response, body, trips } = await countAllTrips(link);
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Disposition")).toBe("attachment; filename*=UTF-8''a.pdf");
    expect(body).toEqual(bytes(50));
    expect(trips).toEqual({ d1: 0, durableObjects: 0, r2: { head: 1, get: 1 } });
  });
});
