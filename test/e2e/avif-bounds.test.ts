import { readFile } from "node:fs/promises";
import sharp from "sharp";
import { describe, expect, inject, it } from "vitest";

/**
 * The AVIF encoder cannot run away on hostile content (docs/conversion.md, "AVIF"): the worst an upload can
 * hand it is the largest hosted image of noise, which is encoded at the pixel budget in bounded time. Timed
 * here, against `wrangler dev`, because inside workerd's tests the clock stands still while code runs.
 */

const baseUrl = inject("baseUrl");
const demo = JSON.parse(await readFile(new URL("../../fixtures/demo.json", import.meta.url), "utf8"));
const headers = { Authorization: `Bearer ${demo.tokens[0].token}`, "X-Service-Store": demo.tokens[0].store_ids[0] };

/** Hosts `png` as an image: the hosted file result. */
async function host(png: Buffer): Promise<{ file_url: string; width: number; height: number }> {
  const prepared = await fetch(`${baseUrl}/api/v1/media-uploads`, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json" },
    body: JSON.stringify({ filename: "noise.png", content_type: "image/png", size: png.length, type: "image" }),
  });
  expect(prepared.status).toBe(201);
  const reservation = (await prepared.json()) as {
    id: string;
    upload_request: { url: string; headers: Record<string, string> };
  };
  const put = await fetch(reservation.upload_request.url, {
    method: "PUT",
    headers: reservation.upload_request.headers,
    body: png,
  });
  expect(put.status).toBe(204);
  const completed = await fetch(`${baseUrl}/api/v1/media-uploads/${reservation.id}/complete`, {
    method: "POST",
    headers,
  });
  expect(completed.status).toBe(201);
  return (await completed.json()) as { file_url: string; width: number; height: number };
}

describe("the AVIF encoder on hostile content", () => {
  it("2560 × 1920 of noise (the worst an upload can make the encoder see) gets its full-size AVIF within 15 s, at the 1280 × 1024-pixel budget", async () => {
    const [width, height] = [2560, 1920];
    const noise = Buffer.alloc(width * height * 3);
    let seed = 1;
    for (let i = 0; i < noise.length; i += 1) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      noise[i] = seed >>> 24;
    }
    const png = await sharp(noise, { raw: { width, height, channels: 3 } })
      .png({ compressionLevel: 1 })
      .toBuffer();
    const hosted = await host(png);
    expect([hosted.width, hosted.height]).toEqual([width, height]);
    const started = performance.now();
    const response = await fetch(`${hosted.file_url}?format=avif`);
    const bytes = Buffer.from(await response.arrayBuffer());
    const elapsed = performance.now() - started;
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("image/avif");
    const { width: encodedWidth = 0, height: encodedHeight = 0 } = await sharp(bytes).metadata();
    expect(encodedWidth * encodedHeight).toBeLessThanOrEqual(1280 * 1024);
    expect(elapsed).toBeLessThan(15_000);
  }, 60_000);
});
