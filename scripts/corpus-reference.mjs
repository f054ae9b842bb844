// Records what libvips (sharp) and Chromium show of every corpus file the manifest expects converted, as a
// coarse grid of per-channel means at the conversion's output size, into test/fixtures/corpus/reference.json;
// test/uploads/corpus.test.ts compares the Worker's WebP with it. Also rewrites the README's file table
// from the manifest.
//
//   npx node scripts/corpus-reference.mjs
//
// Reference: libvips, unless it cannot read the file or disagrees with Chromium (the browser is right), or the
// manifest names one (`"reference": "libvips"` where the project's rules follow libvips: PNG gAMA ignored,
// CMYK without a profile through a press profile). Chromium is Debian's (/usr/bin/chromium, or CHROMIUM_PATH),
// drawing each file on a canvas at the output size with the sRGB display profile forced.

import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { chromium } from "playwright-core";
import sharp from "sharp";
import { gridDifference as difference, grid as exactGrid } from "./lib/corpus-grid.mjs";

const corpus = new URL("../test/fixtures/corpus/", import.meta.url).pathname;
const manifest = JSON.parse(await readFile(join(corpus, "manifest.json"), "utf8"));

/** The grid as reference.json keeps it: cells to 0.1. */
function grid(rgba, width, height) {
  const exact = exactGrid(rgba, width, height);
  return { ...exact, cells: exact.cells.map((v) => Math.round(v * 10) / 10) };
}

/** The output size of the conversion: the oriented size, long edge at most maxEdge, never upscaled. */
function fitWithin(width, height, maxEdge) {
  const long = Math.max(width, height);
  if (long <= maxEdge) return { width, height };
  const scale = maxEdge / long;
  return width >= height
    ? { width: maxEdge, height: Math.max(1, Math.round(height * scale)) }
    : { width: Math.max(1, Math.round(width * scale)), height: maxEdge };
}

async function bySharp(bytes, maxEdge) {
  try {
    const meta = await sharp(bytes).metadata();
    const turned = (meta.orientation ?? 1) >= 5;
    const size = fitWithin(turned ? meta.height : meta.width, turned ? meta.width : meta.height, maxEdge);
    const { data } = await sharp(bytes)
      .rotate()
      .resize(size.width, size.height, { fit: "fill" })
      .toColourspace("srgb")
      .ensureAlpha()
      .raw({ depth: "uchar" })
      .toBuffer({ resolveWithObject: true });
    return { size, rgba: data, grid: grid(data, size.width, size.height) };
  } catch (error) {
    return { error: String(error.message).split("\n")[0] };
  }
}

/** A PNG with gAMA or cHRM and neither iCCP nor sRGB: the rules ignore those chunks, as libvips does (browsers apply them). */
function pngGammaOnly(bytes) {
  if (bytes.readUInt32BE(0) !== 0x89504e47) return false;
  const seen = new Set();
  for (let at = 8; at + 8 <= bytes.length; ) {
    const type = bytes.toString("latin1", at + 4, at + 8);
    if (type === "IDAT") break;
    seen.add(type);
    at += 12 + bytes.readUInt32BE(at);
  }
  return (seen.has("gAMA") || seen.has("cHRM")) && !seen.has("iCCP") && !seen.has("sRGB");
}

/**
 * What libvips's own WebP at the Worker's settings (quality 80, method 2) loses of the reference: the mean
 * error per channel of its grid. A small graphic with saturated edges loses several levels to chroma
 * subsampling alone; a file's tolerance is this plus the manifest's margin (3 levels).
 */
async function encodingLoss({ size, rgba, grid: expected }) {
  const webp = await sharp(rgba, { raw: { width: size.width, height: size.height, channels: 4 } })
    .webp({ quality: 80, effort: 2 })
    .toBuffer();
  const { data } = await sharp(webp).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return difference(grid(data, size.width, size.height), expected);
}

const mimes = { png: "image/png", jpg: "image/jpeg", gif: "image/gif", webp: "image/webp", bmp: "image/bmp" };

