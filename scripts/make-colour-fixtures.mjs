// Generates converter/test/colour-fixtures.json: small images carrying real ICC profiles, and what
// libvips (sharp) makes of each, for converter/test/colour.test.ts.
//
//   node scripts/make-colour-fixtures.mjs      (needs Debian's colord-data: apt-get install colord-data)
//
// Every image is a 128 × 96 grid of 8 × 6 flat patches (16 × 16 pixels each, aligned to JPEG blocks, so
// compression barely touches them): saturated hues, tints, shades and greys, the colours a profile moves
// most. The reference of each image is libvips's reading of it converted to sRGB (sharp's default
// pipeline, which applies the embedded profile with perceptual intent, or libvips's own CMYK profile when
// a CMYK JPEG has none), kept as the mean of each patch's inner 8 × 8 pixels. `untagged` holds the same
// means with the profile ignored, so a test can check that the image really depends on its profile.
//
// Profiles: Display P3 is libvips's own ("p3"); Adobe RGB (1998), ProPhoto RGB and SwappedRedAndGreen come
// from colord-data (/usr/share/color/icc/colord/, CC0-1.0); the grey profile (gamma 1.0) and the CMYK one
// (a small lut16 table) are written here. The output is deterministic.
import { readFileSync, writeFileSync } from "node:fs";
import { deflateSync } from "node:zlib";
import sharp from "sharp";

const OUTPUT = new URL("../converter/test/colour-fixtures.json", import.meta.url);
const COLORD = "/usr/share/color/icc/colord";
const WIDTH = 128;
const HEIGHT = 96;
const CELL = 16;
const COLUMNS = WIDTH / CELL;
const ROWS = HEIGHT / CELL;

// ---------------------------------------------------------------------------------------------
// Patches
// ---------------------------------------------------------------------------------------------

function hsv(h, s, v) {
  const f = (n) => {
    const k = (n + h / 60) % 6;
    return v - v * s * Math.max(0, Math.min(k, 4 - k, 1));
  };
  return [f(5), f(3), f(1)].map((c) => Math.round(c * 255));
}

/** 48 colours: 8 hues at full, half and low saturation and dark, plus greys and skin-like tones. */
function patchColours() {
  const colours = [];
  for (let row = 0; row < ROWS; row += 1) {
    for (let column = 0; column < COLUMNS; column += 1) {
      const hue = column * 45;
      if (row === 0) colours.push(hsv(hue, 1, 1));
      else if (row === 1) colours.push(hsv(hue, 0.5, 0.95));
      else if (row === 2) colours.push(hsv(hue, 0.85, 0.55));
      else if (row === 3) colours.push(hsv(hue + 20, 0.25, 0.8));
      else if (row === 4) colours.push([column * 36, column * 36, column * 36].map((c) => Math.min(255, c)));
      else colours.push(hsv(15 + column * 3, 0.3 + column * 0.05, 0.45 + column * 0.07));
    }
  }
  return colours;
}

function paint(colours, channels) {
  const pixels = Buffer.alloc(WIDTH * HEIGHT * channels);
  for (let y = 0; y < HEIGHT; y += 1) {
    for (let x = 0; x < WIDTH; x += 1) {
      const colour = colours[Math.floor(y / CELL) * COLUMNS + Math.floor(x / CELL)];
      for (let c = 0; c < channels; c += 1) pixels[(y * WIDTH + x) * channels + c] = colour[c] ?? colour[0];
    }
  }
  return pixels;
}

const rgb = () => sharp(paint(patchColours(), 3), { raw: { width: WIDTH, height: HEIGHT, channels: 3 } });
const greyLevels = () =>
  patchColours().map((_, i) => {
    const level = Math.round((i / 47) * 255);
    return [level];
  });

/** Mean RGB of each patch's inner 8 × 8 pixels, from libvips's sRGB reading of the file. */
async function patchMeans(file, options = {}) {
  const { data, info } = await sharp(file, options).toColourspace("srgb").raw().toBuffer({ resolveWithObject: true });
  if (info.width !== WIDTH || info.height !== HEIGHT) throw new Error(`unexpected size ${info.width}×${info.height}`);
  const means = [];
  for (let row = 0; row < ROWS; row += 1) {
    for (let column = 0; column < COLUMNS; column += 1) {
      const sum = [0, 0, 0];
      for (let y = row * CELL + 4; y < row * CELL + 12; y += 1) {
        for (let x = column * CELL + 4; x < column * CELL + 12; x += 1) {
          for (let c = 0; c < 3; c += 1)
            sum[c] += data[(y * WIDTH + x) * info.channels + Math.min(c, info.channels - 1)];
        }
      }
      means.push(...sum.map((s) => Math.round((s / 64) * 10) / 10));
    }
  }
  return means;
}

