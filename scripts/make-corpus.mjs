// Makes the corpus files that no public test suite had (test/fixtures/corpus/made/), from files of the corpus
// itself and ICC profiles of Debian packages (test/fixtures/corpus/profiles/) or built into libvips:
// JPEGs carrying Display P3, Adobe RGB, ProPhoto, LUT-based and grey profiles, CMYK with and without a
// profile, a progressive JPEG, GIFs with LZW minimum code size 1 and without any colour table, lossless,
// tiny and big WebPs, an animated WebP, a PNG whose IHDR CRC is wrong, and files cut short.
//
//   npx node scripts/make-corpus.mjs          writes test/fixtures/corpus/made/ (deterministic for one libvips)
//
// Then `npx node scripts/corpus-reference.mjs` records what libvips and Chromium show of every file.

import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import sharp from "sharp";

const corpus = new URL("../test/fixtures/corpus/", import.meta.url).pathname;
const made = join(corpus, "made");
const profiles = join(corpus, "profiles");

const read = (path) => readFile(join(corpus, path));

/** testorig.jpg (libjpeg-turbo's test image, 227×149) as 8-bit sRGB pixels. */
async function photo() {
  const { data, info } = await sharp(await read("libjpeg-turbo/testorig.jpg"))
    .raw()
    .toBuffer({ resolveWithObject: true });
  return sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } });
}

/** A v2 monochrome display profile whose tone curve is one gamma value (lcms needs desc, wtpt, kTRC). */
export function greyProfile(gamma, description) {
  const text = Buffer.from(`${description}\0`, "latin1");
  const desc = Buffer.alloc(12 + text.length + 4 + 4 + 2 + 1 + 67);
  desc.write("desc", 0, "latin1");
  desc.writeUInt32BE(text.length, 8);
  text.copy(desc, 12);
  const wtpt = Buffer.alloc(20);
  wtpt.write("XYZ ", 0, "latin1");
  for (const [i, v] of [0.9642, 1.0, 0.8249].entries()) wtpt.writeInt32BE(Math.round(v * 65536), 8 + i * 4);
  const ktrc = Buffer.alloc(14);
  ktrc.write("curv", 0, "latin1");
  ktrc.writeUInt32BE(1, 8);
  ktrc.writeUInt16BE(Math.round(gamma * 256), 12);
  const cprtText = Buffer.from("No copyright, use freely\0", "latin1");
  const cprt = Buffer.concat([Buffer.from("text\0\0\0\0", "latin1"), cprtText]);
  const tags = [
    ["desc", desc],
    ["wtpt", wtpt],
    ["kTRC", ktrc],
    ["cprt", cprt],
  ];
  const pad = (b) => Buffer.concat([b, Buffer.alloc((4 - (b.length % 4)) % 4)]);
  let offset = 128 + 4 + tags.length * 12;
  const table = Buffer.alloc(4 + tags.length * 12);
  table.writeUInt32BE(tags.length, 0);
  const bodies = [];
  tags.forEach(([sig, body], i) => {
    table.write(sig, 4 + i * 12, "latin1");
    table.writeUInt32BE(offset, 8 + i * 12);
    table.writeUInt32BE(body.length, 12 + i * 12);
    bodies.push(pad(body));
    offset += pad(body).length;
  });
  const header = Buffer.alloc(128);
  header.writeUInt32BE(offset, 0);
  header.writeUInt32BE(0x02100000, 8);
  header.write("mntrGRAYXYZ ", 12, "latin1");
  header.writeUInt16BE(2020, 24);
  header.writeUInt16BE(1, 26);
  header.writeUInt16BE(1, 28);
  header.write("acsp", 36, "latin1");
  for (const [i, v] of [0.9642, 1.0, 0.8249].entries()) header.writeInt32BE(Math.round(v * 65536), 68 + i * 4);
  return Buffer.concat([header, table, ...bodies]);
}

/**
 * A one-frame GIF of palette indices, LZW-coded with `minCodeSize` (1 is legal in practice though the
 * specification says 2); `palette` null writes no colour table at all. Codes are literals only, with a
 * clear code before the table would need more than 12 bits.
 */