async function byChromium(page, bytes, name, maxEdge) {
  const mime = mimes[name.split(".").pop()];
  return page.evaluate(
    async ({ base64, mime, maxEdge }) => {
      const img = new Image();
      img.src = `data:${mime};base64,${base64}`;
      try {
        await img.decode();
      } catch {
        return { error: "Chromium does not decode it" };
      }
      const w0 = img.naturalWidth;
      const h0 = img.naturalHeight;
      const long = Math.max(w0, h0);
      let width = w0;
      let height = h0;
      if (long > maxEdge) {
        const scale = maxEdge / long;
        if (w0 >= h0) {
          width = maxEdge;
          height = Math.max(1, Math.round(h0 * scale));
        } else {
          width = Math.max(1, Math.round(w0 * scale));
          height = maxEdge;
        }
      }
      const canvas = document.createElement("canvas");
      canvas.width = width;
      canvas.height = height;
      const context = canvas.getContext("2d", { colorSpace: "srgb" });
      context.imageSmoothingQuality = "high";
      context.drawImage(img, 0, 0, width, height);
      const rgba = context.getImageData(0, 0, width, height).data;
      return { size: { width, height }, rgba: Array.from(rgba) };
    },
    { base64: Buffer.from(bytes).toString("base64"), mime, maxEdge },
  );
}

/** Where each folder's files come from: the Debian package, the path inside it, the licence. */
const sources = {
  pngsuite: [
    "libpng1.6 1.6.39 (source)",
    "contrib/pngsuite/ (ibasn0g01.png: contrib/pngsuite/interlaced/)",
    "PngSuite licence: use, copy, modify and distribute for any purpose without fee (Willem van Schaik; ftbbn0g01.png Glenn Randers-Pehrson)",
  ],
  libpng: [
    "libpng1.6 1.6.39 (source)",
    "contrib/testpngs/ and contrib/testpngs/crashers/",
    "libpng licence (PNG Reference Library License version 2)",
  ],
  pillow: [
    "pillow 9.4.0 (source)",
    "Tests/images/ (BMPs: Tests/images/bmp/{g,q,b}/, b-* from b/; apng-*: Tests/images/apng/)",
    "HPND (the PIL licence); the BMPs are Jason Summers's bmpsuite, public domain; hopper is a public-domain photograph",
  ],
  giflib: ["giflib 5.2.1 (source)", "pic/", "MIT"],
  libwebp: ["libwebp 1.2.4 (source)", "examples/test.webp", "BSD-3-Clause (Google)"],
  "libjpeg-turbo": ["libjpeg-turbo 2.1.5 (source)", "testimages/", "IJG licence (Debian: BSD-BY-LC-NE)"],
  exiftool: ["libimage-exiftool-perl 12.57 (source)", "t/images/", "Artistic or GPL-1+"],
  made: [
    "made by scripts/make-corpus.mjs",
    "from the files above and profiles/",
    "as the file it was made from; profiles as below",
  ],
};