// ---------------------------------------------------------------------------------------------
// ICC profiles written here (version 2)
// ---------------------------------------------------------------------------------------------

const s15 = (value) => Math.round(value * 65536);

function tag(signature, body) {
  const padded = Buffer.alloc(Math.ceil(body.length / 4) * 4);
  body.copy(padded);
  return { signature, body: padded, size: body.length };
}

function text(value) {
  const body = Buffer.alloc(8 + value.length + 1);
  body.write("text", 0, "latin1");
  body.write(value, 8, "latin1");
  return body;
}

function description(value) {
  const body = Buffer.alloc(12 + value.length + 1 + 12 + 67);
  body.write("desc", 0, "latin1");
  body.writeUInt32BE(value.length + 1, 8);
  body.write(value, 12, "latin1");
  return body;
}

function xyz(x, y, z) {
  const body = Buffer.alloc(20);
  body.write("XYZ ", 0, "latin1");
  body.writeInt32BE(s15(x), 8);
  body.writeInt32BE(s15(y), 12);
  body.writeInt32BE(s15(z), 16);
  return body;
}

function profile({ deviceClass, space, pcs, tags }) {
  const all = [
    tag("desc", description(`Storefront test ${space.trim()}`)),
    tag("cprt", text("No copyright, use freely")),
    tag("wtpt", xyz(0.9642, 1, 0.8249)),
    ...tags,
  ];
  let offset = 128 + 4 + all.length * 12;
  const table = Buffer.alloc(4 + all.length * 12);
  table.writeUInt32BE(all.length, 0);
  all.forEach((t, i) => {
    table.write(t.signature, 4 + i * 12, "latin1");
    table.writeUInt32BE(offset, 8 + i * 12);
    table.writeUInt32BE(t.size, 12 + i * 12);
    offset += t.body.length;
  });
  const header = Buffer.alloc(128);
  header.writeUInt32BE(offset, 0);
  header.writeUInt32BE(0x02100000, 8);
  header.write(deviceClass, 12, "latin1");
  header.write(space, 16, "latin1");
  header.write(pcs, 20, "latin1");
  header.write("acsp", 36, "latin1");
  header.writeInt32BE(s15(0.9642), 68);
  header.writeInt32BE(s15(1), 72);
  header.writeInt32BE(s15(0.8249), 76);
  return Buffer.concat([header, table, ...all.map((t) => t.body)]);
}

/** A grey display profile with a linear (gamma 1.0) tone curve: mid-grey codes are much brighter in sRGB. */
function greyProfile() {
  const curve = Buffer.alloc(14);
  curve.write("curv", 0, "latin1");
  curve.writeUInt32BE(1, 8);
  curve.writeUInt16BE(0x0100, 12); // gamma 1.0 as u8Fixed8
  return profile({ deviceClass: "mntr", space: "GRAY", pcs: "XYZ ", tags: [tag("kTRC", curve)] });
}

/** sRGB (0–1) to CIELAB under D50 through the ICC sRGB colourants. */
function labFromRgb(r, g, b) {
  const linear = (c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  const [lr, lg, lb] = [linear(r), linear(g), linear(b)];
  const x = (0.4360747 * lr + 0.3850649 * lg + 0.1430804 * lb) / 0.9642;
  const y = 0.2225045 * lr + 0.7168786 * lg + 0.0606169 * lb;
  const z = (0.0139322 * lr + 0.0971045 * lg + 0.7141733 * lb) / 0.8249;
  const f = (t) => (t > 216 / 24389 ? Math.cbrt(t) : ((24389 / 27) * t + 16) / 116);
  return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))];
}

/**
 * An input CMYK profile (lut16 A2B0, a 5-point grid): ink subtracts from white as in the naive formula, with
 * a warm cast (less blue) that no press profile has, so an image read through it cannot pass for one read
 * through libvips's built-in profile.
 */