export function gif({ width, height, indices, palette, minCodeSize, transparent = null }) {
  const clear = 1 << minCodeSize;
  const end = clear + 1;
  const bytes = [];
  let acc = 0;
  let bits = 0;
  let size = minCodeSize + 1;
  const emit = (code) => {
    acc |= code << bits;
    bits += size;
    while (bits >= 8) {
      bytes.push(acc & 255);
      acc >>>= 8;
      bits -= 8;
    }
  };
  let next = end + 1;
  emit(clear);
  let first = true;
  for (const index of indices) {
    emit(index);
    // After every literal but the first following a clear, the decoder adds one table entry; the code width
    // grows once the next free code no longer fits, checked after every code as giflib does (with minimum
    // code size 1 the table is full from the start, so the width grows after the first literal).
    if (!first) next += 1;
    if (next >= 1 << size && size < 12) size += 1;
    first = false;
    if (next >= 4093) {
      emit(clear);
      size = minCodeSize + 1;
      next = end + 1;
      first = true;
    }
  }
  emit(end);
  if (bits > 0) bytes.push(acc & 255);
  const out = [..."GIF89a"].map((c) => c.charCodeAt(0));
  const u16 = (v) => [v & 255, v >> 8];
  const tableBits = palette ? Math.max(0, Math.ceil(Math.log2(palette.length / 3)) - 1) : 0;
  out.push(...u16(width), ...u16(height), palette ? 0x80 | tableBits : 0, 0, 0);
  if (palette) {
    const padded = [...palette];
    while (padded.length < 3 * (2 << tableBits)) padded.push(0);
    out.push(...padded);
  }
  if (transparent !== null) out.push(0x21, 0xf9, 4, 1, 0, 0, transparent, 0);
  out.push(0x2c, ...u16(0), ...u16(0), ...u16(width), ...u16(height), 0, minCodeSize);
  for (let i = 0; i < bytes.length; i += 255) {
    const block = bytes.slice(i, i + 255);
    out.push(block.length, ...block);
  }
  out.push(0, 0x3b);
  return Buffer.from(out);
}

/** A two-colour picture (rings) as palette indices, `width`×`height`. */
function rings(width, height) {
  const indices = [];
  for (let y = 0; y < height; y += 1)
    for (let x = 0; x < width; x += 1) indices.push(Math.floor(Math.hypot(x - width / 2, y - height / 2) / 4) % 2);
  return indices;
}

function crc32(bytes) {
  let crc = -1;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k += 1) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ -1) >>> 0;
}

/** A screenshot-like picture (RGBA): flat panels, lines of "text", a gradient bar. */
export function screenshot(width, height) {
  const rgba = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y += 1)
    for (let x = 0; x < width; x += 1) {
      const i = (y * width + x) * 4;
      let c = [245, 246, 248];
      if (y < height / 12) c = [32, 99, 210];
      else if (x < width / 6) c = [228, 231, 236];
      else if ((y >> 4) % 3 === 0 && (x >> 3) % 7 !== 0 && x % (width / 2) < width / 3) c = [40, 44, 52];
      if (y > height * 0.8 && y < height * 0.85)
        c = [Math.round((x / width) * 255), 120, 255 - Math.round((x / width) * 255)];
      rgba[i] = c[0];
      rgba[i + 1] = c[1];
      rgba[i + 2] = c[2];
      rgba[i + 3] = 255;
    }
  return rgba;
}

/** JPEG: colour profiles, CMYK with and without one, greyscale, progressive, cut short. */
async function makeJpegs(write) {
  const jpeg = { quality: 90, chromaSubsampling: "4:2:0" };

  // Colour profiles: the same picture, converted into each space and carrying the profile.
  await write("testorig-display-p3.jpg", await (await photo()).withIccProfile("p3").jpeg(jpeg).toBuffer());
  for (const [name, file] of [
    ["testorig-adobe-rgb.jpg", "AdobeRGB1998.icc"],
    ["testorig-prophoto.jpg", "ProPhotoRGB.icc"],
    ["testorig-lut-profile.jpg", "lcms2-test3.icc"],
  ])
    await write(name, await (await photo()).withIccProfile(join(profiles, file)).jpeg(jpeg).toBuffer());
  const grey = greyProfile(1.0, "Grey, linear (gamma 1.0)");
  await writeFile(join(profiles, "grey-linear.icc"), grey);
  await write(
    "hopper-grey-linear-profile.jpg",
    await sharp(await read("pillow/hopper_gray.jpg"))
      .toColourspace("b-w")
      .withIccProfile(join(profiles, "grey-linear.icc"))
      .jpeg({ quality: 90 })
      .toBuffer(),
  );
  // CMYK: with libvips's press profile embedded, and without any profile.
  await write(
    "testorig-cmyk-profile.jpg",
    await (await photo()).withIccProfile("cmyk").jpeg({ quality: 90 }).toBuffer(),
  );
  await write("testorig-cmyk.jpg", await (await photo()).toColourspace("cmyk").jpeg({ quality: 90 }).toBuffer());
  await write("testorig-progressive.jpg", await (await photo()).jpeg({ ...jpeg, progressive: true }).toBuffer());
  const baseline = await read("libjpeg-turbo/testorig.jpg");
  await write("testorig-cut.jpg", baseline.subarray(0, Math.floor(baseline.length / 2)));
}

