import { UnconvertibleImageError } from "../errors";
import { skipEntropyData } from "../jpeg-header";

/** The tables and scans of a progressive JPEG, read from the whole file before any scan is decoded. */

export const zigzag = Int32Array.from([
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
  35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47,
  55, 62, 63,
]);

export type Huffman = { lookup: Int32Array; maxCode: Int32Array; valueOffset: Int32Array; values: Uint8Array };
export type Scan = {
  components: { index: number; dc: Huffman | undefined; ac: Huffman | undefined }[];
  start: number;
  end: number;
  ss: number;
  se: number;
  ah: number;
  al: number;
  restartInterval: number;
};

function buildHuffman(counts: Uint8Array, values: Uint8Array): Huffman {
  const lookup = new Int32Array(512).fill(-1);
  const maxCode = new Int32Array(18).fill(-1);
  const valueOffset = new Int32Array(18);
  let code = 0;
  let k = 0;
  for (let length = 1; length <= 16; length += 1) {
    const count = counts[length - 1] as number;
    valueOffset[length] = k - code;
    for (let i = 0; i < count; i += 1) {
      if (length <= 9) {
        const shift = 9 - length;
        for (let fill = 0; fill < 1 << shift; fill += 1)
          lookup[(code << shift) | fill] = (length << 8) | (values[k] as number);
      }
      code += 1;
      k += 1;
    }
    maxCode[length] = count ? code - 1 : -1;
    code <<= 1;
  }
  maxCode[17] = 0x7fffffff;
  return { lookup, maxCode, valueOffset, values };
}

export const damaged = () => new UnconvertibleImageError("The JPEG file is damaged: its image data cannot be decoded.");

export function readScans(bytes: Uint8Array, componentIds: number[]) {
  const quant: (Uint16Array | undefined)[] = [];
  const dcTables: (Huffman | undefined)[] = [];
  const acTables: (Huffman | undefined)[] = [];
  const scans: Scan[] = [];
  let restartInterval = 0;
  let pos = 2;
  while (pos + 4 <= bytes.length) {
    if (bytes[pos] !== 0xff) {
      pos += 1;
      continue;
    }
    const marker = bytes[pos + 1] as number;
    if (marker === 0xff) {
      pos += 1;
      continue;
    }
    if (marker === 0xd9) break;
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      pos += 2;
      continue;
    }
    const length = ((bytes[pos + 2] as number) << 8) | (bytes[pos + 3] as number);
    const body = bytes.subarray(pos + 4, pos + 2 + length);
    if (marker === 0xdb) {
      readQuantTables(body, quant);
    } else if (marker === 0xc4) {
      readHuffmanTables(body, dcTables, acTables);
    } else if (marker === 0xdd) {
      restartInterval = ((body[0] as number) << 8) | (body[1] as number);
    } else if (marker === 0xda) {
      const count = body[0] as number;
      const components: Scan["components"] = [];
      for (let i = 0; i < count; i += 1) {
        const index = componentIds.indexOf(body[1 + i * 2] as number);
        if (index < 0) throw damaged();
        const tables = body[2 + i * 2] as number;
        components.push({ index, dc: dcTables[tables >> 4], ac: acTables[tables & 15] });
      }
      const tail = 1 + count * 2;
      const start = pos + 2 + length;
      const end = skipEntropyData(bytes, start);
      scans.push({
        components,
        start,
        end,
        ss: body[tail] as number,
        se: body[tail + 1] as number,
        ah: (body[tail + 2] as number) >> 4,
        al: (body[tail + 2] as number) & 15,
        restartInterval,
      });
      pos = end;
      continue;
    }
    pos += 2 + length;
  }
  return { scans, quant };
}

/** DQT: each table in natural order, into its slot. */
function readQuantTables(body: Uint8Array, quant: (Uint16Array | undefined)[]): void {
  let at = 0;
  while (at < body.length) {
    const info = body[at] as number;
    const wide = info >> 4 !== 0;
    const table = new Uint16Array(64);
    for (let k = 0; k < 64; k += 1) {
      table[zigzag[k] as number] = wide
        ? ((body[at + 1 + 2 * k] as number) << 8) | (body[at + 2 + 2 * k] as number)
        : (body[at + 1 + k] as number);
    }
    quant[info & 3] = table;
    at += 1 + (wide ? 128 : 64);
  }
}

/** DHT: each table built for decoding, into its DC or AC slot. */
function readHuffmanTables(
  body: Uint8Array,
  dcTables: (Huffman | undefined)[],
  acTables: (Huffman | undefined)[],
): void {
  let at = 0;
  while (at + 17 <= body.length) {
    const info = body[at] as number;
    const counts = body.subarray(at + 1, at + 17);
    const total = counts.reduce((sum, c) => sum + c, 0);
    const table = buildHuffman(counts, body.slice(at + 17, at + 17 + total));
    if (info >> 4) acTables[info & 3] = table;
    else dcTables[info & 3] = table;
    at += 17 + total;
  }
}

/** 0: DC first, 1: DC refinement, 2: AC first, 3: AC refinement; a scan no JPEG may hold is damage. */
export function scanKind(scan: Scan): number {
  const { ss, se, ah } = scan;
  if (ss > se || se > 63 || (ss === 0 && se !== 0)) throw damaged();
  const dcScan = ss === 0;
  for (const c of scan.components) if ((dcScan && ah === 0 && !c.dc) || (!dcScan && !c.ac)) throw damaged();
  if ((!dcScan && scan.components.length !== 1) || scan.components.length > 4) throw damaged();
  return (dcScan ? 0 : 2) + (ah === 0 ? 0 : 1);
}
