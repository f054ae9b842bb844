import { describe, expect, it } from "vitest";
import { codecMemory, convertToWebp, type StillImageKind } from "../src/convert";
import { codecShareBytes } from "../src/convert/budget";
import { maxProfileBytes, profileWorkBytes } from "../src/convert/colour";
import { colourKind, createWebpCodec } from "../src/convert/webp-codec";
import codecWasm from "../src/convert/webp-codec.wasm";
import fixtures from "./colour-fixtures.json";
import { concat, decodeWebp, pngChunk } from "./images";

// The images and references come from scripts/make-colour-fixtures.mjs: 128 × 96 grids of 8 × 6 flat
// patches carrying real profiles, and libvips's (sharp's) sRGB reading of each as the mean of every patch's
// inner 8 × 8 pixels. Converted at 64 px, a patch is 8 × 8 pixels; its inner 4 × 4 are compared.

type Fixture = { kind: string; file: string; expected: number[]; untagged: number[] | null };
const images = fixtures.images as Record<string, Fixture>;
const base64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
const file = (name: string) => base64((images[name] as Fixture).file);
const profile = (name: keyof typeof fixtures.profiles) => base64(fixtures.profiles[name]);

const columns = fixtures.width / fixtures.cell;
const rows = fixtures.height / fixtures.cell;

/** Converts at 64 px and returns the mean RGB of each patch's inner 4 × 4 output pixels. */
async function patchMeans(bytes: Uint8Array, kind: StillImageKind): Promise<number[]> {
  const out = await convertToWebp(bytes, kind, { maxEdge: 64 });
  const image = await decodeWebp(out.bytes);
  expect([image.width, image.height]).toEqual([64, 48]);
  const cell = 8;
  const means: number[] = [];
  for (let row = 0; row < rows; row += 1) {
    for (let column = 0; column < columns; column += 1) {
      const sum = [0, 0, 0];
      for (let y = row * cell + 2; y < row * cell + 6; y += 1)
        for (let x = column * cell + 2; x < column * cell + 6; x += 1)
          for (let c = 0; c < 3; c += 1) sum[c] = (sum[c] as number) + (image.data[(y * 64 + x) * 4 + c] as number);
      means.push(...sum.map((s) => s / 16));
    }
  }
  return means;
}

/** Per channel: mean absolute difference and mean signed difference (a cast) of patch means. */
function compare(actual: number[], expected: number[]): { absolute: number[]; signed: number[] } {
  const absolute = [0, 0, 0];
  const signed = [0, 0, 0];
  const patches = actual.length / 3;
  actual.forEach((value, i) => {
    const d = value - (expected[i] as number);
    absolute[i % 3] = (absolute[i % 3] as number) + Math.abs(d) / patches;
    signed[i % 3] = (signed[i % 3] as number) + d / patches;
  });
  return { absolute, signed };
}

function expectClose(actual: number[], expected: number[], tolerance = { mean: 3, cast: 1.5 }): void {
  const { absolute, signed } = compare(actual, expected);
  for (let c = 0; c < 3; c += 1) {
    expect(absolute[c], `channel ${c} mean error`).toBeLessThanOrEqual(tolerance.mean);
    expect(Math.abs(signed[c] as number), `channel ${c} cast`).toBeLessThanOrEqual(tolerance.cast);
  }
}

/**
 * Per-fixture tolerances beyond the default (mean 3, cast 1.5): none. The CMYK fixtures used to need 5: libvips's
 * Little CMS (2.19.1) compensates the press profile's bluish black point as it is, Debian's 2.14 made it neutral
 * first; colour.c now computes the black point as libvips's does (docs/conversion.md, "Colour").
 */
const toleranceOf: Record<string, { mean: number; cast: number }> = {};