/** GIF: unusual code sizes and colour tables, cut short. */
async function makeGifs(write) {
  // GIF: minimum code size 1 (two colours), no colour table at all, minimum code size 1 with transparency.
  await write(
    "rings-mincode1.gif",
    gif({ width: 40, height: 30, indices: rings(40, 30), palette: [200, 30, 40, 250, 240, 200], minCodeSize: 1 }),
  );
  await write(
    "rings-mincode1-transparent.gif",
    gif({
      width: 40,
      height: 30,
      indices: rings(40, 30),
      palette: [20, 90, 200, 0, 0, 0],
      minCodeSize: 1,
      transparent: 1,
    }),
  );
  await write(
    "rings-no-colour-table.gif",
    gif({ width: 40, height: 30, indices: rings(40, 30), palette: null, minCodeSize: 2 }),
  );
  const treescap = await read("giflib/treescap.gif");
  await write("treescap-cut.gif", treescap.subarray(0, Math.floor(treescap.length / 2)));
}

/** WebP: lossless in several sizes, with alpha, animated, cut short. */
async function makeWebps(write) {
  // WebP: lossless, lossless with alpha, tiny lossless, big lossless screenshot, animated, cut short.
  const hopper = await read("pillow/hopper.jpg");
  await write("hopper-lossless.webp", await sharp(hopper).webp({ lossless: true, effort: 4 }).toBuffer());
  await write(
    "transparent-lossless.webp",
    await sharp(await read("pillow/transparent.webp"))
      .webp({ lossless: true, effort: 4 })
      .toBuffer(),
  );
  await write(
    "tiny-lossless-1x1.webp",
    await sharp({ create: { width: 1, height: 1, channels: 4, background: { r: 230, g: 120, b: 20, alpha: 1 } } })
      .webp({ lossless: true })
      .toBuffer(),
  );
  // 4×3: two flat colours (left half orange, right half teal), the last column half transparent.
  const tiny = Buffer.alloc(4 * 3 * 4);
  for (let i = 0; i < 12; i += 1)
    tiny.set(i % 4 < 2 ? [230, 140, 60, 255] : [40, 150, 160, i % 4 === 3 ? 128 : 255], i * 4);
  await write(
    "tiny-lossless-4x3.webp",
    await sharp(tiny, { raw: { width: 4, height: 3, channels: 4 } })
      .webp({ lossless: true })
      .toBuffer(),
  );
  await write(
    "screenshot-lossless-3840x2160.webp",
    await sharp(screenshot(3840, 2160), { raw: { width: 3840, height: 2160, channels: 4 } })
      .webp({ lossless: true, effort: 4 })
      .toBuffer(),
  );
  await write(
    "fire-animated.webp",
    await sharp(await read("giflib/fire.gif"), { animated: true })
      .webp({ quality: 60 })
      .toBuffer(),
  );
  const lossy = await read("libwebp/test.webp");
  await write("test-cut.webp", lossy.subarray(0, Math.floor(lossy.length / 2)));
}

/** PNG: damaged ones, colour under transparency, 16-bit interlaced. */
async function makePngs(write) {
  // PNG: a wrong IHDR CRC (browsers refuse the file), a colour image cut inside its IDAT.
  const rgb = Buffer.from(await read("pngsuite/basn2c08.png"));
  rgb.writeUInt32BE((crc32(rgb.subarray(12, 29)) ^ 0xff) >>> 0, 29);
  await write("basn2c08-bad-ihdr-crc.png", rgb);
  const whole = await read("pngsuite/basn6a08.png");
  await write("basn6a08-cut.png", whole.subarray(0, whole.length - 60));
  // Colour under transparency: 10 px squares of opaque white beside fully transparent pure red, downscaled by
  // a non-integer factor (maxEdge 70 in the manifest); no red may tint the white edges.
  const checker = Buffer.alloc(300 * 300 * 4);
  for (let y = 0; y < 300; y += 1)
    for (let x = 0; x < 300; x += 1)
      checker.set(((x / 10) ^ (y / 10)) & 1 ? [255, 0, 0, 0] : [255, 255, 255, 255], (y * 300 + x) * 4);
  await write(
    "checker-transparent-red.png",
    await sharp(checker, { raw: { width: 300, height: 300, channels: 4 } })
      .png({ compressionLevel: 9 })
      .toBuffer(),
  );
  // A 16-bit RGBA PNG, bigger than the target (downscaled on premultiplied alpha), interlaced.
  const { data, info } = await sharp(await read("pillow/transparent.webp"))
    .raw()
    .toBuffer({ resolveWithObject: true });
  await write(
    "transparent-16bit-interlaced.png",
    await sharp(data, { raw: { width: info.width, height: info.height, channels: 4 } })
      .toColourspace("rgb16")
      .png({ progressive: true, compressionLevel: 9 })
      .toBuffer(),
  );
}

export async function makeCorpus() {
  await mkdir(made, { recursive: true });
  const write = (name, bytes) => writeFile(join(made, name), bytes);
  await makeJpegs(write);
  await makeGifs(write);
  await makeWebps(write);
  await makePngs(write);
}

if (import.meta.url === `file://${process.argv[1]}`) await makeCorpus();
