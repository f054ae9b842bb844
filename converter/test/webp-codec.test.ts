import { describe, expect, it } from "vitest";
import { alphaFilter, encodeAlph } from "../src/convert/alpha-chunk";
import { jpegStatus } from "../src/convert/codec-decoders";
import {
  createWebpCodec,
  encodeMemoryBytes,
  initialMemoryBytes,
  type WebpCodec,
  webpStatus,
} from "../src/convert/webp-codec";
import codecWasm from "../src/convert/webp-codec.wasm";
import { concat, decodeWebp, encodeJpeg, photoLike } from "./images";

/** Our libwebp build (wasm/webp), checked against @jsquash/webp's decoder, an independent libwebp build. */

const fresh = () => createWebpCodec(codecWasm);

/** Copies bytes into the codec's heap; returns the pointer. */
function load(codec: WebpCodec, bytes: Uint8Array): number {
  const pointer = codec.malloc(bytes.length);
  expect(pointer).not.toBe(0);
  codec.heap(pointer, bytes.length).set(bytes);
  return pointer;
}

/** Encodes RGBA through the codec and joins the pieces into one file. */
function encodeFile(codec: WebpCodec, rgba: Uint8Array, width: number, height: number, quality = 80): Uint8Array {
  return concat(codec.encode(load(codec, rgba), width, height, { quality }));
}

/** The RIFF chunks of a WebP file: tag, payload offset and size; checks the RIFF size and padding. */
function chunks(file: Uint8Array): { tag: string; at: number; size: number }[] {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const text = (at: number) => String.fromCharCode(...file.subarray(at, at + 4));
  expect(text(0) + text(8)).toBe("RIFFWEBP");
  expect(view.getUint32(4, true)).toBe(file.length - 8);
  const out: { tag: string; at: number; size: number }[] = [];
  let at = 12;
  while (at < file.length) {
    const size = view.getUint32(at + 4, true);
    out.push({ tag: text(at), at: at + 8, size });
    at += 8 + size + (size & 1);
  }
  expect(at).toBe(file.length);
  return out;
}

/** Deterministic xorshift32. */
function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

/** Photo-like RGBA with the alpha given per pixel. */
function withAlpha(width: number, height: number, alpha: (x: number, y: number) => number): Uint8Array {
  const rgba = photoLike(width, height);
  for (let y = 0; y < height; y += 1) for (let x = 0; x < width; x += 1) rgba[(y * width + x) * 4 + 3] = alpha(x, y);
  return rgba;
}

/** A cut-out: a soft-edged disc (6 px feather), fully transparent outside, plus a band of random alpha. */
function cutout(width: number, height: number): Uint8Array {
  const next = random(7);
  const r = Math.min(width, height) * 0.38;
  return withAlpha(width, height, (x, y) => {
    if (y > height * 0.85) return next() & 255;
    const d = r - Math.hypot(x - width / 2, y - height / 2);
    return Math.round(Math.max(0, Math.min(1, (d + 3) / 6)) * 255);
  });
}

/** Alpha equality and the mean RGB difference over pixels that are not fully transparent. */
function compare(source: Uint8Array, decoded: Uint8Array | Uint8ClampedArray) {
  let alphaMismatches = 0;
  let total = 0;
  let count = 0;
  for (let i = 0; i < source.length; i += 4) {
    if (source[i + 3] !== decoded[i + 3]) alphaMismatches += 1;
    if (source[i + 3] === 0) continue;
    for (let c = 0; c < 3; c += 1) total += Math.abs((source[i + c] as number) - (decoded[i + c] as number));
    count += 3;
  }
  return { alphaMismatches, meanRgbDifference: count ? total / count : 0 };
}

