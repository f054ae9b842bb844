import type { Browser } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { browserAvailable, launchBrowser } from "../support/browser";
import { hostOnServer } from "../support/server";

const shopUrl = inject("uploadPageUrl");

type Hosted = { file_url: string; width: number; height: number; srcset: string };

/** What the tests read of the page's <img> (an HTMLImageElement: the project type-checks without the DOM lib). */
type ShownImage = { decode(): Promise<void>; currentSrc: string; naturalWidth: number; complete: boolean };

/** Uploads a 3000 × 2000 JPEG as an image: hosted as a 2560 × 1707 WebP with a srcset. */
async function hostPhoto(): Promise<Hosted> {
  const jpeg = await sharp({
    create: { width: 3000, height: 2000, channels: 3, background: { r: 40, g: 120, b: 200 } },
  })
    .jpeg({ quality: 85 })
    .toBuffer();
  return hostOnServer<Hosted>(jpeg, { filename: "kubek.jpg", content_type: "image/jpeg" });
}

/** The README's product-gallery snippet: full width on phones, half on tablets, 600 px on desktops. */
function galleryPage(image: Hosted): string {
  const attribute = (value: string) => value.replaceAll("&", "&amp;").replaceAll('"', "&quot;");
  return `<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">
<style>body { margin: 0 } .gallery img { width: 100%; height: auto } @media (min-width: 768px) { .gallery { width: 50vw } } @media (min-width: 1200px) { .gallery { width: 600px } }</style></head>
<body><div class="gallery"><img src="${attribute(image.file_url)}" srcset="${attribute(image.srcset)}"
  sizes="(min-width: 1200px) 600px, (min-width: 768px) 50vw, 100vw"
  width="${image.width}" height="${image.height}" alt="Kubek, zdjęcie główne"></div></body></html>`;
}

describe.skipIf(!browserAvailable)("a real browser picks the width the srcset offers (headless Chromium)", () => {
  let browser: Browser;
  let image: Hosted;

  beforeAll(async () => {
    [browser, image] = await Promise.all([launchBrowser(), hostPhoto()]);
  });

  afterAll(async () => {
    await browser?.close();
  });

  // The slot is the `sizes` entry for the viewport; the browser needs slot × DPR pixels and picks the
  // smallest candidate at least that wide.
  for (const { label, width, dpr, expected } of [
    { label: "a 390-px phone at DPR 1 (slot 390 px)", width: 390, dpr: 1, expected: "?width=480" },
    { label: "a 390-px phone at DPR 3 (slot 390 px, 1170 device px)", width: 390, dpr: 3, expected: "?width=1280" },
    { label: "a 1440-px desktop at DPR 1 (slot 600 px)", width: 1440, dpr: 1, expected: "?width=640" },
  ]) {
    it(`${label} requests ${expected} only, and the image decodes`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 900 }, deviceScaleFactor: dpr });
      const media: string[] = [];
      const page = await context.newPage();
      page.on("request", (request) => {
        if (request.url().startsWith(image.file_url)) media.push(request.url().slice(image.file_url.length));
      });
      // A shop's page on another origin than the media (the upload page's server, on loopback like the
      // Worker: Chromium refuses a public page's requests to a loopback address).
      await page.goto(shopUrl, { waitUntil: "load" });
      await page.setContent(galleryPage(image), { waitUntil: "load" });
      const shown = await page.$eval("img", async (img: ShownImage) => {
        await img.decode();
        return { currentSrc: img.currentSrc, naturalWidth: img.naturalWidth, complete: img.complete };
      });
      expect(media).toEqual([expected]);
      expect(shown.currentSrc).toBe(`${image.file_url}${expected}`);
      expect(shown.complete).toBe(true);
      expect(shown.naturalWidth).toBeGreaterThan(0);
      // What it decoded is that width, as served.
      const served = await fetch(`${image.file_url}${expected}`);
      expect(served.headers.get("Content-Type")).toBe("image/webp");
      const { width: servedWidth } = await sharp(Buffer.from(await served.arrayBuffer())).metadata();
      expect(`?width=${servedWidth}`).toBe(expected);
      await context.close();
    });
  }
});
