import { concat, pngChunk } from "./images";

/**
 * Hostile inputs made by code, byte by byte, so each one's lie is visible here: headers that claim more
 * than the file holds, compressed data that expands past any real image, and files cut or damaged.
 */

const pngSignature = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

function u32be(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

function ihdr(width: number, height: number, bitDepth = 8, colorType = 2, interlace = 0): Uint8Array {
  return pngChunk("IHDR", concat([u32be(width), u32be(height), Uint8Array.of(bitDepth, colorType, 0, 0, interlace)]));
}

/** Deflate bits, least significant first, as RFC 1951 orders them. */
class BitWriter {
  private bytes: number[] = [];
  private current = 0;
  private count = 0;
  /** Writes `length` bits of `value`, low bit first (extra bits and headers). */
  bits(value: number, length: number): void {
    for (let i = 0; i < length; i += 1) this.bit((value >> i) & 1);
  }
  /** Writes a Huffman code, most significant bit first. */
  code(value: number, length: number): void {
    for (let i = length - 1; i >= 0; i -= 1) this.bit((value >> i) & 1);
  }
  finish(): Uint8Array {
    if (this.count > 0) this.bytes.push(this.current);
    return Uint8Array.from(this.bytes);
  }
  private bit(b: number): void {
    this.current |= b << this.count;
    this.count += 1;
    if (this.count === 8) {
      this.bytes.push(this.current);
      this.current = 0;
      this.count = 0;
    }
  }
}

/**
 * A zlib stream that inflates to `size` zero bytes using one fixed-Huffman block of 258-byte matches at
 * distance 1 (13 bits each): about 1/160 of the size it claims, made in milliseconds.
 */
export function zlibOfZeros(size: number): Uint8Array {
  const writer = new BitWriter();
  writer.bits(1, 1); // final block
  writer.bits(1, 2); // fixed Huffman codes
  writer.code(0x30, 8); // literal 0
  const matches = Math.floor((size - 1) / 258);
  for (let i = 0; i < matches; i += 1) {
    writer.code(0b11000101, 8); // length code 285: 258 bytes
    writer.code(0, 5); // distance code 0: distance 1
  }
  const rest = size - 1 - matches * 258;
  for (let i = 0; i < rest; i += 1) writer.code(0x30, 8);
  writer.code(0, 7); // end of block
  const adlerB = size % 65521; // every byte is zero: a stays 1, b grows by 1 per byte
  const adler = ((adlerB << 16) | 1) >>> 0;
  return concat([Uint8Array.of(0x78, 0x01), writer.finish(), u32be(adler)]);
}

/** A 1×1 RGB PNG whose image data inflates to `inflatedBytes` zeros (512 MiB by default): a decompression bomb. */
export function pngInflateBomb(inflatedBytes = 512 * 2 ** 20): Uint8Array {
  return concat([
    pngSignature,
    ihdr(1, 1),
    pngChunk("IDAT", zlibOfZeros(inflatedBytes)),
    pngChunk("IEND", new Uint8Array()),
  ]);
}

/** A PNG whose header claims `width × height` RGB pixels while its data holds `rows` rows. */
export function pngLyingHeader(width: number, height: number, rows = 1): Uint8Array {
  return concat([
    pngSignature,
    ihdr(width, height),
    pngChunk("IDAT", zlibOfZeros((width * 3 + 1) * rows)),
    pngChunk("IEND", new Uint8Array()),
  ]);
}

/**
 * An interlaced (Adam7) 8-bit RGB or RGBA PNG from a pixel function, written with typed arrays so a
 * 12-megapixel file takes seconds, not minutes. Filter 0 on every line.
 */
export async function interlacedPng(
  width: number,
  height: number,
  pixel: (x: number, y: number, out: Uint8Array) => void,
  alpha = false,
): Promise<Uint8Array> {
  const channels = alpha ? 4 : 3;
  const passes = [
    [0, 0, 8, 8],
    [4, 0, 8, 8],
    [0, 4, 4, 8],
    [2, 0, 4, 4],
    [0, 2, 2, 4],
    [1, 0, 2, 2],
    [0, 1, 1, 2],
  ] as const;
  let total = 0;
  for (const [x0, y0, dx, dy] of passes) {
    const pw = Math.ceil((width - x0) / dx);
    const ph = Math.ceil((height - y0) / dy);
    if (pw > 0 && ph > 0) total += ph * (1 + pw * channels);
  }
  const raw = new Uint8Array(total);
  const sample = new Uint8Array(4);
  let at = 0;
  for (const [x0, y0, dx, dy] of passes) {
    const pw = Math.ceil((width - x0) / dx);
    const ph = Math.ceil((height - y0) / dy);
    if (pw <= 0 || ph <= 0) continue;
    for (let j = 0; j < ph; j += 1) {
      raw[at++] = 0;
      for (let i = 0; i < pw; i += 1) {
        pixel(x0 + i * dx, y0 + j * dy, sample);
        for (let c = 0; c < channels; c += 1) raw[at++] = sample[c] as number;
      }
    }
  }
  const compressed = new Uint8Array(
    await new Response(new Blob([raw]).stream().pipeThrough(new CompressionStream("deflate"))).arrayBuffer(),
  );
  return concat([
    pngSignature,
    ihdr(width, height, 8, alpha ? 6 : 2, 1),
    pngChunk("IDAT", compressed),
    pngChunk("IEND", new Uint8Array()),
  ]);
}

/**
 * The 34-byte GIF bomb: a 100×100 screen with a two-colour table, then `frames` image descriptors that each
 * claim 65535×65535 pixels with LZW data holding only a clear code and an end code.
 */
export function gifFrameBomb(frames = 1): Uint8Array {
  const header = concat([
    new TextEncoder().encode("GIF89a"),
    Uint8Array.of(100, 0, 100, 0, 0x80, 0, 0), // screen 100×100, global table of 2 colours
    Uint8Array.of(0, 0, 0, 255, 255, 255),
  ]);
  // LZW minimum code size 2: clear = 4, end = 5, 3-bit codes: 100 101 → 0b00101100 = 0x2c.
  const frame = Uint8Array.of(0x2c, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x00, 0x02, 0x01, 0x2c, 0x00);
  return concat([header, ...Array.from({ length: frames }, () => frame), Uint8Array.of(0x3b)]);
}

/** A baseline JPEG frame header (SOF0) that claims `width × height`, followed by no real image data. */
export function jpegLyingSof(width: number, height: number): Uint8Array {
  const sof = Uint8Array.of(
    0xff,
    0xc0,
    0x00,
    0x11,
    8,
    height >> 8,
    height & 255,
    width >> 8,
    width & 255,
    3,
    1,
    0x22,
    0,
    2,
    0x11,
    1,
    3,
    0x11,
    1,
  );
  const quant = concat([Uint8Array.of(0xff, 0xdb, 0x00, 0x43, 0x00), new Uint8Array(64).fill(1)]);
  const quant1 = concat([Uint8Array.of(0xff, 0xdb, 0x00, 0x43, 0x01), new Uint8Array(64).fill(1)]);
  // One DC table (a single code of length 1 for category 0) and one AC table (end of block only).
  const dht = Uint8Array.of(0xff, 0xc4, 0x00, 0x14, 0x00, 1, ...new Array(15).fill(0), 0);
  const dhtAc = Uint8Array.of(0xff, 0xc4, 0x00, 0x14, 0x10, 1, ...new Array(15).fill(0), 0);
  const sos = Uint8Array.of(0xff, 0xda, 0x00, 0x0c, 3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0);
  return concat([
    Uint8Array.of(0xff, 0xd8),
    quant,
    quant1,
    sof,
    dht,
    dhtAc,
    sos,
    new Uint8Array(16),
    Uint8Array.of(0xff, 0xd9),
  ]);
}

/** A lossless WebP (VP8L) whose header claims `width × height` but holds a few bytes of data. */
export function webpLyingVp8l(width: number, height: number): Uint8Array {
  const bits = (width - 1) | ((height - 1) << 14);
  const body = concat([
    Uint8Array.of(0x2f, bits & 255, (bits >> 8) & 255, (bits >> 16) & 255, ((bits >>> 24) & 0x0f) | 0x10),
    new Uint8Array(11),
  ]);
  const chunk = concat([new TextEncoder().encode("VP8L"), u32le(body.length), body]);
  return concat([new TextEncoder().encode("RIFF"), u32le(4 + chunk.length), new TextEncoder().encode("WEBP"), chunk]);
}

function u32le(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value, true);
  return out;
}