/** Box average of RGBA to an integer factor smaller (the reference for scaled decoding). */
function boxDown(rgba: Uint8ClampedArray, width: number, height: number, factor: number): Uint8Array {
  const w = width / factor;
  const h = height / factor;
  const out = new Uint8Array(w * h * 4);
  for (let y = 0; y < h; y += 1) {
    for (let x = 0; x < w; x += 1) {
      for (let c = 0; c < 4; c += 1) {
        let sum = 0;
        for (let dy = 0; dy < factor; dy += 1) {
          for (let dx = 0; dx < factor; dx += 1)
            sum += rgba[((y * factor + dy) * width + x * factor + dx) * 4 + c] as number;
        }
        out[(y * w + x) * 4 + c] = Math.round(sum / factor / factor);
      }
    }
  }
  return out;
}

/** Decodes a file with decodeScaled in a fresh codec; returns the pixels, status and memory growth. */
function decodeScaledFresh(file: Uint8Array, width: number, height: number) {
  const codec = fresh();
  const filePointer = load(codec, file);
  const out = codec.malloc(width * height * 4);
  const before = codec.memoryBytes();
  const status = codec.decodeScaled(filePointer, file.length, out, width, height);
  return { status, pixels: codec.heap(out, width * height * 4).slice(), growth: codec.memoryBytes() - before, codec };
}

/** A 3 × 2 lossless WebP with alpha (cwebp -lossless -exact), pixels listed in `losslessPixels`. */
const losslessFile = Uint8Array.from(
  "5249464644000000574542505650384c370000002f024000102f20102048f11f698320dba633b8bfec09b26d3aa3fbcb9d20db66331fdacd1e708e1de3aa6d2010a08c15cb5c10d1ff580f00".match(
    /../g,
  ) as string[],
  (hex) => Number.parseInt(hex, 16),
);
const losslessPixels = [255, 0, 0, 255, 0, 255, 0, 128, 0, 0, 255, 0, 255, 255, 255, 255, 16, 32, 48, 64, 0, 0, 0, 255];

/** An animated WebP (VP8X + ANIM + two ANMF frames) around a simple file's VP8 chunk. */
function animated(simple: Uint8Array, width: number, height: number): Uint8Array {
  const vp8 = simple.subarray(12);
  const u24 = (v: number) => [v & 255, (v >> 8) & 255, (v >> 16) & 255];
  const u32 = (v: number) => [...u24(v), (v >>> 24) & 255];
  const tag = (t: string) => Array.from(t, (c) => c.charCodeAt(0));
  const frame = [...tag("ANMF"), ...u32(16 + vp8.length), ...u24(0), ...u24(0), ...u24(width - 1), ...u24(height - 1)];
  frame.push(...u24(100), 0);
  const body = [
    ...tag("WEBP"),
    ...tag("VP8X"),
    ...u32(10),
    0x02,
    0,
    0,
    0,
    ...u24(width - 1),
    ...u24(height - 1),
    ...tag("ANIM"),
    ...u32(6),
    0,
    0,
    0,
    0,
    0,
    0,
  ];
  const frames = [new Uint8Array(frame), vp8, new Uint8Array(frame), vp8];
  const size = body.length + frames.reduce((n, f) => n + f.length, 0);
  return concat([new Uint8Array([...tag("RIFF"), ...u32(size), ...body]), ...frames]);
}