/** The JPEG with its APP2 ICC_PROFILE segments replaced by `segments` (each: sequence, count, data). */
function jpegWithSegments(jpeg: Uint8Array, segments: { sequence: number; count: number; data: Uint8Array }[]) {
  const parts: Uint8Array[] = [jpeg.subarray(0, 2)];
  for (const { sequence, count, data } of segments) {
    const segment = new Uint8Array(18 + data.length);
    const view = new DataView(segment.buffer);
    view.setUint16(0, 0xffe2);
    view.setUint16(2, 16 + data.length);
    segment.set(new TextEncoder().encode("ICC_PROFILE\0"), 4);
    segment[16] = sequence;
    segment[17] = count;
    segment.set(data, 18);
    parts.push(segment);
  }
  let pos = 2;
  for (;;) {
    const marker = jpeg[pos + 1] as number;
    const length = ((jpeg[pos + 2] as number) << 8) | (jpeg[pos + 3] as number);
    if (marker === 0xda) break;
    const isIcc = marker === 0xe2 && new TextDecoder().decode(jpeg.subarray(pos + 4, pos + 16)) === "ICC_PROFILE\0";
    if (!isIcc) parts.push(jpeg.subarray(pos, pos + 2 + length));
    pos += 2 + length;
  }
  parts.push(jpeg.subarray(pos));
  return concat(parts);
}

const whole = (data: Uint8Array) => [{ sequence: 1, count: 1, data }];

/** The PNG with its iCCP chunk's data replaced (null: the chunk removed). */
function pngWithIccp(png: Uint8Array, iccp: Uint8Array | null): Uint8Array {
  const parts: Uint8Array[] = [png.subarray(0, 8)];
  let pos = 8;
  while (pos < png.length) {
    const length = new DataView(png.buffer, png.byteOffset + pos).getUint32(0);
    const type = new TextDecoder().decode(png.subarray(pos + 4, pos + 8));
    if (type === "iCCP") {
      if (iccp) parts.push(pngChunk("iCCP", iccp));
    } else parts.push(png.subarray(pos, pos + 12 + length));
    pos += 12 + length;
  }
  return concat(parts);
}