/** A 24-bit BMP whose header claims `width × height` (bottom-up) and which holds `rows` rows. */
export function bmpLyingHeader(width: number, height: number, rows = 1): Uint8Array {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const header = new Uint8Array(54);
  const view = new DataView(header.buffer);
  header.set([0x42, 0x4d]);
  view.setUint32(2, 54 + stride * height, true);
  view.setUint32(10, 54, true);
  view.setUint32(14, 40, true);
  view.setInt32(18, width, true);
  view.setInt32(22, height, true);
  view.setUint16(26, 1, true);
  view.setUint16(28, 24, true);
  return concat([header, new Uint8Array(stride * rows).fill(200)]);
}

/** The first `fraction` of a file, as an interrupted upload leaves it. */
export function truncated(bytes: Uint8Array, fraction = 0.6): Uint8Array {
  return bytes.slice(0, Math.floor(bytes.length * fraction));
}

/**
 * The file with a run of its bytes from `fraction` on overwritten by `pattern`. The default, `0xff 0xd3`
 * repeated, puts restart markers where a JPEG scan has none and is no valid zlib, LZW or VP8 data either.
 */
export function corrupted(bytes: Uint8Array, fraction = 0.5, length = 64, pattern = [0xff, 0xd3]): Uint8Array {
  const copy = bytes.slice();
  const start = Math.floor(copy.length * fraction);
  for (let i = start; i < Math.min(copy.length - 2, start + length); i += 1)
    copy[i] = pattern[(i - start) % pattern.length] as number;
  return copy;
}

/**
 * The bytes as a stream in chunks of `size`, handed over only when the reader asks (as R2 hands a body
 * over); `delivered()` tells how many bytes the conversion pulled.
 */
export function chunked(bytes: Uint8Array, size = 4093) {
  let delivered = 0;
  return {
    size: bytes.length,
    delivered: () => delivered,
    open: async () => {
      let at = 0;
      return new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            if (at >= bytes.length) {
              controller.close();
              return;
            }
            const piece = bytes.slice(at, at + size);
            at += piece.length;
            delivered += piece.length;
            controller.enqueue(piece);
          },
        },
        { highWaterMark: 0 },
      );
    },
  };
}
