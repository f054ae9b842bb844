import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { hostOnServer } from "../support/server";

/**
 * The AVIF encoder cannot run away on hostile content (docs/conversion.md, "AVIF"): the worst an upload can
 * hand it is a large hosted image of noise, whose full-size AVIF is a grid of tiles each at most the pixel
 * budget, so its time is bounded by the hosted size. Timed here, against `wrangler dev`, because inside
 * workerd's tests the clock stands still while code runs.
 */

/** Hosts `png` as an image: the hosted file result. */
const host = (png: Buffer) =>
  hostOnServer<{ file_url: string; width: number; height: number }>(png, {
    filename: "noise.png",
    content_type: "image/png",
  });

describe("the AVIF encoder on hostile content", () => {
  it("2560 × 1920 of noise (the worst an upload can make the encoder see) gets its full-size AVIF, at exactly that size, within 60 s", async () => {
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
    const { width: encodedWidth, height: encodedHeight } = await sharp(bytes).metadata();
    expect([encodedWidth, encodedHeight]).toEqual([width, height]);
    expect(elapsed).toBeLessThan(60_000);
  }, 180_000);
});
