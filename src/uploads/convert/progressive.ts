import { UnconvertibleImageError } from "./errors";
import type { JpegComponent } from "./jpeg-header";
import { cmykChannel, skipEntropyData } from "./jpeg-header";

/**
 * A progressive JPEG decoder that never holds all coefficients. libjpeg keeps every coefficient of a
 * progressive image (64 × 2 bytes per 8×8 block, ~3 bytes per pixel for 4:2:0), which for a 24 MP photo
 * alone exceeds what a Worker can spare. This decoder decodes at N/8 scale and stores only the N×N
 * low-frequency coefficients of each block (all an N-point IDCT uses), plus one bit per coefficient saying
 * whether it is non-zero, which the successive-approximation refinement scans need to parse the rest.
 * Storage is blocks × (2·N² + 8) bytes, in memory the caller provides.
 */

const zigzag = Int32Array.from([
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
  35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47,
  55, 62, 63,
]);

type Huffman = { lookup: Int32Array; maxCode: Int32Array; valueOffset: Int32Array; values: Uint8Array };
type Scan = {
  components: { index: number; dc: Huffman | undefined; ac: Huffman | undefined }[];
  start: number;
  end: number;
  ss: number;
  se: number;
  ah: number;
  al: number;
  restartInterval: number;
};

/** What the decoder needs from the frame, and the geometry it derives. */
export type ProgressivePlan = {
  width: number;
  height: number;
  components: JpegComponent[];
  /** Decode scale numerator: the output is ceil(width·N/8) × ceil(height·N/8). */
  n: number;
  adobeTransform: number | null;
};

function geometry(plan: ProgressivePlan) {
  const hMax = Math.max(...plan.components.map((c) => c.h));
  const vMax = Math.max(...plan.components.map((c) => c.v));
  const single = plan.components.length === 1;
  const mcusPerLine = Math.ceil(plan.width / (8 * (single ? 1 : hMax)));
  const mcusPerColumn = Math.ceil(plan.height / (8 * (single ? 1 : vMax)));
  const components = plan.components.map((c) => {
    const h = single ? 1 : c.h;
    const v = single ? 1 : c.v;
    return {
      h,
      v,
      tq: c.tq,
      id: c.id,
      blocksPerLine: Math.ceil(Math.ceil((plan.width * h) / (single ? 1 : hMax)) / 8),
      blocksPerColumn: Math.ceil(Math.ceil((plan.height * v) / (single ? 1 : vMax)) / 8),
      paddedPerLine: mcusPerLine * h,
      paddedPerColumn: mcusPerColumn * v,
    };
  });
  return { hMax: single ? 1 : hMax, vMax: single ? 1 : vMax, mcusPerLine, mcusPerColumn, components };
}

/** Bytes of coefficient storage the decoder asks for: blocks × (2·N² + 8). */
export function progressiveStorageBytes(plan: ProgressivePlan): number {
  const { components } = geometry(plan);
  const blocks = components.reduce((sum, c) => sum + c.paddedPerLine * c.paddedPerColumn, 0);
  return blocks * (2 * plan.n * plan.n + 8);
}

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

const damaged = () => new UnconvertibleImageError("The JPEG file is damaged: its image data cannot be decoded.");

