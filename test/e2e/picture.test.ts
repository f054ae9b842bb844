import { readFile } from "node:fs/promises";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { thumbHashToRGBA } from "thumbhash";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { browserAvailable, launchBrowser } from "../support/browser";
import { hostOnServer } from "../support/server";

/**
 * The README's `<picture>` gallery snippet in a real browser (headless Chromium): the AVIF source of the width
 * the viewport needs is fetched and decoded, and `placeholder_url` shows the image before it arrives.
 */

const shopUrl = inject("uploadPageUrl");

type Hosted = {
  file_url: string;
  width: number;
  height: number;
  srcset: string;
  sources: { type: string; srcset: string }[];
  placeholder: string;
  placeholder_url: string;
  dominant_color: string;
};

/**
 * A 3000 × 2000 photo-like picture, as a JPEG: a diagonal gradient under a soft bright sun (top right) and a
 * soft dark band (bottom), the broad shapes a placeholder keeps.
 */
async function photo(): Promise<{ jpeg: Buffer; raw: Buffer }> {
  const [width, height] = [3000, 2000];
  const raw = Buffer.alloc(width * height * 3);
  const mix = (from: number, to: number, weight: number) => from * (1 - weight) + to * weight;
  for (let y = 0; y < height; y += 1)
    for (let x = 0; x < width; x += 1) {
      const sun = Math.exp(-((x - 2100) ** 2 + (y - 700) ** 2) / (2 * 500 ** 2));
      const band = Math.exp(-((y - 1600) ** 2) / (2 * 200 ** 2));
      const base = [(x / width) * 220, (y / height) * 180 + 30, 200 - (x / width) * 150];
      const colour = [250, 220, 60];
      const dark = [30, 40, 50];
      for (let c = 0; c < 3; c += 1)
        raw[(y * width + x) * 3 + c] = Math.round(
          mix(mix(base[c] as number, colour[c] as number, sun), dark[c] as number, band),
        );
    }
  const jpeg = await sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
  return { jpeg, raw };
}

const host = (jpeg: Buffer) => hostOnServer<Hosted>(jpeg, { filename: "kubek.jpg", content_type: "image/jpeg" });

/** The README's gallery snippet (its `<picture>` block), filled in with the result as a page would. */
async function galleryPage(image: Hosted): Promise<string> {
  const readme = await readFile(new URL("../../README.md", import.meta.url), "utf8");
  const snippet = /```html\n(<!-- result:[^\n]*\n<picture>[\s\S]*?<\/picture>)\n```/.exec(readme)?.[1];
  if (!snippet) throw new Error("the README has no <picture> gallery snippet");
  const attribute = (value: string) => value.replaceAll("&", "&amp;").replaceAll('"', "&quot;");
  const filled = snippet
    .replaceAll("{result.sources[0].srcset}", attribute(image.sources[0]?.srcset ?? ""))
    .replaceAll(/\{result\.(\w+)\}/g, (_, field: keyof Hosted) => attribute(String(image[field])))
    .replace('loading="lazy" ', "");
  return `<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">
<style>body { margin: 0 } .gallery img { width: 100%; height: auto } @media (min-width: 768px) { .gallery { width: 50vw } } @media (min-width: 1200px) { .gallery { width: 600px } }</style></head>
<body><div class="gallery">${filled}</div></body></html>`;
}

/** The media requests a page made, as the part of their URL after `file_url`. */
function watchMedia(page: Page, fileUrl: string): string[] {
  const media: string[] = [];
  page.on("request", (request) => {
    if (request.url().startsWith(fileUrl)) media.push(request.url().slice(fileUrl.length));
  });
  return media;
}

/** What Chromium shows of the AVIF at `avifUrl` beside the hosted WebP at `webpUrl`: sizes, their RGBA difference. */
type Shown = { avif: number[]; webp: number[]; difference: number; alphaDifference: number };

/**
 * Loads both images in a page of their own origin (so the canvas may read them), draws each at its natural
 * size and compares them there: only numbers cross back, not 20 MB of pixels.
 */
async function showBoth(browser: Browser, avifUrl: string, webpUrl: string): Promise<Shown> {
  const page = await browser.newPage();
  await page.goto(webpUrl, { waitUntil: "load" });
  // Browser code as text: this project's types have no DOM.
  const shown = await page.evaluate<Shown>(`(async () => {
    const load = async (src) => {
      const img = new Image();
      img.src = src;
      await img.decode();
      return img;
    };
    const [avif, webp] = await Promise.all([load(${JSON.stringify(avifUrl)}), load(${JSON.stringify(webpUrl)})]);
    const pixels = (img) => {
      const canvas = document.createElement("canvas");
      [canvas.width, canvas.height] = [img.naturalWidth, img.naturalHeight];
      const context = canvas.getContext("2d");
      context.drawImage(img, 0, 0);
      return context.getImageData(0, 0, canvas.width, canvas.height).data;
    };
    const [a, b] = [pixels(avif), pixels(webp)];
    let [total, alpha] = [0, 0];
    for (let i = 0; i < a.length; i += 1) {
      const difference = Math.abs(a[i] - b[i]);
      total += difference;
      if (i % 4 === 3) alpha += difference;
    }
    return {
      avif: [avif.naturalWidth, avif.naturalHeight],
      webp: [webp.naturalWidth, webp.naturalHeight],
      difference: total / a.length,
      alphaDifference: alpha / (a.length / 4),
    };
  })()`);
  await page.close();
  return shown;
}

