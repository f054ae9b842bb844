import { concatBytes } from "../../src/lib/encoding";

/** Real file signatures, small enough to build in a test: what a sniffer sees at the start of each format. */

const ascii = (text: string) => Uint8Array.from(text, (char) => char.charCodeAt(0));

const concat = (...parts: Uint8Array[]) => concatBytes(parts);

function u32(value: number): Uint8Array {
  return Uint8Array.of(value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff);
}

/** An ISO base media file (MP4, MOV, M4V, HEIC, AVIF): a `ftyp` box with the brand, then an `mdat` box. */
export function isoMedia(brand: "isom" | "mp42" | "qt  " | "M4V " | "heic" | "avif", payload = 2048): Uint8Array {
  const ftyp = concat(u32(24), ascii("ftyp"), ascii(brand), u32(0), ascii(brand), ascii("mp41"));
  const mdat = concat(u32(8 + payload), ascii("mdat"), new Uint8Array(payload).fill(7));
  return concat(ftyp, mdat);
}

/** A WebM file: an EBML header whose DocType is `webm`, then filler. */
export function webm(payload = 2048): Uint8Array {
  const docType = concat(Uint8Array.of(0x42, 0x82, 0x84), ascii("webm"));
  const header = concat(Uint8Array.of(0x1a, 0x45, 0xdf, 0xa3, 0x80 | docType.length), docType);
  return concat(header, new Uint8Array(payload).fill(1));
}

/** An Ogg stream whose first packet is a Theora header (Ogg video). */
export function oggTheora(payload = 2048): Uint8Array {
  const page = concat(ascii("OggS"), new Uint8Array(24), Uint8Array.of(0x80), ascii("theora"));
  return concat(page, new Uint8Array(payload));
}

export const pdf = () => concat(ascii("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"));
export const zip = () => concat(Uint8Array.of(0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0, 0, 0), new Uint8Array(64));
export const svg = () =>
  ascii(
    '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>',
  );
export const plainText = () => ascii("just some words, not an image\n");

/** A GIF of `frames` 1×1 images. */
export function gif(frames: number): Uint8Array {
  const header = concat(ascii("GIF89a"), Uint8Array.of(1, 0, 1, 0, 0x80, 0, 0), Uint8Array.of(0, 0, 0, 255, 255, 255));
  const frame = Uint8Array.of(0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0x02, 0x02, 0x44, 0x01, 0x00);
  const control = Uint8Array.of(0x21, 0xf9, 0x04, 0x00, 0x0a, 0x00, 0x00, 0x00);
  const body = Array.from({ length: frames }, () => concat(control, frame));
  return concat(header, ...body, Uint8Array.of(0x3b));
}

let crcTable: Uint32Array | undefined;
function crc32(data: Uint8Array): number {
  crcTable ??= Uint32Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  let crc = 0xffffffff;
  for (const byte of data) crc = (crcTable[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const typed = concat(ascii(type), data);
  return concat(u32(data.length), typed, u32(crc32(typed)));
}

async function deflate(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data]).stream().pipeThrough(new CompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A real RGB PNG of `width`×`height` with a gradient, decodable by any PNG decoder. */
export async function png(width: number, height: number, options: { animated?: boolean } = {}): Promise<Uint8Array> {
  const raw = new Uint8Array((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    for (let x = 0; x < width; x++) {
      raw[row + 1 + x * 3] = (x * 255) / Math.max(1, width - 1);
      raw[row + 2 + x * 3] = (y * 255) / Math.max(1, height - 1);
      raw[row + 3 + x * 3] = 128;
    }
  }
  const ihdr = concat(u32(width), u32(height), Uint8Array.of(8, 2, 0, 0, 0));
  const animation = options.animated ? [chunk("acTL", concat(u32(1), u32(0)))] : [];
  return concat(
    Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a),
    chunk("IHDR", ihdr),
    ...animation,
    chunk("IDAT", await deflate(raw)),
    chunk("IEND", new Uint8Array()),
  );
}

/** A PNG cut short after its header: valid signature and dimensions, no image data. */
export async function truncatedPng(): Promise<Uint8Array> {
  const whole = await png(64, 64);
  return whole.subarray(0, 60);
}