function cmykProfile() {
  const grid = 5;
  const clut = Buffer.alloc(grid ** 4 * 3 * 2);
  let at = 0;
  for (let c = 0; c < grid; c += 1)
    for (let m = 0; m < grid; m += 1)
      for (let y = 0; y < grid; y += 1)
        for (let k = 0; k < grid; k += 1) {
          const [ci, mi, yi, ki] = [c, m, y, k].map((v) => v / (grid - 1));
          const white = 1 - ki;
          const lab = labFromRgb((1 - ci) * white, (1 - mi) * white, (1 - yi) * white * 0.8);
          clut.writeUInt16BE(Math.round((lab[0] / 100) * 0xff00), at);
          clut.writeUInt16BE(Math.max(0, Math.min(0xffff, Math.round((lab[1] + 128) * 256))), at + 2);
          clut.writeUInt16BE(Math.max(0, Math.min(0xffff, Math.round((lab[2] + 128) * 256))), at + 4);
          at += 6;
        }
  const head = Buffer.alloc(52 + 4 * 2 * 2);
  head.write("mft2", 0, "latin1");
  head[8] = 4;
  head[9] = 3;
  head[10] = grid;
  for (let i = 0; i < 3; i += 1) head.writeInt32BE(s15(1), 12 + i * 16); // identity matrix
  head.writeUInt16BE(2, 48); // input table entries
  head.writeUInt16BE(2, 50); // output table entries
  for (let i = 0; i < 4; i += 1) head.writeUInt16BE(0xffff, 52 + i * 4 + 2); // linear input tables
  const output = Buffer.alloc(3 * 2 * 2);
  for (let i = 0; i < 3; i += 1) output.writeUInt16BE(0xffff, i * 4 + 2);
  const a2b0 = Buffer.concat([head, clut, output]);
  return profile({ deviceClass: "scnr", space: "CMYK", pcs: "Lab ", tags: [tag("A2B0", a2b0)] });
}

// ---------------------------------------------------------------------------------------------
// Containers
// ---------------------------------------------------------------------------------------------

/** The JPEG's segments before its first scan, with APP2 ICC segments removed. */
function stripJpegProfile(jpeg) {
  const parts = [jpeg.subarray(0, 2)];
  let pos = 2;
  while (pos < jpeg.length) {
    const marker = jpeg[pos + 1];
    if (marker === 0xda) break;
    const length = jpeg.readUInt16BE(pos + 2);
    const body = jpeg.subarray(pos + 4, pos + 2 + length);
    if (!(marker === 0xe2 && body.subarray(0, 12).toString("latin1") === "ICC_PROFILE\0"))
      parts.push(jpeg.subarray(pos, pos + 2 + length));
    pos += 2 + length;
  }
  parts.push(jpeg.subarray(pos));
  return Buffer.concat(parts);
}

/** APP2 ICC_PROFILE segments carrying `icc` in `pieces` parts, in the given order of sequence numbers. */
function iccSegments(icc, pieces, order = [...Array(pieces).keys()]) {
  const size = Math.ceil(icc.length / pieces);
  return order.map((index) => {
    const data = icc.subarray(index * size, (index + 1) * size);
    const segment = Buffer.alloc(4 + 14 + data.length);
    segment.writeUInt16BE(0xffe2, 0);
    segment.writeUInt16BE(2 + 14 + data.length, 2);
    segment.write("ICC_PROFILE\0", 4, "latin1");
    segment[16] = index + 1;
    segment[17] = pieces;
    data.copy(segment, 18);
    return segment;
  });
}

function withJpegProfile(jpeg, icc, pieces = 1, order) {
  const stripped = stripJpegProfile(jpeg);
  return Buffer.concat([stripped.subarray(0, 2), ...iccSegments(icc, pieces, order), stripped.subarray(2)]);
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type, data) {
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  chunk.write(type, 4, "latin1");
  data.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + data.length)), 8 + data.length);
  return chunk;
}