/** Reads the tables and scans of the whole file. */
function readScans(bytes: Uint8Array, componentIds: number[]) {
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
    } else if (marker === 0xc4) {
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

/** Bit reader over one scan's entropy-coded bytes; past a marker or the end it feeds zeros, as libjpeg does. */
function bitReader(bytes: Uint8Array, start: number, end: number) {
  let pos = start;
  let buffer = 0;
  let bits = 0;
  let padding = 0;
  const fill = () => {
    while (bits <= 24) {
      let byte = 0;
      if (pos < end) {
        byte = bytes[pos] as number;
        if (byte === 0xff) {
          const next = bytes[pos + 1];
          if (next === 0) pos += 2;
          else byte = 0; // a marker: stop here
          if (next !== 0) padding += 1;
        } else {
          pos += 1;
        }
      } else {
        padding += 1;
      }
      // Corrupt data can ask for far more bits than the scan holds; stop instead of spinning on zeros.
      if (padding > 1024) throw damaged();
      buffer = ((buffer << 8) | byte) >>> 0;
      bits += 8;
    }
  };
  return {
    bits(n: number): number {
      if (n === 0) return 0;
      if (bits < n) fill();
      bits -= n;
      return (buffer >>> bits) & ((1 << n) - 1);
    },
    bit(): number {
      if (bits < 1) fill();
      bits -= 1;
      return (buffer >>> bits) & 1;
    },
    decode(table: Huffman): number {
      if (bits < 16) fill();
      const peek = (buffer >>> (bits - 9)) & 511;
      const hit = table.lookup[peek] as number;
      if (hit >= 0) {
        bits -= hit >> 8;
        return hit & 255;
      }
      let code = 0;
      for (let length = 1; length <= 16; length += 1) {
        code = (code << 1) | ((buffer >>> (bits - length)) & 1);
        if (code <= (table.maxCode[length] as number)) {
          bits -= length;
          return table.values[code + (table.valueOffset[length] as number)] as number;
        }
      }
      throw damaged();
    },
    restart() {
      bits = 0;
      buffer = 0;
      // The marker must follow; skip it (and any fill bytes before it).
      while (pos < end && bytes[pos] === 0xff && bytes[pos + 1] === 0xff) pos += 1;
      const marker = bytes[pos + 1] as number;
      if (bytes[pos] !== 0xff || marker < 0xd0 || marker > 0xd7) throw damaged();
      pos += 2;
      padding = 0;
    },
  };
}

function extend(value: number, size: number): number {
  return value < 1 << (size - 1) ? value - (1 << size) + 1 : value;
}

/** Cosine table of the N-point IDCT taken from an 8-point DCT: sample x of N at the centre of its cell. */
function idctMatrix(n: number): Float64Array {
  const m = new Float64Array(n * n);
  for (let x = 0; x < n; x += 1) {
    for (let u = 0; u < n; u += 1) {
      const c = u === 0 ? Math.SQRT1_2 : 1;
      m[x * n + u] = (c / 2) * Math.cos(((2 * x + 1) * u * Math.PI) / (2 * n));
    }
  }
  return m;
}

/**
 * Decodes a progressive JPEG at N/8 scale and pushes RGBA rows (top to bottom, ceil(width·N/8) wide) to `row`.
 * `storage` must hold `progressiveStorageBytes(plan)` bytes, 4-byte aligned; it is overwritten.
 */
export function decodeProgressive(
  bytes: Uint8Array,
  plan: ProgressivePlan,
  storage: Uint8Array,
  row: (rgba: Uint8Array) => void,
): void {
  const { n } = plan;
  const g = geometry(plan);
  const slots = n * n;
  const slotOf = new Int32Array(64);
  for (let k = 0; k < 64; k += 1) {
    const natural = zigzag[k] as number;
    slotOf[k] = natural >> 3 < n && (natural & 7) < n ? (natural >> 3) * n + (natural & 7) : -1;
  }
  const blockCounts = g.components.map((c) => c.paddedPerLine * c.paddedPerColumn);
  const totalBlocks = blockCounts.reduce((a, b) => a + b, 0);
  if (storage.byteLength < totalBlocks * (2 * slots + 8) || storage.byteOffset % 4 !== 0) {
    throw new RangeError("progressive storage too small or unaligned");
  }
  const nonzero = new Uint32Array(storage.buffer, storage.byteOffset, totalBlocks * 2);
  const coefficients = new Int16Array(storage.buffer, storage.byteOffset + totalBlocks * 8, totalBlocks * slots);
  nonzero.fill(0);
  coefficients.fill(0);
  const firstBlock: number[] = [];
  blockCounts.reduce((offset, count) => {
    firstBlock.push(offset);
    return offset + count;
  }, 0);

  const { scans, quant } = readScans(
    bytes,
    plan.components.map((c) => c.id),
  );
  if (scans.length === 0) throw damaged();

  for (const scan of scans) {
    const reader = bitReader(bytes, scan.start, scan.end);
    const { ss, se, ah, al } = scan;
    if (ss > se || se > 63 || (ss === 0 && se !== 0)) throw damaged();
    const dcScan = ss === 0;
    for (const c of scan.components) if ((dcScan && ah === 0 && !c.dc) || (!dcScan && !c.ac)) throw damaged();
    const predictions = new Int32Array(scan.components.length);
    let eobrun = 0;

    const decodeBlock = (componentSlot: number, block: number) => {
      const base = block * slots;
      const bitBase = block * 2;
      if (dcScan) {
        if (ah === 0) {
          const table = scan.components[componentSlot]?.dc as Huffman;
          const size = reader.decode(table);
          const diff = size === 0 ? 0 : extend(reader.bits(size), size);
          const value = (predictions[componentSlot] as number) + diff;
          predictions[componentSlot] = value;
          coefficients[base] = value * (1 << al);
        } else if (reader.bit()) {
          coefficients[base] = (coefficients[base] as number) | (1 << al);
        }
        return;
      }
      const table = scan.components[0]?.ac as Huffman;
      if (ah === 0) {
        if (eobrun > 0) {
          eobrun -= 1;
          return;
        }
        for (let k = ss; k <= se; ) {
          const rs = reader.decode(table);
          const s = rs & 15;
          const r = rs >> 4;
          if (s === 0) {
            if (r < 15) {
              eobrun = (1 << r) - 1 + reader.bits(r);
              break;
            }
            k += 16;
            continue;
          }
          k += r;
          if (k > 63) throw damaged();
          nonzero[bitBase + (k >> 5)] = (nonzero[bitBase + (k >> 5)] as number) | (1 << (k & 31));
          const slot = slotOf[k] as number;
          if (slot >= 0) coefficients[base + slot] = extend(reader.bits(s), s) * (1 << al);
          else reader.bits(s);
          k += 1;
        }
        return;
      }
      // Successive-approximation refinement (libjpeg's decode_mcu_AC_refine, with history from the bitmap).
      const p1 = 1 << al;
      const isNonzero = (k: number) => ((nonzero[bitBase + (k >> 5)] as number) >>> (k & 31)) & 1;
      const correct = (k: number) => {
        const slot = slotOf[k] as number;
        if (slot < 0) return;
        const value = coefficients[base + slot] as number;
        if ((value & p1) === 0) coefficients[base + slot] = value >= 0 ? value + p1 : value - p1;
      };
      let k = ss;
      if (eobrun === 0) {
        for (; k <= se; k += 1) {
          const rs = reader.decode(table);
          let r = rs >> 4;
          const s = rs & 15;
          let value = 0;
          if (s !== 0) {
            if (s !== 1) throw damaged();
            value = reader.bit() ? p1 : -p1;
          } else if (r !== 15) {
            eobrun = (1 << r) + reader.bits(r);
            break;
          }
          while (k <= se) {
            if (isNonzero(k)) {
              if (reader.bit()) correct(k);
            } else {
              if (r === 0) break;
              r -= 1;
            }
            k += 1;
          }
          if (value !== 0 && k <= se) {
            nonzero[bitBase + (k >> 5)] = (nonzero[bitBase + (k >> 5)] as number) | (1 << (k & 31));
            const slot = slotOf[k] as number;
            if (slot >= 0) coefficients[base + slot] = value;
          }
        }
      }
      if (eobrun > 0) {
        for (; k <= se; k += 1) if (isNonzero(k) && reader.bit()) correct(k);
        eobrun -= 1;
      }
    };

    let units = 0;
    const restartCheck = () => {
      if (scan.restartInterval && units > 0 && units % scan.restartInterval === 0) {
        reader.restart();
        predictions.fill(0);
        eobrun = 0;
      }
    };
    if (scan.components.length === 1) {
      const componentIndex = scan.components[0]?.index as number;
      const c = g.components[componentIndex] as (typeof g.components)[number];
      for (let by = 0; by < c.blocksPerColumn; by += 1) {
        for (let bx = 0; bx < c.blocksPerLine; bx += 1) {
          restartCheck();
          decodeBlock(0, (firstBlock[componentIndex] as number) + by * c.paddedPerLine + bx);
          units += 1;
        }
      }
    } else {
      for (let my = 0; my < g.mcusPerColumn; my += 1) {
        for (let mx = 0; mx < g.mcusPerLine; mx += 1) {
          restartCheck();
          scan.components.forEach((sc, slot) => {
            const c = g.components[sc.index] as (typeof g.components)[number];
            for (let v = 0; v < c.v; v += 1) {
              for (let h = 0; h < c.h; h += 1) {
                const block = (firstBlock[sc.index] as number) + (my * c.v + v) * c.paddedPerLine + mx * c.h + h;
                decodeBlock(slot, block);
              }
            }
          });
          units += 1;
        }
      }
    }
  }

  emitRows(plan, g, firstBlock, coefficients, quant, row);
}

function emitRows(
  plan: ProgressivePlan,
  g: ReturnType<typeof geometry>,
  firstBlock: number[],
  coefficients: Int16Array,
  quant: (Uint16Array | undefined)[],
  row: (rgba: Uint8Array) => void,
): void {
  const { n } = plan;
  const slots = n * n;
  const matrix = idctMatrix(n);
  const outWidth = Math.ceil((plan.width * n) / 8);
  const outHeight = Math.ceil((plan.height * n) / 8);
  const planes = g.components.map((c) => new Uint8Array(c.paddedPerLine * n * c.v * n));
  const planeWidths = g.components.map((c) => c.paddedPerLine * n);
  const tables = g.components.map((c) => {
    const table = quant[c.tq];
    if (!table) throw damaged();
    // Quantisers of the stored N×N corner, in slot order.
    const q = new Float64Array(slots);
    for (let v = 0; v < n; v += 1) for (let u = 0; u < n; u += 1) q[v * n + u] = table[v * 8 + u] as number;
    return q;
  });
  const columnMaps = g.components.map((c) => {
    const map = new Int32Array(outWidth);
    for (let x = 0; x < outWidth; x += 1) map[x] = Math.floor((x * c.h) / g.hMax);
    return map;
  });
  const dequantised = new Float64Array(slots);
  const partial = new Float64Array(slots);
  const rgba = new Uint8Array(outWidth * 4);
  const kind = colourModel(plan);
  const inverted = plan.adobeTransform !== null;
  let emitted = 0;
  for (let my = 0; my < g.mcusPerColumn && emitted < outHeight; my += 1) {
    g.components.forEach((c, ci) => {
      const plane = planes[ci] as Uint8Array;
      const planeWidth = planeWidths[ci] as number;
      const q = tables[ci] as Float64Array;
      for (let v = 0; v < c.v; v += 1) {
        for (let bx = 0; bx < c.paddedPerLine; bx += 1) {
          const base = ((firstBlock[ci] as number) + (my * c.v + v) * c.paddedPerLine + bx) * slots;
          for (let s = 0; s < slots; s += 1) dequantised[s] = (coefficients[base + s] as number) * (q[s] as number);
          // Rows first: partial[vy][x] = Σu F[vy][u]·M[x][u]; then columns.
          for (let vy = 0; vy < n; vy += 1) {
            for (let x = 0; x < n; x += 1) {
              let sum = 0;
              for (let u = 0; u < n; u += 1) sum += (dequantised[vy * n + u] as number) * (matrix[x * n + u] as number);
              partial[vy * n + x] = sum;
            }
          }
          for (let y = 0; y < n; y += 1) {
            const target = (v * n + y) * planeWidth + bx * n;
            for (let x = 0; x < n; x += 1) {
              let sum = 128;
              for (let vy = 0; vy < n; vy += 1) sum += (matrix[y * n + vy] as number) * (partial[vy * n + x] as number);
              plane[target + x] = sum < 0 ? 0 : sum > 255 ? 255 : Math.round(sum);
            }
          }
        }
      }
    });
    const rowsHere = g.vMax * n;
    for (let ry = 0; ry < rowsHere && emitted < outHeight; ry += 1) {
      const sourceRows = g.components.map((c, ci) => Math.floor((ry * c.v) / g.vMax) * (planeWidths[ci] as number));
      for (let x = 0; x < outWidth; x += 1) {
        const sample = (ci: number) =>
          (planes[ci] as Uint8Array)[
            (sourceRows[ci] as number) + ((columnMaps[ci] as Int32Array)[x] as number)
          ] as number;
        let r: number;
        let gg: number;
        let b: number;
        if (kind === "gray") {
          r = gg = b = sample(0);
        } else if (kind === "rgb") {
          r = sample(0);
          gg = sample(1);
          b = sample(2);
        } else {
          const y = sample(0);
          const cb = sample(1) - 128;
          const cr = sample(2) - 128;
          r = y + 1.402 * cr;
          gg = y - 0.344136 * cb - 0.714136 * cr;
          b = y + 1.772 * cb;
          if (kind === "ycck") {
            // YCCK is YCbCr of inverted CMY plus K; Adobe stores all four inverted.
            const k = sample(3);
            r = ((255 - clamp(r)) * k) / 255;
            gg = ((255 - clamp(gg)) * k) / 255;
            b = ((255 - clamp(b)) * k) / 255;
          }
        }
        if (kind === "cmyk") {
          const k = sample(3);
          r = cmykChannel(sample(0), k, inverted);
          gg = cmykChannel(sample(1), k, inverted);
          b = cmykChannel(sample(2), k, inverted);
        }
        const o = x * 4;
        rgba[o] = clamp(r);
        rgba[o + 1] = clamp(gg);
        rgba[o + 2] = clamp(b);
        rgba[o + 3] = 255;
      }
      row(rgba);
      emitted += 1;
    }
  }
}

function clamp(value: number): number {
  return value < 0 ? 0 : value > 255 ? 255 : Math.round(value);
}

function colourModel(plan: ProgressivePlan): "gray" | "rgb" | "ycc" | "cmyk" | "ycck" {
  const count = plan.components.length;
  if (count === 1) return "gray";
  if (count === 3) return plan.adobeTransform === 0 ? "rgb" : "ycc";
  return plan.adobeTransform === 2 ? "ycck" : "cmyk";
}