describe("webp codec: encode opaque, transparent and translucent images that decode close to their source", () => {
  it("encodes an opaque image as a simple-format VP8 file that decodes close to the source", async () => {
    const source = photoLike(320, 200);
    const file = encodeFile(fresh(), source, 320, 200);
    expect(chunks(file).map((c) => c.tag)).toEqual(["VP8 "]);
    const decoded = await decodeWebp(file);
    expect([decoded.width, decoded.height]).toEqual([320, 200]);
    const { alphaMismatches, meanRgbDifference } = compare(source, decoded.data);
    expect(alphaMismatches).toBe(0);
    expect(meanRgbDifference).toBeLessThan(10); // photoLike carries ±16 of noise per pixel
  });

  it("encodes transparency as VP8X + ALPH + VP8, alpha byte-identical after decoding", async () => {
    const [width, height] = [301, 157];
    const source = cutout(width, height);
    const codec = fresh();
    const pieces = codec.encode(load(codec, source), width, height, { quality: 80 });
    const file = concat(pieces);
    const list = chunks(file);
    expect(list.map((c) => c.tag)).toEqual(["VP8X", "ALPH", "VP8 "]);
    const vp8x = file.subarray(20, 30);
    expect(vp8x[0]).toBe(0x10); // alpha flag only
    const u24 = (at: number) =>
      (vp8x[at] as number) | ((vp8x[at + 1] as number) << 8) | ((vp8x[at + 2] as number) << 16);
    expect([u24(4) + 1, u24(7) + 1]).toEqual([width, height]);
    expect((file[(list[1] as { at: number }).at] as number) & 3).toBe(1); // ALPH compression: lossless
    const decoded = await decodeWebp(file);
    const { alphaMismatches, meanRgbDifference } = compare(source, decoded.data);
    expect(alphaMismatches).toBe(0);
    expect(meanRgbDifference).toBeLessThan(10); // photoLike carries ±16 of noise per pixel
  });

  it("keeps the colour and alpha of translucent pixels when none is fully transparent", async () => {
    // No alpha of 0: nothing is hidden (no filling, no clean-up), only chroma is weighted by alpha.
    const [width, height] = [301, 157];
    const source = withAlpha(width, height, (x, y) => 1 + ((x * 7 + y) % 254));
    const file = encodeFile(fresh(), source, width, height);
    expect(chunks(file).map((c) => c.tag)).toEqual(["VP8X", "ALPH", "VP8 "]);
    const { alphaMismatches, meanRgbDifference } = compare(source, (await decodeWebp(file)).data);
    expect(alphaMismatches).toBe(0);
    expect(meanRgbDifference).toBeLessThan(10); // photoLike carries ±16 of noise per pixel
  });
});

describe("webp codec: encode with every alpha filter, and tiny and thin images", () => {
  it("round-trips every alpha filter and the raw fallback of the ALPH writer", async () => {
    const [width, height] = [97, 300];
    const next = random(3);
    const sources = [
      withAlpha(width, height, (x, y) => ((x >> 3) + (y >> 3)) & 1 && 255), // two levels
      withAlpha(width, height, (x, y) => (x * 3 + y) & 255), // ramps
      withAlpha(width, height, () => next() & 255), // incompressible: stored raw
      withAlpha(width, height, () => 0), // fully transparent
    ];
    for (const source of sources) {
      for (const filter of [alphaFilter.none, alphaFilter.horizontal, alphaFilter.vertical, alphaFilter.gradient]) {
        const { payload } = encodeAlph(source, width, height, { filters: [filter] });
        expect(payload.length).toBeLessThanOrEqual(1 + width * height);
      }
      const file = encodeFile(fresh(), source, width, height);
      const { alphaMismatches } = compare(source, (await decodeWebp(file)).data);
      expect(alphaMismatches).toBe(0);
    }
    // the coded stream (no raw fallback) for each filter, decoded by libwebp
    for (const filter of [alphaFilter.none, alphaFilter.horizontal, alphaFilter.vertical, alphaFilter.gradient]) {
      const source = sources[1] as Uint8Array;
      const { payload } = encodeAlph(source, width, height, { filters: [filter], noRaw: true });
      expect(payload[0]).toBe((filter << 2) | 1);
      const codec = fresh();
      const simple = encodeFile(codec, photoLike(width, height), width, height);
      const pad = new Uint8Array(payload.length & 1);
      const vp8 = simple.subarray(12);
      const header = new Uint8Array(38);
      const view = new DataView(header.buffer);
      header.set(Array.from("RIFF", (c) => c.charCodeAt(0)));
      view.setUint32(4, 30 + payload.length + pad.length + vp8.length, true);
      header.set(
        Array.from("WEBPVP8X", (c) => c.charCodeAt(0)),
        8,
      );
      view.setUint32(16, 10, true);
      header[20] = 0x10;
      view.setUint32(24, width - 1, true);
      view.setUint32(27, height - 1, true);
      header.set(
        Array.from("ALPH", (c) => c.charCodeAt(0)),
        30,
      );
      view.setUint32(34, payload.length, true);
      const file = concat([header, payload, pad, vp8]);
      const { alphaMismatches } = compare(source, (await decodeWebp(file)).data);
      expect(alphaMismatches).toBe(0);
    }
  });

  it("encodes tiny and thin images (1×1, 1×9, 9×1), opaque and transparent", async () => {
    const next = random(11);
    for (const [width, height] of [
      [1, 1],
      [1, 9],
      [9, 1],
    ] as const) {
      for (const transparent of [false, true]) {
        const source = withAlpha(width, height, () => (transparent ? next() & 255 : 255));
        if (transparent) source[3] = 0; // at least one transparent pixel
        const file = encodeFile(fresh(), source, width, height);
        expect(chunks(file).map((c) => c.tag)).toEqual(transparent ? ["VP8X", "ALPH", "VP8 "] : ["VP8 "]);
        const decoded = await decodeWebp(file);
        expect([decoded.width, decoded.height]).toEqual([width, height]);
        const { alphaMismatches, meanRgbDifference } = compare(source, decoded.data);
        expect(alphaMismatches).toBe(0);
        expect(meanRgbDifference).toBeLessThan(20);
      }
    }
  });
});