/** The bytes at `url`. */
async function download(url: string): Promise<Buffer> {
  return Buffer.from(await (await fetch(url)).arrayBuffer());
}

/** The size of `avif` as sharp (libheif) decodes it, and its mean absolute RGBA difference from `webp`. */
async function sharpDifference(avif: Buffer, webp: Buffer): Promise<{ size: number[]; difference: number }> {
  const raw = (bytes: Buffer) => sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const [a, b] = [await raw(avif), await raw(webp)];
  expect(a.data.length).toBe(b.data.length);
  const total = a.data.reduce((sum, value, i) => sum + Math.abs(value - (b.data[i] as number)), 0);
  return { size: [a.info.width, a.info.height], difference: total / a.data.length };
}

/** The photo, made and hosted once for the file: every describe's tests read the same hosted image. */
let photoHosted: Promise<{ image: Hosted; master: Buffer }> | undefined;

/** A browser of its own for a describe's tests, and the hosted photo with its master's raw pixels. */
async function openGallery(): Promise<{ browser: Browser; image: Hosted; master: Buffer }> {
  photoHosted ??= photo().then(async (made) => ({ image: await host(made.jpeg), master: made.raw }));
  const [browser, hosted] = await Promise.all([launchBrowser(), photoHosted]);
  return { browser, ...hosted };
}

describe.skipIf(!browserAvailable)("<picture> fetches only the AVIF width its slot needs (headless Chromium)", () => {
  let browser: Browser;
  let image: Hosted;

  beforeAll(async () => {
    ({ browser, image } = await openGallery());
  });

  afterAll(async () => {
    await browser?.close();
  });

  for (const { label, width, dpr, slot, expected } of [
    { label: "a 390-px phone at DPR 3 (slot 390 px, 1170 device px)", width: 390, dpr: 3, slot: 390, expected: 1280 },
    { label: "a 1440-px desktop at DPR 1 (slot 600 px)", width: 1440, dpr: 1, slot: 600, expected: 640 },
  ]) {
    it(`${label} fetches the AVIF ${expected} px wide only, and decodes it`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 900 }, deviceScaleFactor: dpr });
      const page = await context.newPage();
      const media = watchMedia(page, image.file_url);
      const answers: { url: string; type: string | null }[] = [];
      page.on("response", (response) => {
        if (response.url().startsWith(image.file_url))
          answers.push({ url: response.url(), type: response.headers()["content-type"] ?? null });
      });
      await page.goto(shopUrl, { waitUntil: "load" });
      await page.setContent(await galleryPage(image), { waitUntil: "load" });
      // Browser code as text: this project's types have no DOM.
      const shown = await page.evaluate<{ currentSrc: string; naturalWidth: number; complete: boolean }>(`(async () => {
        const img = document.querySelector("img");
        await img.decode();
        return { currentSrc: img.currentSrc, naturalWidth: img.naturalWidth, complete: img.complete };
      })()`);
      const query = `?width=${expected}&format=avif`;
      expect(media).toEqual([query]);
      expect(answers.map((answer) => answer.type)).toEqual(["image/avif"]);
      expect(shown.currentSrc).toBe(`${image.file_url}${query}`);
      expect(shown.complete).toBe(true);
      // Decoded (naturalWidth is its width in CSS pixels: the slot), and what it decoded is that width as AVIF.
      expect(Math.abs(shown.naturalWidth - slot)).toBeLessThanOrEqual(1);
      const served = await fetch(`${image.file_url}${query}`);
      const metadata = await sharp(Buffer.from(await served.arrayBuffer())).metadata();
      expect([metadata.format, metadata.width]).toEqual(["heif", expected]);
      await context.close();
    });
  }
});

