import { describe, expect, it } from "vitest";
import { seedStore, seedToken } from "../support/factories";
import { api, json, origin } from "../support/http";
import { prepare, putBytes, type Reservation, reserve } from "../support/uploads";

describe("POST /media-uploads (prepare): the reservation and the types it takes", () => {
  it("reserves an upload: 201 with id, expires_at 15 minutes ahead and an absolute PUT request", async () => {
    const { storeId, token } = await seedStore();
    const before = Date.now();
    const response = await prepare(token, storeId, { filename: "okładka.jpg", content_type: "image/jpeg", size: 1234 });
    expect(response.status).toBe(201);
    const body = await json<Reservation>(response);
    expect(body.id).toMatch(/^[0-9a-f-]{36}$/);
    const expires = Date.parse(body.expires_at);
    expect(expires - before).toBeGreaterThanOrEqual(900_000 - 1000);
    expect(expires - before).toBeLessThanOrEqual(900_000 + 5000);
    expect(body.upload_request).toEqual({
      method: "PUT",
      url: `${origin}/api/v1/media-uploads/${body.id}`,
      headers: { "X-Upload-Token": expect.any(String), "Content-Type": "image/jpeg", "Content-Length": "1234" },
    });
  });

  it("gives every upload its own token", async () => {
    const { storeId, token } = await seedStore();
    const a = await reserve(token, storeId, new Uint8Array(3));
    const b = await reserve(token, storeId, new Uint8Array(3));
    expect(a.upload_request.headers["X-Upload-Token"]).not.toBe(b.upload_request.headers["X-Upload-Token"]);
    // A's token does not authorize B.
    const crossed = await putBytes(b, new Uint8Array(3), {
      "X-Upload-Token": a.upload_request.headers["X-Upload-Token"] as string,
    });
    expect(crossed.status).toBe(404);
  });

  it("refuses HEIC, HEIF and AVIF (any case, parameters ignored) with 422 saying to convert to JPG or PNG", async () => {
    const { storeId, token } = await seedStore();
    for (const type of ["image/heic", "IMAGE/HEIF", "image/avif; q=1"]) {
      const response = await prepare(token, storeId, { filename: "a.heic", content_type: type, size: 10 });
      expect(response.status, type).toBe(422);
      const body = await json<{ message: string; errors: Record<string, string[]> }>(response);
      expect(body.message).toMatch(/convert the image to JPG or PNG/);
      expect(body.errors.content_type).toHaveLength(1);
    }
  });

  it("refuses an SVG prepared as image but accepts it as file", async () => {
    const { storeId, token } = await seedStore();
    const asImage = await prepare(token, storeId, { filename: "logo.svg", content_type: "image/svg+xml", size: 10 });
    expect(asImage.status).toBe(422);
    expect((await json<{ errors: object }>(asImage)).errors).toHaveProperty("content_type");
    const asFile = await prepare(token, storeId, {
      filename: "logo.svg",
      content_type: "image/svg+xml",
      size: 10,
      type: "file",
    });
    expect(asFile.status).toBe(201);
  });
});

describe("POST /media-uploads (prepare): the fields, the size limit and the filename", () => {
  it("validates every field: 422 The given data was invalid. with errors.<field>", async () => {
    const { storeId, token } = await seedStore({ store: { upload_limit_bytes: 5000 } });
    const cases: [Record<string, unknown>, string][] = [
      [{ content_type: "image/png", size: 1 }, "filename"],
      [{ filename: "", content_type: "image/png", size: 1 }, "filename"],
      [{ filename: "x".repeat(256), content_type: "image/png", size: 1 }, "filename"],
      [{ filename: "a.png", size: 1 }, "content_type"],
      [{ filename: "a.png", content_type: "png", size: 1 }, "content_type"],
      [{ filename: "a.png", content_type: "image/png" }, "size"],
      [{ filename: "a.png", content_type: "image/png", size: 0 }, "size"],
      [{ filename: "a.png", content_type: "image/png", size: 1.5 }, "size"],
      [{ filename: "a.png", content_type: "image/png", size: "10" }, "size"],
      [{ filename: "a.png", content_type: "image/png", size: 5001 }, "size"],
      [{ filename: "a.png", content_type: "image/png", size: 1, type: "video" }, "type"],
    ];
    for (const [body, field] of cases) {
      const response = await prepare(token, storeId, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      const parsed = await json<{ message: string; errors: Record<string, string[]> }>(response);
      expect(parsed.message).toBe("The given data was invalid.");
      expect(Object.keys(parsed.errors), JSON.stringify(body)).toEqual([field]);
    }
    expect((await prepare(token, storeId, { filename: "a.png", content_type: "image/png", size: 5000 })).status).toBe(
      201,
    );
  });

  it("uses the default store limit of 100,000,000 bytes when the store sets none", async () => {
    const { storeId, token } = await seedStore();
    expect(
      (await prepare(token, storeId, { filename: "v.mp4", content_type: "video/mp4", size: 100_000_000 })).status,
    ).toBe(201);
    const over = await prepare(token, storeId, { filename: "v.mp4", content_type: "video/mp4", size: 100_000_001 });
    expect(over.status).toBe(422);
  });

  it("keeps filenames with ../, slashes, control characters and emoji exactly as sent", async () => {
    const { storeId, token } = await seedStore();
    for (const filename of ["../../etc/passwd", "a/b\\c.png", "tab\there\u0007.png", "zdjęcie 🎉.png"]) {
      expect((await prepare(token, storeId, { filename, content_type: "image/png", size: 10 })).status, filename).toBe(
        201,
      );
    }
  });
});

describe("POST /media-uploads (prepare): access and the request body", () => {
  it("needs the X-Service-Store header (400), a store the token may act on (403) and media:write (403)", async () => {
    const { storeId, token } = await seedStore();
    const body = { body: { filename: "a.png", content_type: "image/png", size: 1 }, method: "POST" } as const;
    const missing = await api("/media-uploads", { ...body, token });
    expect(missing.status).toBe(400);
    expect(await json(missing)).toEqual({ message: "The X-Service-Store header is required." });
    const other = await seedStore();
    expect((await api("/media-uploads", { ...body, token, store: other.storeId })).status).toBe(403);
    const reader = await seedToken([storeId], ["products:read"]);
    const refused = await api("/media-uploads", { ...body, token: reader, store: storeId });
    expect(refused.status).toBe(403);
    expect(await json(refused)).toEqual({ message: "This action is unauthorized." });
  });

  it("answers malformed JSON 400 and a non-JSON body 415", async () => {
    const { storeId, token } = await seedStore();
    const malformed = await api("/media-uploads", {
      method: "POST",
      token,
      store: storeId,
      rawBody: "{",
      headers: { "Content-Type": "application/json" },
    });
    expect(malformed.status).toBe(400);
    expect(await json(malformed)).toEqual({ message: "Malformed JSON body." });
    const array = await api("/media-uploads", { method: "POST", token, store: storeId, body: [1] });
    expect(array.status).toBe(400);
    const text = await api("/media-uploads", {
      method: "POST",
      token,
      store: storeId,
      rawBody: "filename=a",
      headers: { "Content-Type": "text/plain" },
    });
    expect(text.status).toBe(415);
  });

  it("refuses a huge JSON body 413 before parsing it", async () => {
    const { storeId, token } = await seedStore();
    const response = await api("/media-uploads", {
      method: "POST",
      token,
      store: storeId,
      rawBody: JSON.stringify({ filename: "x".repeat(2_000_000) }),
      headers: { "Content-Type": "application/json" },
    });
    expect(response.status).toBe(413);
  });
});
