import { rgbaToThumbHash, thumbHashToAverageRGBA, thumbHashToRGBA } from "thumbhash";
import { describe, expect, it } from "vitest";
import { convertToWebp, resizeHostedWebp } from "../src/convert";
import { placeholderOf } from "../src/convert/placeholder";
import { convertStill } from "../src/jobs";
import { areaAverage, encodeJpeg, paint, photoLike, quadrants, withExifOrientation, writeRgbaPng } from "./images";

/**
 * The placeholder and dominant colour a conversion answers (docs/conversion.md, "Placeholders"): read from the
 * decoded target before it is encoded, no second decode.
 */

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}

/** A source as the converter's jobs read it: its size and a stream of its bytes on every open. */
function source(bytes: Uint8Array) {
  return { size: bytes.length, open: async () => new Response(bytes).body as ReadableStream<Uint8Array> };
}

describe("the placeholder of a conversion: a ThumbHash of the image and its alpha-weighted dominant colour", () => {
  it("convert answers a ThumbHash (base64) whose render is the image scaled down, and its dominant colour", async () => {
    const [width, height] = [1200, 800];
    const pixels = quadrants(width, height);
    const outcome = await convertStill({
      source: source(await writeRgbaPng(pixels, width, height)),
      format: "png",
      maxEdge: 2560,
    });
    if (!("converted" in outcome)) throw new Error(`not converted: ${JSON.stringify(outcome)}`);
    await outcome.converted.body.cancel();
    const { placeholder, dominantColor } = outcome.converted;
    expect(placeholder).toMatch(/^[A-Za-z0-9+/]+=*$/);
    const render = thumbHashToRGBA(fromBase64(placeholder));
    const meanDifference = (a: ArrayLike<number>, b: ArrayLike<number>) => {
      let total = 0;
      for (let i = 0; i < a.length; i += 1) total += Math.abs((a[i] as number) - (b[i] as number));
      return total / a.length;
    };
    // The hash ThumbHash makes from the exact 100-px area average (its largest input) renders the same, within
    // 6 levels: the grid is coarser and sampled, and these are hard edges.
    const exact = thumbHashToRGBA(rgbaToThumbHash(100, 67, areaAverage(pixels, width, height, 100, 67, 4)));
    expect([render.w, render.h]).toEqual([exact.w, exact.h]);
    expect(meanDifference(render.rgba, exact.rgba)).toBeLessThan(6);
    // ThumbHash keeps only low frequencies: hard quadrant edges blur, the colours stay.
    const reference = areaAverage(pixels, width, height, render.w, render.h, 4);
    expect(meanDifference(render.rgba, reference)).toBeLessThan(32);
    expect(dominantColor).toMatch(/^#[0-9a-f]{6}$/);
  });

  it("dominant_color is the alpha-weighted mean of the sRGB values: transparent pixels count for nothing, faint ones for little", () => {
    const [width, height] = [400, 300];
    // Left half opaque (200, 100, 50), right half fully transparent white: the colour under alpha 0 is ignored.
    const half = paint(width, height, (x) => (x < 200 ? [200, 100, 50, 255] : [255, 255, 255, 0]));
    expect(placeholderOf(half, width, height).dominantColor).toBe("#c86432");
    // Opaque red beside green at alpha 85: weights 3 to 1.
    const faint = paint(width, height, (x) => (x < 200 ? [255, 0, 0, 255] : [0, 255, 0, 85]));
    expect(placeholderOf(faint, width, height).dominantColor).toBe("#bf4000");
    // Nothing visible at all: black.
    expect(placeholderOf(new Uint8Array(width * height * 4), width, height).dominantColor).toBe("#000000");
  });

  it("the dominant colour of a photo is its mean within a level, and the ThumbHash's mean agrees with it", () => {
    const [width, height] = [2560, 1920];
    const pixels = photoLike(width, height);
    const { placeholder, dominantColor } = placeholderOf(pixels, width, height);
    const mean = [0, 0, 0];
    for (let i = 0; i < pixels.length; i += 4)
      for (let c = 0; c < 3; c += 1) mean[c] = (mean[c] as number) + (pixels[i + c] as number);
    const channels = [1, 3, 5].map((at) => Number.parseInt(dominantColor.slice(at, at + 2), 16));
    const exact = mean.map((sum) => sum / (width * height));
    channels.forEach((value, c) => {
      expect(Math.abs(value - (exact[c] as number))).toBeLessThanOrEqual(1.5);
    });
    const average = thumbHashToAverageRGBA(fromBase64(placeholder));
    [average.r, average.g, average.b].forEach((value, c) => {
      expect(Math.abs(value * 255 - (channels[c] as number))).toBeLessThanOrEqual(8);
    });
  });
});

describe("the placeholder of a conversion: alpha kept, made from the conversion's own pixels, none for a width", () => {
  it("alpha is kept: the ThumbHash of a cut-out renders transparent where the image is", async () => {
    const [width, height] = [300, 300];
    const pixels = paint(width, height, (x, y) =>
      Math.hypot(x - 150, y - 150) < 80 ? [20, 160, 60, 255] : [0, 0, 0, 0],
    );
    const converted = await convertToWebp(await writeRgbaPng(pixels, width, height), "png", { maxEdge: 2560 });
    const render = thumbHashToRGBA(fromBase64(converted.placeholder?.placeholder ?? ""));
    expect(render.rgba[3]).toBeLessThan(40); // a corner
    const centre = ((render.h >> 1) * render.w + (render.w >> 1)) * 4;
    expect(render.rgba[centre + 3]).toBeGreaterThan(200);
  });

  it("comes from the conversion's own pixels (EXIF orientation applied, after the colour transform), and a width makes none", async () => {
    const [width, height] = [320, 240];
    // Left half black, right half white, stored turned: orientation 6 (rotate 90° clockwise to show).
    const jpeg = await encodeJpeg(
      paint(height, width, (_x, y) => (y < 160 ? [0, 0, 0] : [255, 255, 255])),
      height,
      width,
      {
        progressive: false,
        quality: 95,
      },
    );
    const converted = await convertToWebp(withExifOrientation(jpeg, 6), "jpeg", { maxEdge: 2560 });
    expect([converted.width, converted.height]).toEqual([width, height]);
    const render = thumbHashToRGBA(fromBase64(converted.placeholder?.placeholder ?? ""));
    const row = (render.h >> 1) * render.w;
    expect(render.rgba[(row + 1) * 4]).toBeGreaterThan(200); // shown upright: white on the left
    expect(render.rgba[(row + render.w - 2) * 4]).toBeLessThan(60);
    const narrower = await resizeHostedWebp(converted.bytes, { width: 160, height: 120 });
    expect(narrower.placeholder).toBeNull();
  });
});
