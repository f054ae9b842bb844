import type { Geometry, GeometryComponent, Store } from "./plan";
import { damaged, type Huffman, type Scan, scanKind } from "./scans";

/**
 * The TypeScript path's entropy decoding: every scan's Huffman-coded bits into the coefficient stores, the
 * refinement scans reading the non-zero history of the coefficients not stored (the WebAssembly core,
 * converter/wasm/progressive/progressive.c, does the same in the arena's memory).
 */

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

/** Decodes every scan into the stores. */
export function decodeScans(bytes: Uint8Array, g: Geometry, stores: Store[], scans: Scan[]): void {
  for (const scan of scans) decodeScan(bytes, g, stores, scan);
}

function decodeScan(bytes: Uint8Array, g: Geometry, stores: Store[], scan: Scan): void {
  const kind = scanKind(scan);
  const { ss, se, al } = scan;
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
  if (scan.components.length !== 1) {
    forEachMcuBlock(g, scan, restartCheck, decodeBlock);
    return;
  }
  const c = g.components[scan.components[0]?.index as number] as GeometryComponent;
  const store = scanStores[0] as Store;
  const table = (kind >= 2 ? scan.components[0]?.ac : scan.components[0]?.dc) as Huffman;
  for (let by = 0; by < c.blocksPerColumn; by += 1) {
    const rowStart = by * c.paddedPerLine;
    // Without restarts, the AC scans (most of a file) call their decoder directly.
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
}

/** Visits an interleaved scan's blocks in MCU order, calling `beforeMcu` first at each MCU (for restarts). */
function forEachMcuBlock(
  g: Geometry,
  scan: Scan,
  beforeMcu: () => void,
  visit: (slot: number, block: number) => void,
): void {
  const members = scan.components.map((sc) => {
    const c = g.components[sc.index] as GeometryComponent;
    return { h: c.h, v: c.v, perLine: c.paddedPerLine };
  });
  for (let my = 0; my < g.mcusPerColumn; my += 1) {
    for (let mx = 0; mx < g.mcusPerLine; mx += 1) {
      beforeMcu();
      for (let slot = 0; slot < members.length; slot += 1) {
        const m = members[slot] as (typeof members)[number];
        for (let v = 0; v < m.v; v += 1) {
          const rowStart = (my * m.v + v) * m.perLine + mx * m.h;
          for (let h = 0; h < m.h; h += 1) visit(slot, rowStart + h);
        }
      }
    }
  }
}
