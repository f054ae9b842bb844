import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { hostOnServer } from "../support/server";

/**
 * The AVIF encoder cannot run away on hostile content (docs/conversion.md, "AVIF"): the worst an upload can
 * hand it is the largest hosted image of noise, which is encoded at the pixel budget in bounded time. Timed
 * here, against `wrangler dev`, because inside workerd's tests the clock stands still while code runs.
 */

/** Hosts `png` as an image: the hosted file result. */
const host = (png: Buffer) =>
  hostOnServer<{ file_url: string; width: number; height: number }>(png, {
    filename: "noise.png",
    content_type: "image/png",
  });

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