/** A PNG of `samples` (8- or 16-bit, grey or RGB) with an iCCP chunk holding `icc`. */
function pngWithProfile(samples, { channels, depth, icc }) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(WIDTH, 0);
  ihdr.writeUInt32BE(HEIGHT, 4);
  ihdr[8] = depth;
  ihdr[9] = channels === 1 ? 0 : 2;
  const bytesPerSample = depth / 8;
  const stride = WIDTH * channels * bytesPerSample;
  const raw = Buffer.alloc((stride + 1) * HEIGHT);
  for (let y = 0; y < HEIGHT; y += 1) {
    for (let i = 0; i < WIDTH * channels; i += 1) {
      const value = samples[y * WIDTH * channels + i];
      const at = y * (stride + 1) + 1 + i * bytesPerSample;
      if (depth === 16) raw.writeUInt16BE(value * 257, at);
      else raw[at] = value;
    }
  }
  const iccp = Buffer.concat([Buffer.from("test profile\0\0", "latin1"), deflateSync(icc)]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("iCCP", iccp),
    pngChunk("IDAT", deflateSync(raw)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

// ---------------------------------------------------------------------------------------------
// The fixtures
// ---------------------------------------------------------------------------------------------

const jpegOptions = { quality: 95, chromaSubsampling: "4:4:4" };
const adobe = readFileSync(`${COLORD}/AdobeRGB1998.icc`);
const proPhoto = readFileSync(`${COLORD}/ProPhotoRGB.icc`);
const swapped = readFileSync(`${COLORD}/SwappedRedAndGreen.icc`);
const grey = greyProfile();
const cmyk = cmykProfile();

const p3Jpeg = await rgb().withIccProfile("p3").jpeg(jpegOptions).toBuffer();
const p3Icc = (await sharp(p3Jpeg).metadata()).icc;
const greySamples = paint(greyLevels(), 1);
const greyJpeg = withJpegProfile(
  await sharp(greySamples, { raw: { width: WIDTH, height: HEIGHT, channels: 1 } })
    .toColourspace("b-w")
    .jpeg(jpegOptions)
    .toBuffer(),
  grey,
);
// libvips writes CMYK JPEGs the way Photoshop does: Adobe APP14 marker, inverted samples.
const cmykJpeg = stripJpegProfile(await rgb().toColourspace("cmyk").jpeg(jpegOptions).toBuffer());
const cmykProgressive = stripJpegProfile(
  await rgb()
    .toColourspace("cmyk")
    .jpeg({ ...jpegOptions, progressive: true })
    .toBuffer(),
);
// The P3 image's own pixels (P3 code values), for a 16-bit copy; libvips reads the 8-bit one as reference.
const p3Samples = await sharp(p3Jpeg, { ignoreIcc: true }).raw().toBuffer();
const p3Png = pngWithProfile(p3Samples, { channels: 3, depth: 8, icc: p3Icc });

const images = {
  "display-p3.jpg": { kind: "jpeg", file: p3Jpeg },
  "display-p3-three-segments.jpg": { kind: "jpeg", file: withJpegProfile(p3Jpeg, p3Icc, 3, [2, 0, 1]) },
  "adobe-rgb.jpg": {
    kind: "jpeg",
    file: await rgb().withIccProfile(`${COLORD}/AdobeRGB1998.icc`).jpeg(jpegOptions).toBuffer(),
  },
  "prophoto.png": { kind: "png", file: await rgb().withIccProfile(`${COLORD}/ProPhotoRGB.icc`).png().toBuffer() },
  "swapped-red-green.jpg": {
    kind: "jpeg",
    file: await rgb().withIccProfile(`${COLORD}/SwappedRedAndGreen.icc`).jpeg(jpegOptions).toBuffer(),
  },
  "grey-linear.jpg": { kind: "jpeg", file: greyJpeg },
  "grey-linear.png": { kind: "png", file: pngWithProfile(greySamples, { channels: 1, depth: 8, icc: grey }) },
  "grey-linear-16.png": {
    kind: "png",
    file: pngWithProfile(greySamples, { channels: 1, depth: 16, icc: grey }),
    reference: "grey-linear.png",
  },
  "display-p3.png": { kind: "png", file: p3Png },
  "display-p3-16.png": {
    kind: "png",
    file: pngWithProfile(p3Samples, { channels: 3, depth: 16, icc: p3Icc }),
    reference: "display-p3.png",
  },
  "display-p3.webp": { kind: "webp", file: await rgb().withIccProfile("p3").webp({ lossless: true }).toBuffer() },
  "cmyk-embedded.jpg": { kind: "jpeg", file: withJpegProfile(cmykJpeg, cmyk) },
  "cmyk-untagged.jpg": { kind: "jpeg", file: cmykJpeg },
  "cmyk-embedded-progressive.jpg": { kind: "jpeg", file: withJpegProfile(cmykProgressive, cmyk) },
  "cmyk-untagged-progressive.jpg": { kind: "jpeg", file: cmykProgressive },
  "display-p3-palette.png": { kind: "png", file: await rgb().withIccProfile("p3").png({ palette: true }).toBuffer() },
};

const out = { width: WIDTH, height: HEIGHT, cell: CELL, profiles: {}, images: {} };
for (const [name, icc] of Object.entries({ grey, cmyk, "display-p3": p3Icc, "adobe-rgb": adobe })) {
  out.profiles[name] = Buffer.from(icc).toString("base64");
}
for (const [name, image] of Object.entries(images)) {
  const referenceFile = image.reference ? images[image.reference].file : image.file;
  const isCmyk = name.startsWith("cmyk");
  out.images[name] = {
    kind: image.kind,
    file: image.file.toString("base64"),
    expected: await patchMeans(referenceFile),
    untagged: isCmyk ? null : await patchMeans(referenceFile, { ignoreIcc: true }),
  };
}
void proPhoto;
void swapped;
void adobe;
writeFileSync(OUTPUT, `${JSON.stringify(out, null, 1)}\n`);
const bytes = Object.values(images).reduce((total, image) => total + image.file.length, 0);
console.log(`wrote ${OUTPUT.pathname}: ${Object.keys(images).length} images, ${bytes} bytes`);
