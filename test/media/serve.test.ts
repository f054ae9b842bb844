import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parseRange } from "../../src/media/range";
import { signFileUrl, verifyFileSignature } from "../../src/media/signing";
import { mediaKey, privateFileKey } from "../../src/uploads/keys";
import { uuid } from "../support/factories";
import { origin } from "../support/http";

const get = (path: string, init?: RequestInit) => exports.default.fetch(new Request(`${origin}${path}`, init));
const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => i % 251);

async function publicVideo() {
  const [store, upload] = [uuid(), uuid()];
  await env.BUCKET.put(mediaKey(store, upload, "mp4"), bytes(1000), { httpMetadata: { contentType: "video/mp4" } });
  return `/media/${store}/${upload}.mp4`;
}

describe("public media", () => {
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
});

describe("private files", () => {
  async function privateFile(kind: string, filename = "faktura 2026.pdf") {
    const [store, upload] = [uuid(), uuid()];
    await env.BUCKET.put(privateFileKey(store, upload), bytes(50), {
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

  it("verifies signatures without accepting malformed inputs", async () => {
    expect(await verifyFileSignature("s", "/files/a", undefined, "x")).toBe(false);
    expect(await verifyFileSignature("s", "/files/a", "12ab", "x")).toBe(false);
    expect(await verifyFileSignature("", "/files/a", "99999999999", "x")).toBe(false);
  });
});
