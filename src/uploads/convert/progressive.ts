import { UnconvertibleImageError } from "./errors";
import type { JpegComponent } from "./jpeg-header";
import { cmykChannel, skipEntropyData } from "./jpeg-header";
import progressiveWasm from "./progressive.wasm";

/**
 * A progressive JPEG decoder that never holds all coefficients. libjpeg keeps every coefficient of a
 * progressive image (64 × 2 bytes per 8×8 block, ~3 bytes per pixel for 4:2:0), which for a 24 MP photo
 * alone exceeds what a Worker can spare. This decoder decodes at N/8 scale and stores only the N×N
 * low-frequency coefficients of each block (all an N-point IDCT uses), plus one bit per coefficient not stored
 * saying whether it is non-zero (a stored one's value says it), which the successive-approximation refinement
 * scans need to parse the rest. The chroma of 4:4:4 files is kept at ceil(N/2) (`componentScale`). Storage is
 * blocks × 2·(N_c² + ceil((64 - N_c²)/16)) bytes plus a small scratch (tables, one MCU row of samples, one
 * RGBA row), in memory the caller provides.
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
  /**
   * Decode scale numerator: the output is ceil(width·N/8) × ceil(height·N/8). Chroma sampled as densely as
   * the densest component (4:4:4) is decoded at ceil(N/2) instead (see `geometry`).
   */
  n: number;
  adobeTransform: number | null;
  /**
   * CMYK and YCCK rows leave as their four ink bytes, as stored (YCCK's colour turned back into CMY), the
   * way libjpeg delivers CMYK, for an ICC transform to turn into RGB (colour.ts); otherwise as RGBA by formula.
   */
  inkRows?: boolean;
};

/**
 * Per-component precision: the chroma of a YCbCr (or YCCK) file sampled as densely as the densest component
 * (4:4:4) is decoded at ceil(N/2) — (N/2)² coefficients a block — and treated as subsampled by about 2 when
 * converting colour, which is the chroma resolution a 4:2:0 file gives (and what libjpeg's fancy upsampling
 * of 4:2:0 reconstructs). It halves the chroma's coefficient store: a 24 MP 4:4:4 photo at N = 4 needs
 * ~27 MB instead of ~45 MB. Luma, K, RGB and already subsampled chroma keep N.
 */
function componentScale(plan: ProgressivePlan, index: number, hMax: number, vMax: number): number {
  const kind = colourModel(plan);
  const c = plan.components[index] as JpegComponent;
  const chroma = (kind === "ycc" || kind === "ycck") && (index === 1 || index === 2);
  return chroma && c.h === hMax && c.v === vMax ? Math.ceil(plan.n / 2) : plan.n;
}