describe("webp codec: encode refuses arguments out of range and keeps 2560×2560 within encodeMemoryBytes", () => {
  it("refuses arguments out of range with a RangeError", () => {
    const codec = fresh();
    expect(() => codec.encode(codec.malloc(16), 2, 2, { quality: 101 })).toThrow(RangeError);
    expect(() => codec.encode(codec.malloc(16), 2, 2, { quality: 80, method: 7 })).toThrow(RangeError);
    expect(() => codec.encode(codec.malloc(16), 0, 2, { quality: 80 })).toThrow(RangeError);
  });

  it("encodes 2560×2560 of noise with random alpha within encodeMemoryBytes, alpha intact", {
    timeout: 180_000,
  }, async () => {
    const [width, height] = [2560, 2560];
    const codec = fresh();
    const pointer = codec.malloc(width * height * 4);
    expect(pointer).not.toBe(0);
    // Written straight into the codec's heap, as the pipeline does: no second full-size copy in the test.
    const pixels = codec.heap(pointer, width * height * 4);
    const next = random(12345);
    for (let i = 0; i < pixels.length; i += 4) {
      const v = next();
      pixels[i] = v;
      pixels[i + 1] = v >>> 8;
      pixels[i + 2] = v >>> 16;
      pixels[i + 3] = v >>> 24;
    }
    const alpha = new Uint8Array(width * height);
    for (let i = 0; i < alpha.length; i += 1) alpha[i] = pixels[i * 4 + 3] as number;
    const file = concat(codec.encode(pointer, width, height, { quality: 80 }));
    // measured 5.39 B/px above the initial memory (36,372,480 bytes when it was 1 MiB); the bound is 5.6
    expect(codec.memoryBytes()).toBeLessThanOrEqual(encodeMemoryBytes(width, height));
    expect(chunks(file).map((c) => c.tag)).toEqual(["VP8X", "ALPH", "VP8 "]);
    const decoded = await decodeWebp(file);
    expect([decoded.width, decoded.height]).toEqual([width, height]);
    let mismatches = 0;
    for (let i = 0; i < alpha.length; i += 1) if (decoded.data[i * 4 + 3] !== alpha[i]) mismatches += 1;
    expect(mismatches).toBe(0);
  });
});