async function deflate(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data]).stream().pipeThrough(new CompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function iccpChunkData(compressed: Uint8Array): Promise<Uint8Array> {
  return concat([new TextEncoder().encode("icc\0\0"), compressed]);
}

const converted = async (bytes: Uint8Array, kind: StillImageKind) =>
  (await convertToWebp(bytes, kind, { maxEdge: 64 })).bytes;

describe("embedded ICC profiles are applied: the output matches libvips's sRGB reading", () => {
  const cases: [string, string][] = [
    ["display-p3.jpg", "a Display P3 JPEG (APP2)"],
    ["display-p3-three-segments.jpg", "a JPEG whose profile is split over three APP2 segments stored out of order"],
    ["adobe-rgb.jpg", "an Adobe RGB (1998) JPEG"],
    ["prophoto.png", "a ProPhoto RGB PNG (iCCP)"],
    ["swapped-red-green.jpg", "a JPEG tagged with colord's profile that swaps red and green"],
    ["grey-linear.jpg", "a grey JPEG with a grey (gamma 1.0) profile"],
    ["grey-linear.png", "an 8-bit grey PNG with a grey profile"],
    ["grey-linear-16.png", "a 16-bit grey PNG with a grey profile"],
    ["display-p3.png", "an 8-bit Display P3 PNG"],
    ["display-p3-16.png", "a 16-bit Display P3 PNG"],
    ["display-p3.webp", "a Display P3 WebP (VP8X + ICCP)"],
    ["cmyk-embedded.jpg", "an inverted (Adobe) CMYK JPEG through its own embedded profile"],
    ["cmyk-untagged.jpg", "an inverted (Adobe) CMYK JPEG without a profile, through libvips's press profile"],
    ["cmyk-embedded-progressive.jpg", "a progressive CMYK JPEG through its own embedded profile"],
    ["cmyk-untagged-progressive.jpg", "a progressive CMYK JPEG without a profile, through libvips's press profile"],
    ["display-p3-palette.png", "a palette PNG with a Display P3 profile"],
  ];
  for (const [name, what] of cases) {
    const tolerance = toleranceOf[name] ?? { mean: 3, cast: 1.5 };
    const unlike = images[name]?.untagged ? ", unlike the untagged reading" : "";
    it(`${what}: mean error ≤ ${tolerance.mean} levels and no cast (≤ ${tolerance.cast}) per channel${unlike}`, async () => {
      const fixture = images[name] as Fixture;
      const actual = await patchMeans(file(name), fixture.kind as StillImageKind);
      expectClose(actual, fixture.expected, tolerance);
      if (fixture.untagged) {
        // The fixture depends on its profile: ignoring it would be far off on some channel.
        expect(Math.max(...compare(actual, fixture.untagged).absolute)).toBeGreaterThan(4);
      }
    });
  }

  it("a CMYK JPEG's embedded profile is used, not the built-in one (same pixels read through each differ)", async () => {
    const actual = await patchMeans(file("cmyk-embedded.jpg"), "jpeg");
    expect(Math.max(...compare(actual, (images["cmyk-untagged.jpg"] as Fixture).expected).absolute)).toBeGreaterThan(5);
  });
});

describe("colour transforms in the codec", () => {
  it("RGBA is transformed in place with every alpha byte left as it was", () => {
    const codec = createWebpCodec(codecWasm);
    const icc = profile("display-p3");
    const at = codec.malloc(icc.length);
    codec.heap(at, icc.length).set(icc);
    const transform = codec.createColourTransform(at, icc.length, colourKind.rgb);
    codec.free(at);
    expect(transform).not.toBe(0);
    const pixels = 256;
    const rgba = new Uint8Array(pixels * 4).map((_, i) => (i * 97 + 13) & 255);
    const pointer = codec.malloc(rgba.length);
    codec.heap(pointer, rgba.length).set(rgba);
    codec.applyColour(transform, pointer, pointer, pixels);
    const out = codec.heap(pointer, rgba.length).slice();
    codec.freeColour(transform);
    let changed = 0;
    for (let i = 0; i < rgba.length; i += 1) {
      if (i % 4 === 3) expect(out[i]).toBe(rgba[i]);
      else if (out[i] !== rgba[i]) changed += 1;
    }
    expect(changed).toBeGreaterThan(pixels); // P3 moves most colours
  });

  it("plain CMYK (0 = no ink) and Adobe's inverted CMYK give the same RGB for the same inks", () => {
    const codec = createWebpCodec(codecWasm);
    const pixels = 625;
    const inks = new Uint8Array(pixels * 4).map((_, i) => (i * 53 + (i >> 2) * 11) & 255);
    const run = (kind: typeof colourKind.cmyk | typeof colourKind.cmykInverted, data: Uint8Array) => {
      const transform = codec.createColourTransform(0, 0, kind);
      expect(transform).not.toBe(0);
      const input = codec.malloc(data.length);
      const output = codec.malloc(pixels * 3);
      codec.heap(input, data.length).set(data);
      codec.applyColour(transform, input, output, pixels);
      const rgb = codec.heap(output, pixels * 3).slice();
      codec.freeColour(transform);
      codec.free(input);
      codec.free(output);
      return rgb;
    };
    const plain = run(colourKind.cmyk, inks);
    const inverted = run(
      colourKind.cmykInverted,
      inks.map((v) => 255 - v),
    );
    expect(inverted).toEqual(plain);
    // No ink is paper white, all ink near black.
    const ends = run(colourKind.cmyk, new Uint8Array([0, 0, 0, 0, 255, 255, 255, 255, ...new Uint8Array(623 * 4)]));
    expect(Math.min(...ends.subarray(0, 3))).toBeGreaterThan(235);
    expect(Math.max(...ends.subarray(3, 6))).toBeLessThan(40);
  });

  it("a profile of another colour space than the image's is refused (grey on RGB, RGB on grey, CMYK on RGB)", () => {
    const codec = createWebpCodec(codecWasm);
    const make = (icc: Uint8Array, kind: (typeof colourKind)[keyof typeof colourKind]) => {
      const at = codec.malloc(icc.length);
      codec.heap(at, icc.length).set(icc);
      const transform = codec.createColourTransform(at, icc.length, kind);
      codec.free(at);
      if (transform) codec.freeColour(transform);
      return transform !== 0;
    };
    expect(make(profile("grey"), colourKind.grey)).toBe(true);
    expect(make(profile("grey"), colourKind.rgb)).toBe(false);
    expect(make(profile("display-p3"), colourKind.grey)).toBe(false);
    expect(make(profile("display-p3"), colourKind.cmyk)).toBe(false);
    expect(make(profile("cmyk"), colourKind.rgb)).toBe(false);
    expect(make(profile("cmyk"), colourKind.cmykInverted)).toBe(true);
  });
});

/**
 * The fixture's CMYK profile with its A2B0 table rebuilt on a `grid`⁴ lattice (3 × 16-bit outputs a point,
 * contents a smooth ramp): a lookup-table profile as large as real press profiles get, to measure lcms's work.
 */
function largeCmykProfile(grid: number): Uint8Array {
  const small = profile("cmyk");
  const view = new DataView(small.buffer, small.byteOffset, small.byteLength);
  const tags: { signature: string; body: Uint8Array }[] = [];
  for (let i = 0; i < view.getUint32(128); i += 1) {
    const at = 132 + i * 12;
    const signature = new TextDecoder().decode(small.subarray(at, at + 4));
    const offset = view.getUint32(at + 4);
    tags.push({ signature, body: small.subarray(offset, offset + view.getUint32(at + 8)) });
  }
  const a2b0 = tags.find((t) => t.signature === "A2B0") as { body: Uint8Array };
  const points = grid ** 4;
  const table = new Uint8Array(52 + 16 + points * 6 + 12);
  table.set(a2b0.body.subarray(0, 52 + 16)); // type, channels, matrix, input tables of the small one
  table[10] = grid;
  const tableView = new DataView(table.buffer);
  for (let p = 0; p < points; p += 1)
    for (let c = 0; c < 3; c += 1)
      tableView.setUint16(68 + p * 6 + c * 2, ((p * (c + 1) * 2654435761) >>> 16) & 0xffff);
  for (let c = 0; c < 3; c += 1) tableView.setUint16(68 + points * 6 + c * 4 + 2, 0xffff);
  a2b0.body = table;
  const headerBytes = 128 + 4 + tags.length * 12;
  const size = tags.reduce((total, t) => total + Math.ceil(t.body.length / 4) * 4, headerBytes);
  const out = new Uint8Array(size);
  const outView = new DataView(out.buffer);
  out.set(small.subarray(0, 128));
  outView.setUint32(0, size);
  outView.setUint32(128, tags.length);
  let offset = headerBytes;
  tags.forEach((t, i) => {
    out.set(new TextEncoder().encode(t.signature), 132 + i * 12);
    outView.setUint32(136 + i * 12, offset);
    outView.setUint32(140 + i * 12, t.body.length);
    out.set(t.body, offset);
    offset += Math.ceil(t.body.length / 4) * 4;
  });
  return out;
}

describe("the memory a profile takes while its transform is made", () => {
  it("a 3.2 MB lookup-table CMYK profile (27⁴ lattice) is applied within profileWorkBytes and the codec's share", async () => {
    const big = largeCmykProfile(27);
    expect(big.length).toBeGreaterThan(3_000_000);
    expect(big.length).toBeLessThanOrEqual(maxProfileBytes);
    const cmyk = file("cmyk-untagged.jpg");
    // Profile-free conversions of the same image first: their high-water mark is the baseline.
    await converted(cmyk, "jpeg");
    const before = codecMemory().codec;
    const pieces = Math.ceil(big.length / 65_000);
    const segments = Array.from({ length: pieces }, (_, i) => ({
      sequence: i + 1,
      count: pieces,
      data: big.subarray(i * 65_000, (i + 1) * 65_000),
    }));
    const tagged = jpegWithSegments(cmyk, segments);
    const withProfile = await converted(tagged, "jpeg");
    // The profile is used (it is not libvips's), and what lcms took stayed within the allowance.
    expect(withProfile).not.toEqual(await converted(cmyk, "jpeg"));
    const grown = codecMemory().codec - before;
    expect(grown).toBeLessThanOrEqual(profileWorkBytes(big.length));
    expect(codecMemory().codec).toBeLessThan(codecShareBytes);
  });
});

const p3 = file("display-p3.jpg");

const icc = profile("display-p3");

const untaggedJpeg = jpegWithSegments(p3, []);

const badJpegProfiles: [string, { sequence: number; count: number; data: Uint8Array }[]][] = [
  ["a truncated profile", whole(icc.subarray(0, 200))],
  [
    "tag offsets and sizes that point past the end",
    whole(
      (() => {
        const lying = icc.slice();
        const view = new DataView(lying.buffer);
        const tags = view.getUint32(128);
        for (let i = 0; i < tags; i += 1) {
          view.setUint32(132 + i * 12 + 4, 0xfffffff0 - i);
          view.setUint32(132 + i * 12 + 8, 0x7fffffff);
        }
        return lying;
      })(),
    ),
  ],
  ["a profile that is random bytes", whole(new Uint8Array(600).map((_, i) => (i * 151 + 7) & 255))],
  [
    "a missing segment (2 of 3 present)",
    [
      { sequence: 1, count: 3, data: icc.subarray(0, 100) },
      { sequence: 3, count: 3, data: icc.subarray(200) },
    ],
  ],
  [
    "a repeated segment",
    [
      { sequence: 1, count: 2, data: icc.subarray(0, 100) },
      { sequence: 1, count: 2, data: icc.subarray(100) },
    ],
  ],
  ["a grey profile on an RGB image", whole(profile("grey"))],
  ["a CMYK profile on an RGB image", whole(profile("cmyk"))],
];

const greyPng = file("grey-linear.png");

const untaggedPng = pngWithIccp(greyPng, null);

describe("bad profiles in a JPEG or WebP: the image converts as if it had none, fast and within memory", () => {
  for (const [what, segments] of badJpegProfiles) {
    it(`JPEG with ${what}: the same output as without a profile`, async () => {
      expect(await converted(jpegWithSegments(p3, segments), "jpeg")).toEqual(await converted(untaggedJpeg, "jpeg"));
    });
  }

  it("JPEG whose segments join to more than the 3.5 MB profile cap: ignored without being parsed", async () => {
    const piece = new Uint8Array(65_000);
    piece.set(icc);
    const count = Math.ceil(maxProfileBytes / piece.length) + 1;
    const segments = Array.from({ length: count }, (_, i) => ({ sequence: i + 1, count, data: piece }));
    const started = Date.now();
    expect(await converted(jpegWithSegments(p3, segments), "jpeg")).toEqual(await converted(untaggedJpeg, "jpeg"));
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("WebP whose ICCP chunk holds garbage: the same output as the file without its profile", async () => {
    const webp = file("display-p3.webp");
    const text = new TextDecoder("latin1");
    let pos = 12;
    while (text.decode(webp.subarray(pos, pos + 4)) !== "ICCP") {
      pos += 8 + new DataView(webp.buffer, webp.byteOffset + pos + 4).getUint32(0, true);
      if (pos >= webp.length) throw new Error("the fixture has no ICCP chunk");
    }
    const size = new DataView(webp.buffer, webp.byteOffset + pos + 4).getUint32(0, true);
    const garbage = webp.slice();
    garbage.subarray(pos + 8, pos + 8 + size).fill(0xa5);
    const renamed = webp.slice(); // an unknown chunk: readers skip it
    renamed.set(new TextEncoder().encode("XXXX"), pos);
    const untagged = await converted(renamed, "webp");
    expect(untagged).not.toEqual(await converted(webp, "webp"));
    expect(await converted(garbage, "webp")).toEqual(untagged);
  });
});

describe("bad profiles in a PNG: the image converts as if it had none, fast and within memory", () => {
  it("PNG with an RGB profile on a grey image: the same output as without a profile", async () => {
    const iccp = await iccpChunkData(await deflate(icc));
    expect(await converted(pngWithIccp(greyPng, iccp), "png")).toEqual(await converted(untaggedPng, "png"));
  });

  it("PNG whose profile header declares a huge size: ignored, nothing allocated for it", async () => {
    const huge = profile("grey").slice();
    new DataView(huge.buffer).setUint32(0, 0xfffffff0);
    const iccp = await iccpChunkData(await deflate(huge));
    expect(await converted(pngWithIccp(greyPng, iccp), "png")).toEqual(await converted(untaggedPng, "png"));
  });

  it("PNG iCCP inflate bomb (64 MiB of zeros behind a header declaring 3.4 MB): stops at the declared size, fast, within the codec's share", async () => {
    const bomb = new Uint8Array(64 * 1024 * 1024);
    new DataView(bomb.buffer).setUint32(0, 3_400_000);
    const compressed = await deflate(bomb);
    expect(compressed.length).toBeLessThan(400_000);
    const iccp = await iccpChunkData(compressed);
    const started = Date.now();
    expect(await converted(pngWithIccp(greyPng, iccp), "png")).toEqual(await converted(untaggedPng, "png"));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(codecMemory().codec).toBeLessThan(codecShareBytes);
  });

  it("PNG whose zlib stream goes on past the profile's declared size: ignored", async () => {
    const longer = concat([profile("grey"), new Uint8Array(1000)]);
    const iccp = await iccpChunkData(await deflate(longer));
    expect(await converted(pngWithIccp(greyPng, iccp), "png")).toEqual(await converted(untaggedPng, "png"));
  });

  it("PNG whose iCCP data is not zlib: ignored", async () => {
    const iccp = await iccpChunkData(new Uint8Array(300).fill(0x55));
    expect(await converted(pngWithIccp(greyPng, iccp), "png")).toEqual(await converted(untaggedPng, "png"));
  });
});