describe.skipIf(!browserAvailable)("a full-size AVIF grid shows what the WebP shows (headless Chromium, sharp)", () => {
  let browser: Browser;
  let image: Hosted;

  beforeAll(async () => {
    ({ browser, image } = await openGallery());
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("the full-size AVIF of a photo past the encoder's budget (2560 × 1707: a grid of 4:4:4 tiles) shows in Chromium, and decodes in sharp, at exactly the image's size, showing what the hosted WebP shows", async () => {
    expect([image.width, image.height]).toEqual([2560, 1707]);
    const avifUrl = `${image.file_url}?format=avif`;
    const shown = await showBoth(browser, avifUrl, image.file_url);
    expect(shown.avif).toEqual([2560, 1707]);
    expect(shown.webp).toEqual([2560, 1707]);
    expect(shown.difference).toBeLessThan(3);
    const decoded = await sharpDifference(await download(avifUrl), await download(image.file_url));
    expect(decoded.size).toEqual([2560, 1707]);
    expect(decoded.difference).toBeLessThan(3);
  }, 120_000);

  it("with alpha: a 2560 × 1920 PNG's full-size AVIF (colour and alpha grids) shows in Chromium, and decodes in sharp, at its size with the WebP's colours and alpha", async () => {
    const [width, height] = [2560, 1920];
    const rgba = Buffer.alloc(width * height * 4);
    for (let y = 0; y < height; y += 1)
      for (let x = 0; x < width; x += 1) {
        const i = (y * width + x) * 4;
        [rgba[i], rgba[i + 1], rgba[i + 2]] = [(x / width) * 255, (y / height) * 255, 128 + 60 * Math.sin(x / 50)];
        rgba[i + 3] = x > 1800 && y > 1200 ? Math.max(0, 255 - (x - 1800) / 3) : 255;
      }
    const png = await sharp(rgba, { raw: { width, height, channels: 4 } })
      .png({ compressionLevel: 1 })
      .toBuffer();
    const cutOut = await hostOnServer<Hosted>(png, { filename: "cut-out.png", content_type: "image/png" });
    const avifUrl = `${cutOut.file_url}?format=avif`;
    const shown = await showBoth(browser, avifUrl, cutOut.file_url);
    expect(shown.avif).toEqual([width, height]);
    expect(shown.difference).toBeLessThan(3);
    expect(shown.alphaDifference).toBeLessThan(2);
    const avif = await download(avifUrl);
    expect((await sharp(avif).metadata()).hasAlpha).toBe(true);
    const decoded = await sharpDifference(avif, await download(cutOut.file_url));
    expect(decoded.size).toEqual([width, height]);
    expect(decoded.difference).toBeLessThan(3);
  }, 120_000);
});

describe.skipIf(!browserAvailable)("placeholder_url shows the image before it arrives (headless Chromium)", () => {
  let browser: Browser;
  let image: Hosted;
  let master: Buffer;

  beforeAll(async () => {
    ({ browser, image, master } = await openGallery());
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("placeholder_url renders in Chromium as the image scaled down (within what a ThumbHash keeps)", async () => {
    expect(image.placeholder_url.length).toBeLessThanOrEqual(1000);
    const [width, height] = [24, 16];
    const page = await browser.newPage();
    await page.goto(shopUrl, { waitUntil: "load" });
    // Browser code as text: this project's types have no DOM.
    const drawn = await page.evaluate<number[]>(`(async () => {
      const img = new Image();
      img.src = ${JSON.stringify(image.placeholder_url)};
      await img.decode();
      const canvas = document.createElement("canvas");
      [canvas.width, canvas.height] = [${width}, ${height}];
      const context = canvas.getContext("2d");
      context.imageSmoothingQuality = "high";
      context.drawImage(img, 0, 0, ${width}, ${height});
      return Array.from(context.getImageData(0, 0, ${width}, ${height}).data);
    })()`);
    const rgb = await sharp(Buffer.from(drawn), { raw: { width, height, channels: 4 } })
      .removeAlpha()
      .raw()
      .toBuffer();
    const meanError = (a: Buffer, b: Buffer) =>
      a.reduce((total, value, i) => total + Math.abs(value - (b[i] as number)), 0) / a.length;
    const scaled = (input: Buffer, info: { width: number; height: number; channels: 3 | 4 }, w: number, h: number) =>
      sharp(input, { raw: info }).resize(w, h).removeAlpha().raw().toBuffer();

    // What Chromium shows is the ThumbHash's own render: the short PNG loses nothing a placeholder shows.
    const render = thumbHashToRGBA(Uint8Array.from(atob(image.placeholder), (char) => char.charCodeAt(0)));
    const rendered = await scaled(
      Buffer.from(render.rgba),
      { width: render.w, height: render.h, channels: 4 },
      width,
      height,
    );
    expect(meanError(rgb, rendered)).toBeLessThan(8);

    // And it is this image, scaled down: on the broad shapes a ThumbHash keeps (6 × 4 cells) it is close to the
    // master, and far closer than to the master turned upside down.
    const master3 = { width: 3000, height: 2000, channels: 3 as const };
    const cells = await scaled(rgb, { width, height, channels: 3 }, 6, 4);
    const reference = await scaled(master, master3, 6, 4);
    const upsideDown = await sharp(master, { raw: master3 }).flip().resize(6, 4).raw().toBuffer();
    expect(meanError(cells, reference)).toBeLessThan(20);
    expect(meanError(cells, upsideDown)).toBeGreaterThan(2 * meanError(cells, reference));
    // And the dominant colour is the picture's mean.
    const sums = [0, 0, 0];
    for (let i = 0; i < master.length; i += 1) sums[i % 3] = (sums[i % 3] as number) + (master[i] as number);
    const dominant = [1, 3, 5].map((at) => Number.parseInt(image.dominant_color.slice(at, at + 2), 16));
    dominant.forEach((value, c) => {
      expect(Math.abs(value - (sums[c] as number) / (3000 * 2000))).toBeLessThan(3);
    });
    await page.close();
  });
});