describe("webp codec: decodeScaled decodes straight to a smaller size, close to a box average, without a full-size buffer", () => {
  it("decodes a WebP straight to a smaller size, close to a box average of the full decode", async () => {
    const [width, height] = [1200, 900];
    const source = withAlpha(width, height, (x, y) => Math.min(255, (x + y) >> 2));
    const file = encodeFile(fresh(), source, width, height);
    const full = await decodeWebp(file);
    const reference = boxDown(full.data, width, height, 4);
    const { status, pixels } = decodeScaledFresh(file, width / 4, height / 4);
    expect(status).toBe(webpStatus.ok);
    let alphaDifference = 0;
    for (let i = 3; i < pixels.length; i += 4)
      alphaDifference += Math.abs((pixels[i] as number) - (reference[i] as number));
    expect(alphaDifference / (pixels.length / 4)).toBeLessThan(1.5);
    expect(
      compare(
        reference.map((v, i) => (i % 4 === 3 ? 255 : v)),
        pixels,
      ).meanRgbDifference,
    ).toBeLessThan(4);
    // at the same size, the usual decode: the same pixels as the independent decoder
    const same = decodeScaledFresh(file, width, height);
    expect(same.status).toBe(webpStatus.ok);
    const { alphaMismatches, meanRgbDifference } = compare(Uint8Array.from(full.data), same.pixels);
    expect(alphaMismatches).toBe(0);
    expect(meanRgbDifference).toBeLessThan(0.5);
  });

  it("decodes our ALPH chunk with libwebp's 8-bit alpha path (no 4-byte-per-pixel plane)", () => {
    const [width, height] = [1024, 1024];
    const file = encodeFile(fresh(), cutout(width, height), width, height);
    const { status, growth } = decodeScaledFresh(file, 256, 256);
    expect(status).toBe(webpStatus.ok);
    // libwebp 1.2.4 holds the alpha plane twice (its frame memory reserves one it never uses) plus the
    // 8-bit decoder's plane: 3 bytes per source pixel. Without the palette the last one is 4 bytes: 6 in all.
    expect(growth).toBeLessThan(3.3 * width * height);
  });

  it("decodes a 12 MP WebP to 2560×1920 without a full-size buffer", { timeout: 180_000 }, () => {
    const [width, height] = [4000, 3000];
    const encoder = fresh();
    const pointer = encoder.malloc(width * height * 4);
    encoder.heap(pointer, width * height * 4).set(photoLike(width, height));
    const file = concat(encoder.encode(pointer, width, height, { quality: 80 }));
    const { status, codec } = decodeScaledFresh(file, 2560, 1920);
    expect(status).toBe(webpStatus.ok);
    // measured 23,461,888 bytes for a 2,989,284-byte file when the initial memory was 1 MiB: file + output +
    // 0.5 MB of decoder rows
    expect(codec.memoryBytes()).toBeLessThan(file.length + 2560 * 1920 * 4 + initialMemoryBytes + 1_048_576);
  });
});

describe("webp codec: lossless decodes exactly, features are read, damaged files are refused", () => {
  it("decodes a lossless WebP exactly, and reads the features of plain, alpha, lossless and animated files", () => {
    const codec = fresh();
    const opaque = encodeFile(codec, photoLike(40, 30), 40, 30);
    const transparent = encodeFile(codec, cutout(40, 30), 40, 30);
    const moving = animated(opaque, 40, 30);
    const features = (file: Uint8Array) => {
      const pointer = load(codec, file);
      const result = codec.features(pointer, file.length);
      codec.free(pointer);
      return result;
    };
    expect(features(opaque)).toEqual({ width: 40, height: 30, hasAlpha: false, hasAnimation: false, format: "lossy" });
    expect(features(transparent)).toEqual({
      width: 40,
      height: 30,
      hasAlpha: true,
      hasAnimation: false,
      format: "lossy",
    });
    expect(features(losslessFile)).toEqual({
      width: 3,
      height: 2,
      hasAlpha: true,
      hasAnimation: false,
      format: "lossless",
    });
    expect(features(moving)).toMatchObject({ width: 40, height: 30, hasAnimation: true });
    expect(features(new TextEncoder().encode("RIFF\0\0\0\0WEBPnot a webp at all"))).toBeNull();
    expect(features(opaque.subarray(0, 20))).toBeNull();

    const lossless = decodeScaledFresh(losslessFile, 3, 2);
    expect(lossless.status).toBe(webpStatus.ok);
    expect(Array.from(lossless.pixels)).toEqual(losslessPixels);
    expect(decodeScaledFresh(moving, 40, 30).status).toBe(webpStatus.unsupportedFeature);
  });

  it("refuses damaged WebP files with a non-zero status and keeps working afterwards", () => {
    const [width, height] = [200, 150];
    const codec = fresh();
    const file = encodeFile(codec, cutout(width, height), width, height);
    const vp8 = chunks(file).find((c) => c.tag === "VP8 ") as { at: number };
    const broken = file.slice();
    broken.set([0, 0, 0], vp8.at + 3); // the VP8 key frame's start code (9d 01 2a)
    const badAlpha = file.slice();
    badAlpha.fill(0xff, 38 + 1, 38 + 12); // the ALPH stream's first bytes
    const out = codec.malloc(width * height * 4);
    for (const damaged of [file.subarray(0, file.length >> 1), file.subarray(0, 40), broken, badAlpha]) {
      const pointer = load(codec, damaged);
      expect(codec.decodeScaled(pointer, damaged.length, out, 100, 75)).not.toBe(webpStatus.ok);
      codec.free(pointer);
    }
    const pointer = load(codec, file);
    expect(codec.decodeScaled(pointer, file.length, out, 100, 75)).toBe(webpStatus.ok);
  });
});