/** test/fixtures/corpus/README.md, from the manifest and this run's reference. */
function readme() {
  const rows = Object.entries(manifest.files).map(([name, entry]) => {
    const ref = reference[name];
    const outcome =
      entry.expect === "converted"
        ? `converted (${ref ? `${ref.by}, ±${ref.tolerance}` : "?"})`
        : entry.expect === "refused"
          ? `refused (422, /${entry.message}/)`
          : "hosted unchanged";
    const deviation = manifest.deviations[name] ? ` **Deviates today:** ${manifest.deviations[name]}.` : "";
    return `| \`${name}\` | ${entry.case}.${deviation} | ${outcome} |`;
  });
  return [
    "# Image corpus",
    "",
    "Files from the public test suites of image libraries, taken from Debian source packages, and a few made from",
    "them (`made/`), each with the outcome the project's rules give it. `manifest.json` states the outcomes,",
    "`reference.json` what libvips or Chromium shows of every file that is converted (a grid of at most 8 × 8",
    "cells of mean premultiplied R, G, B and A at the conversion's output size), and",
    "`test/uploads/corpus.test.ts` runs every file through the conversion (the animated ones, and a few",
    "refusals, through the API's complete) and compares.",
    "",
    "```sh",
    "npx node scripts/make-corpus.mjs        # rewrites made/ and profiles/grey-linear.icc",
    "npx node scripts/corpus-reference.mjs   # rewrites reference.json and this README (needs Debian's Chromium)",
    "```",
    "",
    "- **Reference.** libvips (sharp) unless it cannot read the file (BMP, damaged chunks) or Chromium shows",
    "  something else; then Chromium (headless, sRGB forced, the image drawn on a canvas at the output size), as a",
    "  browser shows the original. Where the project's rules follow libvips over browsers, libvips: PNG `gAMA`",
    "  without `iCCP`/`sRGB` is ignored (every PngSuite file carries gAMA), CMYK goes through its profile or a",
    "  press profile. Disagreements found: Chromium reads LZW minimum code size 1 as giflib does and libvips does",
    "  not; Chromium shows a GIF without colour tables black and white; Chromium does not apply EXIF orientation",
    "  to WebP; libvips ignores tRNS in `1_trns.png`; libvips refuses PNGs with a wrong IDAT CRC or Adler-32.",
    "- **Tolerance.** Mean absolute error per channel over the grid at most 3 levels beyond what libvips's own WebP",
    "  of the reference at the Worker's settings (quality 80, method 2) loses: small saturated graphics lose",
    "  up to ~70 levels to chroma subsampling (basn3p01), photos about 1.",
    "- **Refusals** Chromium still shows (partly decoded or tolerated), refused by the project's rules on damaged",
    "  and truncated input (docs/conversion.md, as sharp does by default): `made/basn6a08-cut.png`,",
    "  `pillow/b-shortfile.bmp`, `pillow/issue_2811.gif`",
    "  (Chromium draws no pixel of it), `made/treescap-cut.gif`, `libjpeg-turbo/testimgari.jpg` (arithmetic",
    "  coding), `pillow/truncated_jpeg.jpg`, `made/testorig-cut.jpg`.",
    "- **Deviations.** `manifest.json` `deviations` lists the files the conversion does not handle as the rules",
    "  say yet, with the reason; the test checks that each still deviates, so an entry goes once its file is fixed.",
    "",
    "## Sources and licences",
    "",
    "| Folder | Package | Path | Licence |",
    "| --- | --- | --- | --- |",
    ...Object.entries(sources).map(
      ([folder, [pkg, path, licence]]) => `| \`${folder}/\` | ${pkg} | ${path} | ${licence} |`,
    ),
    "",
    "Profiles (`profiles/`): `AdobeRGB1998.icc` and `ProPhotoRGB.icc` from colord-data 1.4.6 (binary package,",
    "/usr/share/color/icc/colord/; CC0-1.0); `lcms2-test3.icc` from lcms2 2.14 (source,",
    "plugins/test_profiles/test3.icc; MIT); `grey-linear.icc` written by scripts/make-corpus.mjs. The Display P3",
    "and CMYK profiles embedded in `made/testorig-display-p3.jpg` and `made/testorig-cmyk-profile.jpg` are",
    "libvips's own (`p3`, `cmyk`, through sharp; libvips is LGPL-2.1-or-later).",
    "",
    "`made/`: ICC-profiled JPEGs are `libjpeg-turbo/testorig.jpg` converted into each profile by libvips; the GIFs",
    "are written by the script's own LZW coder; the lossless and animated WebPs are libvips's encodes of",
    "`pillow/hopper.jpg`, `pillow/transparent.webp`, `giflib/fire.gif` and drawn pixels; `*-cut.*` are files",
    "above cut short; `basn2c08-bad-ihdr-crc.png` is PngSuite's with its IHDR CRC changed.",
    "",
    "## Files",
    "",
    "| File | Case | Expected |",
    "| --- | --- | --- |",
    ...rows,
    "",
  ].join("\n");
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-quic",
    "--force-color-profile=srgb",
  ],
});
const reference = {};
const disagreements = [];
/** Files expected converted that their reference cannot show: the manifest is wrong about them. */
const unshowable = [];
/** Files the rules refuse that Chromium still shows (partly decoded, or tolerated). */
const refusedShown = [];
try {
  const page = await browser.newPage();
  for (const [name, entry] of Object.entries(manifest.files)) {
    const bytes = await readFile(join(corpus, name));
    const maxEdge = entry.maxEdge ?? manifest.maxEdge;
    if (entry.expect !== "converted") {
      // Not part of the reference: only said, so a refusal that a browser shows anyway is a known choice.
      const shown = await byChromium(page, bytes, name, maxEdge);
      if (entry.expect === "refused" && !shown.error) refusedShown.push(name);
      continue;
    }
    const vips = await bySharp(bytes, maxEdge);
    const shown = await byChromium(page, bytes, name, maxEdge);
    const browserGrid = shown.error ? null : grid(shown.rgba, shown.size.width, shown.size.height);
    const sameSize =
      !vips.error && !shown.error && vips.size.width === shown.size.width && vips.size.height === shown.size.height;
    const apart = sameSize ? difference(vips.grid, browserGrid) : null;
    const agree = apart !== null && Math.max(...apart) <= manifest.agreement;
    const gammaOnly = pngGammaOnly(bytes) && !vips.error;
    const by = entry.reference ?? (gammaOnly ? "libvips" : vips.error || !agree ? "chromium" : "libvips");
    const why = entry.reference
      ? "named by the manifest (the rules follow libvips)"
      : gammaOnly
        ? "PNG gAMA/cHRM without iCCP or sRGB: ignored by the rules, as libvips does"
        : vips.error
          ? "libvips cannot read it"
          : agree
            ? "libvips and Chromium agree"
            : "libvips and Chromium disagree: the browser is right";
    if ((by === "libvips" && vips.error) || (by === "chromium" && shown.error)) {
      unshowable.push(`${name}: libvips: ${vips.error ?? "reads it"}; Chromium: ${shown.error ?? "shows it"}`);
      continue;
    }
    const chosen = by === "libvips" ? vips : { size: shown.size, rgba: Buffer.from(shown.rgba), grid: browserGrid };
    const loss = await encodingLoss(chosen);
    if (!agree)
      disagreements.push(
        `${name}: ${vips.error ? `libvips: ${vips.error}` : shown.error ? `Chromium: ${shown.error}` : sameSize ? `mean difference R,G,B,A ${apart.join(", ")}` : `sizes ${vips.size.width}×${vips.size.height} (libvips) and ${shown.size.width}×${shown.size.height} (Chromium)`}; reference: ${by}`,
      );
    reference[name] = {
      width: chosen.size.width,
      height: chosen.size.height,
      by,
      why,
      libvipsChromium: vips.error ? `libvips: ${vips.error}` : shown.error ? `Chromium: ${shown.error}` : apart,
      encodingLoss: loss,
      tolerance: Math.ceil(manifest.tolerance + Math.max(...loss.slice(0, 3))),
      grid: chosen.grid,
    };
  }
} finally {
  await browser.close();
}
await writeFile(join(corpus, "reference.json"), `${JSON.stringify(reference, null, 0).replaceAll('},"', '},\n"')}\n`);
if (unshowable.length) {
  console.error(`expected converted, but the reference cannot show them:\n  ${unshowable.join("\n  ")}`);
  process.exitCode = 1;
}
await writeFile(join(corpus, "README.md"), readme());
console.log(`refused by the rules, shown by Chromium: ${refusedShown.join(", ") || "none"}`);
console.log(disagreements.length ? `libvips and Chromium disagree:\n  ${disagreements.join("\n  ")}` : "all agree");