function geometry(plan: ProgressivePlan) {
  const hMax = Math.max(...plan.components.map((c) => c.h));
  const vMax = Math.max(...plan.components.map((c) => c.v));
  const single = plan.components.length === 1;
  const mcusPerLine = Math.ceil(plan.width / (8 * (single ? 1 : hMax)));
  const mcusPerColumn = Math.ceil(plan.height / (8 * (single ? 1 : vMax)));
  const components = plan.components.map((c, index) => {
    const h = single ? 1 : c.h;
    const v = single ? 1 : c.v;
    const n = componentScale(plan, index, hMax, vMax);
    return {
      h,
      v,
      /** This component's decode scale numerator (N, or ceil(N/2) for 4:4:4 chroma) and its N_c² slots. */
      n,
      slots: n * n,
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

/**
 * Bytes of the coefficient store: each component's blocks × (2·N_c² + 2·ceil((64 - N_c²)/16)), coefficients and
 * the non-zero history of the coefficients not stored.
 */
function storeBytes(g: ReturnType<typeof geometry>): number {
  return g.components.reduce(
    (sum, c) => sum + c.paddedPerLine * c.paddedPerColumn * 2 * (c.slots + historyWords(c.n)),
    0,
  );
}

/**
 * Bytes of storage the decoder asks for: each component's blocks × 2·(N_c² + ceil((64 - N_c²)/16)) of
 * coefficients and non-zero history (N_c = ceil(N/2) for 4:4:4 chroma, else N), plus the scratch of the WebAssembly path (tables, one MCU
 * row of samples, one RGBA row: ~16 kB + ~N²·2·width·vMax/8).
 */
export function progressiveStorageBytes(plan: ProgressivePlan): number {
  const g = geometry(plan);
  return storeBytes(g) + 16 + scratchLayout(plan, g).size;
}

const huffmanBytes = 512 * 4 + 18 * 4 + 18 * 4 + 256;
/** Scan descriptor: 16 words for the scan, then `componentWords` per scan component (progressive.c's D_ and C_). */
const componentWords = 12;
const descriptorWords = 16 + 4 * componentWords;

/** Offsets (from a 16-byte aligned start) of the WebAssembly path's scratch buffers. */
function scratchLayout(plan: ProgressivePlan, g: ReturnType<typeof geometry>) {
  const { n } = plan;
  const outWidth = Math.ceil((plan.width * n) / 8);
  const count = g.components.length;
  let size = 0;
  const take = (bytes: number) => {
    const at = size;
    size += Math.ceil(bytes / 16) * 16;
    return at;
  };
  const descriptor = take(descriptorWords * 4);
  const slotOf = g.components.map(() => take(128 * 4));
  const tables = take(5 * huffmanBytes);
  // Each component's IDCT matrix, then its transpose (the core's row pass runs along its rows).
  const matrix = g.components.map(() => take(128 * 8));
  const quant = g.components.map(() => take(64 * 8));
  const work = take(136 * 8);
  const rowEnds = take(8 * 4);
  const columnMaps = g.components.map(() => take(outWidth * 4));
  const planes = g.components.map((c) => take(c.paddedPerLine * c.n * c.v * c.n));
  const rgba = take(outWidth * 4);
  return { size, descriptor, slotOf, tables, matrix, quant, work, rowEnds, columnMaps, planes, rgba, outWidth, count };
}

type Core = {
  decode_scan(descriptor: number): number;
  idct_blocks(
    coefficients: number,
    count: number,
    q: number,
    matrix: number,
    n: number,
    plane: number,
    target: number,
    stride: number,
    work: number,
    rowEnds: number,
  ): void;
  ycc_row(p0: number, p1: number, p2: number, m0: number, m1: number, m2: number, rgba: number, width: number): void;
};

/** One instance of the WebAssembly core per memory it works in (the conversion arena's). */
const cores = new WeakMap<WebAssembly.Memory, Core>();

function coreFor(memory: WebAssembly.Memory): Core {
  let core = cores.get(memory);
  if (!core) {
    core = new WebAssembly.Instance(progressiveWasm, { env: { memory } }).exports as unknown as Core;
    cores.set(memory, core);
  }
  return core;
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

/**
 * Bit reader over one scan's entropy-coded bytes; past a marker or the end it feeds zeros, as libjpeg does.
 * A class with int32 fields and small methods, so V8 keeps it monomorphic and inlines the hot paths.
 */
class BitReader {
  private pos: number;
  private acc = 0;
  private count = 0;
  private padding = 0;
  /** End-of-band run left over from the previous block (AC scans). */
  eobrun = 0;

  constructor(
    private readonly bytes: Uint8Array,
    start: number,
    private readonly end: number,
  ) {
    this.pos = start;
  }

  private fill(): void {
    const bytes = this.bytes;
    let pos = this.pos;
    let acc = this.acc;
    let count = this.count;
    while (count <= 24) {
      let byte = 0;
      if (pos < this.end) {
        byte = bytes[pos] as number;
        if (byte !== 0xff) {
          pos += 1;
        } else if (bytes[pos + 1] === 0) {
          pos += 2;
        } else {
          byte = 0; // a marker: stop here and feed zeros
          this.padding += 1;
        }
      } else {
        this.padding += 1;
      }
      acc = (acc << 8) | byte;
      count += 8;
    }
    this.pos = pos;
    this.acc = acc;
    this.count = count;
    // Corrupt data can ask for far more bits than the scan holds; stop instead of spinning on zeros.
    if (this.padding > 1024) throw damaged();
  }

  bits(n: number): number {
    if (this.count < n) this.fill();
    this.count -= n;
    return (this.acc >>> this.count) & ((1 << n) - 1);
  }

  bit(): number {
    if (this.count < 1) this.fill();
    this.count -= 1;
    return (this.acc >>> this.count) & 1;
  }

  decode(table: Huffman): number {
    if (this.count < 16) this.fill();
    const hit = table.lookup[(this.acc >>> (this.count - 9)) & 511] as number;
    if (hit >= 0) {
      this.count -= hit >> 8;
      return hit & 255;
    }
    return this.decodeLong(table);
  }

  private decodeLong(table: Huffman): number {
    let code = 0;
    for (let length = 1; length <= 16; length += 1) {
      code = (code << 1) | ((this.acc >>> (this.count - length)) & 1);
      if (code <= (table.maxCode[length] as number)) {
        this.count -= length;
        return table.values[code + (table.valueOffset[length] as number)] as number;
      }
    }
    throw damaged();
  }

  restart(): void {
    const bytes = this.bytes;
    this.count = 0;
    this.acc = 0;
    this.eobrun = 0;
    // The marker must follow; skip it (and any fill bytes before it).
    let pos = this.pos;
    while (pos < this.end && bytes[pos] === 0xff && bytes[pos + 1] === 0xff) pos += 1;
    const marker = bytes[pos + 1] as number;
    if (bytes[pos] !== 0xff || marker < 0xd0 || marker > 0xd7) throw damaged();
    this.pos = pos + 2;
    this.padding = 0;
  }
}

function extend(value: number, size: number): number {
  return value < 1 << (size - 1) ? value - (1 << size) + 1 : value;
}

/** Where one scan's decoding writes: the store, its geometry and the scan's parameters. */
type Store = {
  coefficients: Int16Array;
  /**
   * Non-zero history of the coefficients not stored, `words` 16-bit words a block (a stored coefficient's
   * history is its value being non-zero): bit b of a block's words for the b-th unstored zigzag index.
   */
  nonzero: Uint16Array;
  /** Slot of zigzag index k in a block's N×N store, or -1 - b when it is not stored (b: its history bit). */
  slotOf: Int32Array;
  slots: number;
  words: number;
};

/** 16-bit history words a block at N: one bit per coefficient not stored (64 - N²). */
function historyWords(n: number): number {
  return Math.ceil((64 - n * n) / 16);
}

/** DC first scan: difference-coded DC, shifted left by Al. */
function dcFirst(
  r: BitReader,
  store: Store,
  block: number,
  table: Huffman,
  predictions: Int32Array,
  c: number,
  al: number,
): void {
  const size = r.decode(table);
  const diff = size === 0 ? 0 : extend(r.bits(size), size);
  const value = (predictions[c] as number) + diff;
  predictions[c] = value;
  store.coefficients[block * store.slots] = value * (1 << al);
}

/** AC first scan (spectral selection Ss..Se, point transform Al). */
function acFirst(r: BitReader, store: Store, block: number, table: Huffman, ss: number, se: number, al: number): void {
  if (r.eobrun > 0) {
    r.eobrun -= 1;
    return;
  }
  const { coefficients, nonzero, slotOf } = store;
  const base = block * store.slots;
  const bitBase = block * store.words;
  for (let k = ss; k <= se; ) {
    const rs = r.decode(table);
    const s = rs & 15;
    const run = rs >> 4;
    if (s === 0) {
      if (run < 15) {
        r.eobrun = (1 << run) - 1 + r.bits(run);
        break;
      }
      k += 16;
      continue;
    }
    k += run;
    if (k > 63) throw damaged();
    const value = r.bits(s);
    const slot = slotOf[k] as number;
    if (slot >= 0) {
      coefficients[base + slot] = extend(value, s) * (1 << al);
    } else {
      const b = -1 - slot;
      nonzero[bitBase + (b >> 4)] = (nonzero[bitBase + (b >> 4)] as number) | (1 << (b & 15));
    }
    k += 1;
  }
}

/**
 * Whether coefficient k of a block has non-zero history: its stored value is non-zero, or (not stored) its bit.
 */
function hasHistory(store: Store, base: number, bitBase: number, k: number): boolean {
  const slot = store.slotOf[k] as number;
  if (slot >= 0) return store.coefficients[base + slot] !== 0;
  const b = -1 - slot;
  return (((store.nonzero[bitBase + (b >> 4)] as number) >>> (b & 15)) & 1) === 1;
}

/** AC successive-approximation refinement (libjpeg's decode_mcu_AC_refine, with history as `hasHistory`). */
function acRefine(r: BitReader, store: Store, block: number, table: Huffman, ss: number, se: number, al: number): void {
  const { coefficients, nonzero, slotOf } = store;
  const base = block * store.slots;
  const bitBase = block * store.words;
  const p1 = 1 << al;
  let k = ss;
  if (r.eobrun === 0) {
    for (; k <= se; k += 1) {
      const rs = r.decode(table);
      let run = rs >> 4;
      const s = rs & 15;
      let value = 0;
      if (s !== 0) {
        if (s !== 1) throw damaged();
        value = r.bit() ? p1 : -p1;
      } else if (run !== 15) {
        r.eobrun = (1 << run) + r.bits(run);
        break;
      }
      while (k <= se) {
        if (hasHistory(store, base, bitBase, k)) {
          if (r.bit()) {
            const slot = slotOf[k] as number;
            if (slot >= 0) {
              const old = coefficients[base + slot] as number;
              if ((old & p1) === 0) coefficients[base + slot] = old >= 0 ? old + p1 : old - p1;
            }
          }
        } else {
          if (run === 0) break;
          run -= 1;
        }
        k += 1;
      }
      if (value !== 0 && k <= se) {
        const slot = slotOf[k] as number;
        if (slot >= 0) {
          coefficients[base + slot] = value;
        } else {
          const b = -1 - slot;
          nonzero[bitBase + (b >> 4)] = (nonzero[bitBase + (b >> 4)] as number) | (1 << (b & 15));
        }
      }
    }
  }
  if (r.eobrun > 0) {
    for (; k <= se; k += 1) {
      if (hasHistory(store, base, bitBase, k) && r.bit()) {
        const slot = slotOf[k] as number;
        if (slot >= 0) {
          const old = coefficients[base + slot] as number;
          if ((old & p1) === 0) coefficients[base + slot] = old >= 0 ? old + p1 : old - p1;
        }
      }
    }
    r.eobrun -= 1;
  }
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
 * `storage` must hold `progressiveStorageBytes(plan)` bytes, 4-byte aligned; it is overwritten. When `memory`
 * is the WebAssembly memory holding both `bytes` and `storage` (the conversion arena), the entropy decoding,
 * IDCT and colour conversion run in the WebAssembly core inside that memory (progressive.wasm, built from
 * wasm/progressive/progressive.c by wasm/progressive/build.sh; 3–4× faster); otherwise in TypeScript. Both
 * give the same pixels (the tests check it).
 */
export function decodeProgressive(
  bytes: Uint8Array,
  plan: ProgressivePlan,
  storage: Uint8Array,
  row: (rgba: Uint8Array) => void,
  memory?: WebAssembly.Memory,
): void {
  const g = geometry(plan);
  const blockCounts = g.components.map((c) => c.paddedPerLine * c.paddedPerColumn);
  const totalWords = g.components.reduce((sum, c, ci) => sum + (blockCounts[ci] as number) * historyWords(c.n), 0);
  const totalCoefficients = g.components.reduce((sum, c, ci) => sum + (blockCounts[ci] as number) * c.slots, 0);
  if (storage.byteLength < storeBytes(g) || storage.byteOffset % 4 !== 0) {
    throw new RangeError("progressive storage too small or unaligned");
  }
  // All non-zero history words, then each component's coefficients (N_c² a block) in turn.
  const nonzero = new Uint16Array(storage.buffer, storage.byteOffset, totalWords);
  const coefficients = new Int16Array(storage.buffer, storage.byteOffset + totalWords * 2, totalCoefficients);
  nonzero.fill(0);
  coefficients.fill(0);
  // One store per component, its block indices local to it.
  let firstWord = 0;
  let firstCoefficient = 0;
  const stores: Store[] = g.components.map((c, ci) => {
    const blocks = blockCounts[ci] as number;
    const words = historyWords(c.n);
    // Slots of the stored zigzag indices, then (for the WebAssembly path) the stored indices in ascending order.
    const slotOf = new Int32Array(128);
    let stored = 0;
    for (let k = 0; k < 64; k += 1) {
      const natural = zigzag[k] as number;
      if (natural >> 3 < c.n && (natural & 7) < c.n) {
        slotOf[k] = (natural >> 3) * c.n + (natural & 7);
        slotOf[64 + stored] = k;
        stored += 1;
      } else {
        slotOf[k] = -1 - (k - stored);
      }
    }
    const store = {
      coefficients: coefficients.subarray(firstCoefficient, firstCoefficient + blocks * c.slots),
      nonzero: nonzero.subarray(firstWord, firstWord + blocks * words),
      slotOf,
      slots: c.slots,
      words,
    };
    firstWord += blocks * words;
    firstCoefficient += blocks * c.slots;
    return store;
  });

  const { scans, quant } = readScans(
    bytes,
    plan.components.map((c) => c.id),
  );
  if (scans.length === 0) throw damaged();
  if (memory && bytes.buffer === memory.buffer && storage.buffer === memory.buffer) {
    const scratch = Math.ceil((storage.byteOffset + storeBytes(g)) / 16) * 16;
    // The core writes only inside `storage`: refuse one without room for the scratch after the coefficients.
    if (scratch + scratchLayout(plan, g).size > storage.byteOffset + storage.byteLength) {
      throw new RangeError("progressive storage too small for the WebAssembly path");
    }
    decodeWithCore(coreFor(memory), memory, bytes, plan, g, stores, scans, quant, scratch, row);
    return;
  }

  for (const scan of scans) {
    const { ss, se, ah, al } = scan;
    if (ss > se || se > 63 || (ss === 0 && se !== 0)) throw damaged();
    const dcScan = ss === 0;
    for (const c of scan.components) if ((dcScan && ah === 0 && !c.dc) || (!dcScan && !c.ac)) throw damaged();
    // 0: DC first, 1: DC refinement, 2: AC first, 3: AC refinement.
    const kind = (dcScan ? 0 : 2) + (ah === 0 ? 0 : 1);
    if (!dcScan && scan.components.length !== 1) throw damaged();
    const reader = new BitReader(bytes, scan.start, scan.end);
    const predictions = new Int32Array(scan.components.length);
    const interval = scan.restartInterval;
    let untilRestart = interval;
    const restartCheck = () => {
      if (interval === 0) return;
      if (untilRestart === 0) {
        reader.restart();
        predictions.fill(0);
        untilRestart = interval;
      }
      untilRestart -= 1;
    };
    const scanStores = scan.components.map((sc) => stores[sc.index] as Store);
    const decodeBlock = (slot: number, block: number) => {
      const store = scanStores[slot] as Store;
      switch (kind) {
        case 0:
          dcFirst(reader, store, block, scan.components[slot]?.dc as Huffman, predictions, slot, al);
          break;
        case 1: {
          const at = block * store.slots;
          if (reader.bit()) store.coefficients[at] = (store.coefficients[at] as number) | (1 << al);
          break;
        }
        case 2:
          acFirst(reader, store, block, scan.components[0]?.ac as Huffman, ss, se, al);
          break;
        default:
          acRefine(reader, store, block, scan.components[0]?.ac as Huffman, ss, se, al);
      }
    };
    if (scan.components.length === 1) {
      const componentIndex = scan.components[0]?.index as number;
      const c = g.components[componentIndex] as (typeof g.components)[number];
      const store = scanStores[0] as Store;
      const table = (kind >= 2 ? scan.components[0]?.ac : scan.components[0]?.dc) as Huffman;
      for (let by = 0; by < c.blocksPerColumn; by += 1) {
        const rowStart = by * c.paddedPerLine;
        if (interval === 0 && kind === 2) {
          for (let bx = 0; bx < c.blocksPerLine; bx += 1) acFirst(reader, store, rowStart + bx, table, ss, se, al);
        } else if (interval === 0 && kind === 3) {
          for (let bx = 0; bx < c.blocksPerLine; bx += 1) acRefine(reader, store, rowStart + bx, table, ss, se, al);
        } else {
          for (let bx = 0; bx < c.blocksPerLine; bx += 1) {
            restartCheck();
            decodeBlock(0, rowStart + bx);
          }
        }
      }
    } else {
      const members = scan.components.map((sc) => {
        const c = g.components[sc.index] as (typeof g.components)[number];
        return { h: c.h, v: c.v, perLine: c.paddedPerLine };
      });
      for (let my = 0; my < g.mcusPerColumn; my += 1) {
        for (let mx = 0; mx < g.mcusPerLine; mx += 1) {
          restartCheck();
          for (let slot = 0; slot < members.length; slot += 1) {
            const m = members[slot] as (typeof members)[number];
            for (let v = 0; v < m.v; v += 1) {
              const rowStart = (my * m.v + v) * m.perLine + mx * m.h;
              for (let h = 0; h < m.h; h += 1) decodeBlock(slot, rowStart + h);
            }
          }
        }
      }
    }
  }

  emitRows(plan, g, stores, quant, row);
}

/**
 * Where component c's sample for output column x lies in its plane row: floor(x · (h·N_c) / (hMax·N)). For
 * 4:2:0 chroma that is x/2, for 4:4:4 chroma decoded at N/2 also x/2: the same repetition of samples.
 */
function fillColumnMap(map: Int32Array, c: ReturnType<typeof geometry>["components"][number], hMax: number, n: number) {
  for (let x = 0; x < map.length; x += 1) map[x] = Math.floor((x * c.h * c.n) / (hMax * n));
}

/** Offset in component c's plane of the row feeding output row `ry` of an MCU row (vMax·N rows). */
function sourceRow(c: ReturnType<typeof geometry>["components"][number], vMax: number, n: number, ry: number) {
  return Math.floor((ry * c.v * c.n) / (vMax * n)) * c.paddedPerLine * c.n;
}

/** Quantisers of a component's stored N_c×N_c corner, in slot order. */
function cornerQuantisers(table: Uint16Array | undefined, n: number, q: Float64Array): void {
  if (!table) throw damaged();
  for (let v = 0; v < n; v += 1) for (let u = 0; u < n; u += 1) q[v * n + u] = table[v * 8 + u] as number;
}

/** The WebAssembly path: the same steps as the TypeScript one, in the arena's memory. */
function decodeWithCore(
  core: Core,
  memory: WebAssembly.Memory,
  bytes: Uint8Array,
  plan: ProgressivePlan,
  g: ReturnType<typeof geometry>,
  stores: Store[],
  scans: Scan[],
  quant: (Uint16Array | undefined)[],
  scratch: number,
  row: (rgba: Uint8Array) => void,
): void {
  const { n } = plan;
  const layout = scratchLayout(plan, g);
  const buffer = memory.buffer;
  const at = (offset: number) => scratch + offset;
  const descriptor = new Int32Array(buffer, at(layout.descriptor), descriptorWords);
  stores.forEach((store, ci) => {
    new Int32Array(buffer, at(layout.slotOf[ci] as number), 128).set(store.slotOf);
  });
  const loaded: (Huffman | undefined)[] = [];
  const load = (slot: number, table: Huffman | undefined): number => {
    if (!table) return 0;
    const pointer = at(layout.tables) + slot * huffmanBytes;
    if (loaded[slot] !== table) {
      new Int32Array(buffer, pointer, 512).set(table.lookup);
      new Int32Array(buffer, pointer + 2048, 18).set(table.maxCode);
      new Int32Array(buffer, pointer + 2048 + 72, 18).set(table.valueOffset);
      const values = new Uint8Array(buffer, pointer + 2048 + 144, 256);
      values.fill(0);
      values.set(table.values.subarray(0, 256));
      loaded[slot] = table;
    }
    return pointer;
  };
  for (const scan of scans) {
    const { ss, se, ah, al } = scan;
    if (ss > se || se > 63 || (ss === 0 && se !== 0)) throw damaged();
    const dcScan = ss === 0;
    for (const c of scan.components) if ((dcScan && ah === 0 && !c.dc) || (!dcScan && !c.ac)) throw damaged();
    if ((!dcScan && scan.components.length !== 1) || scan.components.length > 4) throw damaged();
    descriptor.fill(0);
    descriptor.set([
      (dcScan ? 0 : 2) + (ah === 0 ? 0 : 1),
      ss,
      se,
      al,
      scan.start,
      scan.end,
      scan.restartInterval,
      scan.components.length,
      g.mcusPerLine,
      g.mcusPerColumn,
      bytes.byteOffset,
    ]);
    scan.components.forEach((sc, i) => {
      const c = g.components[sc.index] as (typeof g.components)[number];
      const store = stores[sc.index] as Store;
      descriptor.set(
        [
          c.h,
          c.v,
          c.paddedPerLine,
          c.blocksPerLine,
          c.blocksPerColumn,
          dcScan && ah === 0 ? load(i, sc.dc) : 0,
          dcScan ? 0 : load(4, sc.ac),
          store.coefficients.byteOffset,
          store.nonzero.byteOffset,
          at(layout.slotOf[sc.index] as number),
          store.slots,
          store.words,
        ],
        16 + i * componentWords,
      );
    });
    if (core.decode_scan(descriptor.byteOffset) !== 0) throw damaged();
  }

  const count = g.components.length;
  const outWidth = layout.outWidth;
  g.components.forEach((c, ci) => {
    const basis = idctMatrix(c.n);
    new Float64Array(buffer, at(layout.matrix[ci] as number), c.slots).set(basis);
    const transposed = new Float64Array(buffer, at(layout.matrix[ci] as number) + 64 * 8, c.slots);
    for (let x = 0; x < c.n; x += 1)
      for (let u = 0; u < c.n; u += 1) transposed[u * c.n + x] = basis[x * c.n + u] as number;
    cornerQuantisers(quant[c.tq], c.n, new Float64Array(buffer, at(layout.quant[ci] as number), c.slots));
    fillColumnMap(new Int32Array(buffer, at(layout.columnMaps[ci] as number), outWidth), c, g.hMax, n);
  });
  const outHeight = Math.ceil((plan.height * n) / 8);
  const planeWidths = g.components.map((c) => c.paddedPerLine * c.n);
  const planePointers = g.components.map((_, ci) => at(layout.planes[ci] as number));
  const rgbaPointer = at(layout.rgba);
  const rgba = new Uint8Array(buffer, rgbaPointer, outWidth * 4);
  const kind = colourModel(plan);
  const inverted = plan.adobeTransform !== null;
  const planes = g.components.map(
    (c, ci) => new Uint8Array(buffer, planePointers[ci] as number, c.paddedPerLine * c.n * c.v * c.n),
  );
  const columnMaps = g.components.map((_, ci) => new Int32Array(buffer, at(layout.columnMaps[ci] as number), outWidth));
  const sourceRows = new Int32Array(count);
  let emitted = 0;
  for (let my = 0; my < g.mcusPerColumn && emitted < outHeight; my += 1) {
    for (let ci = 0; ci < count; ci += 1) {
      const c = g.components[ci] as (typeof g.components)[number];
      const planeWidth = planeWidths[ci] as number;
      const store = stores[ci] as Store;
      for (let v = 0; v < c.v; v += 1) {
        const first = (my * c.v + v) * c.paddedPerLine;
        core.idct_blocks(
          store.coefficients.byteOffset + first * c.slots * 2,
          c.paddedPerLine,
          at(layout.quant[ci] as number),
          at(layout.matrix[ci] as number),
          c.n,
          planePointers[ci] as number,
          v * c.n * planeWidth,
          planeWidth,
          at(layout.work),
          at(layout.rowEnds),
        );
      }
    }
    const rowsHere = g.vMax * n;
    for (let ry = 0; ry < rowsHere && emitted < outHeight; ry += 1) {
      for (let ci = 0; ci < count; ci += 1)
        sourceRows[ci] = sourceRow(g.components[ci] as (typeof g.components)[number], g.vMax, n, ry);
      if (kind === "ycc") {
        core.ycc_row(
          (planePointers[0] as number) + (sourceRows[0] as number),
          (planePointers[1] as number) + (sourceRows[1] as number),
          (planePointers[2] as number) + (sourceRows[2] as number),
          at(layout.columnMaps[0] as number),
          at(layout.columnMaps[1] as number),
          at(layout.columnMaps[2] as number),
          rgbaPointer,
          outWidth,
        );
      } else {
        otherRow(kind, inverted, plan.inkRows === true, planes, sourceRows, columnMaps, rgba, outWidth);
      }
      row(rgba);
      emitted += 1;
    }
  }
}

function emitRows(
  plan: ProgressivePlan,
  g: ReturnType<typeof geometry>,
  stores: Store[],
  quant: (Uint16Array | undefined)[],
  row: (rgba: Uint8Array) => void,
): void {
  const { n } = plan;
  const outWidth = Math.ceil((plan.width * n) / 8);
  const outHeight = Math.ceil((plan.height * n) / 8);
  const matrices = g.components.map((c) => idctMatrix(c.n));
  const planes = g.components.map((c) => new Uint8Array(c.paddedPerLine * c.n * c.v * c.n));
  const planeWidths = g.components.map((c) => c.paddedPerLine * c.n);
  const tables = g.components.map((c) => {
    const q = new Float64Array(c.slots);
    cornerQuantisers(quant[c.tq], c.n, q);
    return q;
  });
  const columnMaps = g.components.map((c) => {
    const map = new Int32Array(outWidth);
    fillColumnMap(map, c, g.hMax, n);
    return map;
  });
  const work = new Float64Array(2 * 64);
  const rowEnds = new Int32Array(8);
  const rgba = new Uint8Array(outWidth * 4);
  const kind = colourModel(plan);
  const inverted = plan.adobeTransform !== null;
  const count = g.components.length;
  const sourceRows = new Int32Array(count);
  let emitted = 0;
  for (let my = 0; my < g.mcusPerColumn && emitted < outHeight; my += 1) {
    for (let ci = 0; ci < count; ci += 1) {
      const c = g.components[ci] as (typeof g.components)[number];
      const plane = planes[ci] as Uint8Array;
      const planeWidth = planeWidths[ci] as number;
      const q = tables[ci] as Float64Array;
      const matrix = matrices[ci] as Float64Array;
      const coefficients = (stores[ci] as Store).coefficients;
      const cn = c.n;
      const slots = c.slots;
      for (let v = 0; v < c.v; v += 1) {
        const first = (my * c.v + v) * c.paddedPerLine * slots;
        for (let bx = 0; bx < c.paddedPerLine; bx += 1) {
          idctBlock(
            coefficients,
            first + bx * slots,
            q,
            matrix,
            cn,
            work,
            rowEnds,
            plane,
            v * cn * planeWidth + bx * cn,
            planeWidth,
          );
        }
      }
    }
    const rowsHere = g.vMax * n;
    for (let ry = 0; ry < rowsHere && emitted < outHeight; ry += 1) {
      for (let ci = 0; ci < count; ci += 1)
        sourceRows[ci] = sourceRow(g.components[ci] as (typeof g.components)[number], g.vMax, n, ry);
      if (kind === "ycc") {
        yccRow(
          planes[0] as Uint8Array,
          planes[1] as Uint8Array,
          planes[2] as Uint8Array,
          sourceRows,
          columnMaps[0] as Int32Array,
          columnMaps[1] as Int32Array,
          columnMaps[2] as Int32Array,
          rgba,
          outWidth,
        );
      } else {
        otherRow(kind, inverted, plan.inkRows === true, planes, sourceRows, columnMaps, rgba, outWidth);
      }
      row(rgba);
      emitted += 1;
    }
  }
}

/**
 * Dequantises one block's N×N corner and writes its N-point IDCT (level-shifted, clamped, rounded) into
 * `plane` at `target` with stride `stride`. Rows of zero coefficients are skipped, and a block with only a DC
 * term (common once N is small) is filled directly; the arithmetic is the same as the full transform.
 */
function idctBlock(
  coefficients: Int16Array,
  base: number,
  q: Float64Array,
  matrix: Float64Array,
  n: number,
  work: Float64Array,
  rowEnds: Int32Array,
  plane: Uint8Array,
  target: number,
  stride: number,
): void {
  const slots = n * n;
  // Dequantise, noting the last row holding a non-zero coefficient and each row's last non-zero column.
  let lastRow = -1;
  for (let vy = 0; vy < n; vy += 1) {
    let lastU = -1;
    for (let u = 0; u < n; u += 1) {
      const value = (coefficients[base + vy * n + u] as number) * (q[vy * n + u] as number);
      work[vy * n + u] = value;
      if (value !== 0) lastU = u;
    }
    rowEnds[vy] = lastU;
    if (lastU >= 0) lastRow = vy;
  }
  if (lastRow <= 0 && (rowEnds[0] as number) <= 0) {
    // Only a DC term: M[x][0] is the same for every x, so every sample is 128 + M[0][0]·(F00·Q00·M[0][0]).
    const m0 = matrix[0] as number;
    const sum = 128 + m0 * ((work[0] as number) * m0);
    const value = sum < 0 ? 0 : sum > 255 ? 255 : (sum + 0.5) | 0;
    for (let y = 0; y < n; y += 1) {
      const out = target + y * stride;
      for (let x = 0; x < n; x += 1) plane[out + x] = value;
    }
    return;
  }
  // Rows first: partial[vy][x] = Σu F[vy][u]·M[x][u] (work[slots..]); then columns. Terms known to be zero
  // are skipped, which leaves every sum exactly as the full transform computes it.
  for (let vy = 0; vy <= lastRow; vy += 1) {
    const p = slots + vy * n;
    const lastU = rowEnds[vy] as number;
    for (let x = 0; x < n; x += 1) {
      let sum = 0;
      for (let u = 0; u <= lastU; u += 1) sum += (work[vy * n + u] as number) * (matrix[x * n + u] as number);
      work[p + x] = sum;
    }
  }
  for (let y = 0; y < n; y += 1) {
    const out = target + y * stride;
    for (let x = 0; x < n; x += 1) {
      let sum = 128;
      for (let vy = 0; vy <= lastRow; vy += 1)
        sum += (matrix[y * n + vy] as number) * (work[slots + vy * n + x] as number);
      plane[out + x] = sum < 0 ? 0 : sum > 255 ? 255 : (sum + 0.5) | 0;
    }
  }
}

/**
 * YCbCr → RGBA for one output row (the common case, kept free of per-pixel branches on the colour model), in
 * libjpeg's 16-bit fixed point (jdcolor.c: FIX(1.402) = 91881, FIX(0.34414) = 22554, FIX(0.71414) = 46802,
 * FIX(1.772) = 116130), as the WebAssembly core does.
 */
function yccRow(
  p0: Uint8Array,
  p1: Uint8Array,
  p2: Uint8Array,
  sourceRows: Int32Array,
  m0: Int32Array,
  m1: Int32Array,
  m2: Int32Array,
  rgba: Uint8Array,
  width: number,
): void {
  const r0 = sourceRows[0] as number;
  const r1 = sourceRows[1] as number;
  const r2 = sourceRows[2] as number;
  for (let x = 0; x < width; x += 1) {
    const y = p0[r0 + (m0[x] as number)] as number;
    const cb = (p1[r1 + (m1[x] as number)] as number) - 128;
    const cr = (p2[r2 + (m2[x] as number)] as number) - 128;
    const r = y + ((91881 * cr + 32768) >> 16);
    const g = y + ((-22554 * cb - 46802 * cr + 32768) >> 16);
    const b = y + ((116130 * cb + 32768) >> 16);
    const o = x * 4;
    rgba[o] = Math.max(0, Math.min(255, r));
    rgba[o + 1] = Math.max(0, Math.min(255, g));
    rgba[o + 2] = Math.max(0, Math.min(255, b));
    rgba[o + 3] = 255;
  }
}

/** Grey, RGB, CMYK and YCCK rows. */
function otherRow(
  kind: ReturnType<typeof colourModel>,
  inverted: boolean,
  inkRows: boolean,
  planes: Uint8Array[],
  sourceRows: Int32Array,
  columnMaps: Int32Array[],
  rgba: Uint8Array,
  width: number,
): void {
  const sample = (ci: number, x: number) =>
    (planes[ci] as Uint8Array)[(sourceRows[ci] as number) + ((columnMaps[ci] as Int32Array)[x] as number)] as number;
  for (let x = 0; x < width; x += 1) {
    let r: number;
    let gg: number;
    let b: number;
    if (kind === "gray") {
      r = gg = b = sample(0, x);
    } else if (kind === "rgb") {
      r = sample(0, x);
      gg = sample(1, x);
      b = sample(2, x);
    } else if (inkRows) {
      const o = x * 4;
      if (kind === "cmyk") {
        rgba[o] = sample(0, x);
        rgba[o + 1] = sample(1, x);
        rgba[o + 2] = sample(2, x);
      } else {
        // YCCK: YCbCr of the inverted CMY bytes, as libjpeg turns it back.
        const y = sample(0, x);
        const cb = sample(1, x) - 128;
        const cr = sample(2, x) - 128;
        rgba[o] = 255 - clamp(y + 1.402 * cr);
        rgba[o + 1] = 255 - clamp(y - 0.344136 * cb - 0.714136 * cr);
        rgba[o + 2] = 255 - clamp(y + 1.772 * cb);
      }
      rgba[o + 3] = sample(3, x);
      continue;
    } else if (kind === "cmyk") {
      const k = sample(3, x);
      r = cmykChannel(sample(0, x), k, inverted);
      gg = cmykChannel(sample(1, x), k, inverted);
      b = cmykChannel(sample(2, x), k, inverted);
    } else {
      const y = sample(0, x);
      const cb = sample(1, x) - 128;
      const cr = sample(2, x) - 128;
      // YCCK is YCbCr of inverted CMY plus K; Adobe stores all four inverted.
      const k = sample(3, x);
      r = ((255 - clamp(y + 1.402 * cr)) * k) / 255;
      gg = ((255 - clamp(y - 0.344136 * cb - 0.714136 * cr)) * k) / 255;
      b = ((255 - clamp(y + 1.772 * cb)) * k) / 255;
    }
    const o = x * 4;
    rgba[o] = clamp(r);
    rgba[o + 1] = clamp(gg);
    rgba[o + 2] = clamp(b);
    rgba[o + 3] = 255;
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