describe("webp codec: baseline JPEG (jpeg.c, libjpeg-turbo)", () => {
  /** Decodes `bytes` (its first `size` of them) at `scale`/8 of `width × height` into a fresh resizer. */
  function decode(codec: WebpCodec, bytes: Uint8Array, size: number, scale: number, width: number, height: number) {
    const source = load(codec, bytes);
    const sw = Math.ceil((width * scale) / 8);
    const sh = Math.ceil((height * scale) / 8);
    const out = codec.malloc(sw * sh * 4);
    const resizer = codec.createResizer(sw, sh, sw, sh, out, { opaque: true, channels: 3 });
    if (!resizer) throw new Error("no resizer");
    try {
      const status = codec.decodeJpeg(source, size, resizer, { scale, ink: 0, inverted: false, maxMemory: 20_000_000 });
      return { status, rows: resizer.rowsPushed, pixels: codec.heap(out, sw * sh * 4).slice() };
    } finally {
      resizer.free();
      codec.free(out);
      codec.free(source);
    }
  }

  it("recovers from libjpeg's fatal errors and warnings inside the instance (longjmp as WebAssembly exceptions), nothing leaked", async () => {
    const codec = fresh();
    const jpeg = await encodeJpeg(photoLike(640, 480), 640, 480, { progressive: false, quality: 90 });
    const good = decode(codec, jpeg, jpeg.length, 4, 640, 480);
    expect(good.status).toBe(jpegStatus.ok);
    expect(good.rows).toBe(240);
    const memory = codec.memoryBytes();
    const garbled = jpeg.slice();
    for (let i = 700; i < garbled.length; i += 97) garbled[i] = 0xff; // markers in the middle of the data
    for (let round = 0; round < 3; round += 1) {
      // Cut short (libjpeg's warning: premature end), a frame header alone (fatal), damaged data.
      expect(decode(codec, jpeg, jpeg.length >> 1, 4, 640, 480).status).toBe(jpegStatus.damaged);
      expect(decode(codec, jpeg, 40, 4, 640, 480).status).toBe(jpegStatus.damaged);
      expect(decode(codec, garbled, garbled.length, 4, 640, 480).status).toBe(jpegStatus.damaged);
      // The same instance decodes the good file again, to the same pixels.
      const again = decode(codec, jpeg, jpeg.length, 4, 640, 480);
      expect(again.status).toBe(jpegStatus.ok);
      expect(again.pixels).toEqual(good.pixels);
    }
    expect(codec.memoryBytes()).toBe(memory);
  });

  it("answers a size mismatch when the resizer's source is not libjpeg's scaled size", async () => {
    const codec = fresh();
    const jpeg = await encodeJpeg(photoLike(64, 48), 64, 48, { progressive: false });
    expect(decode(codec, jpeg, jpeg.length, 4, 66, 48).status).toBe(jpegStatus.sizeMismatch);
    expect(decode(codec, jpeg, jpeg.length, 4, 64, 48).status).toBe(jpegStatus.ok);
  });
});
