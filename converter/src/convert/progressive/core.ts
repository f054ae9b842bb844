import progressiveWasm from "../progressive.wasm";
import {
  componentWords,
  descriptorWords,
  type Geometry,
  type GeometryComponent,
  huffmanBytes,
  type ProgressivePlan,
  type ScratchLayout,
  type Store,
  scratchLayout,
} from "./plan";
import { cornerQuantisers, emitMcuRows, fillColumnMap, idctMatrix, type RowEmitter } from "./rows";
import { damaged, type Huffman, type Scan, scanKind } from "./scans";

/**
 * The WebAssembly path: entropy decoding, IDCT and YCbCr rows in the core (progressive.wasm, built from
 * converter/wasm/progressive/progressive.c by converter/wasm/progressive/build.sh; 3–4× faster than TypeScript), working inside
 * the conversion arena's memory, which holds the file, the stores and the scratch (laid out by plan.ts).
 */

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

export function coreFor(memory: WebAssembly.Memory): Core {
  let core = cores.get(memory);
  if (!core) {
    core = new WebAssembly.Instance(progressiveWasm, { env: { memory } }).exports as unknown as Core;
    cores.set(memory, core);
  }
  return core;
}

/** The scratch of one decode: its layout, and the address of an offset in it. */
type Scratch = { layout: ScratchLayout; at: (offset: number) => number };

/** The WebAssembly path: the same steps as the TypeScript one, in the arena's memory. */
export function decodeWithCore(
  core: Core,
  memory: WebAssembly.Memory,
  bytes: Uint8Array,
  parsed: { plan: ProgressivePlan; g: Geometry; stores: Store[]; scans: Scan[]; quant: (Uint16Array | undefined)[] },
  scratchStart: number,
  row: (rgba: Uint8Array) => void,
): void {
  const { plan, g, stores } = parsed;
  const scratch: Scratch = { layout: scratchLayout(plan, g), at: (offset) => scratchStart + offset };
  stores.forEach((store, ci) => {
    new Int32Array(memory.buffer, scratch.at(scratch.layout.slotOf[ci] as number), 128).set(store.slotOf);
  });
  decodeScansWithCore(core, memory.buffer, bytes, g, stores, parsed.scans, scratch);
  emitRowsWithCore(core, memory.buffer, plan, g, stores, parsed.quant, scratch, row);
}

/** Copies a Huffman table into the scratch's slot, unless it is there already. */
function tableLoader(buffer: ArrayBuffer, scratch: Scratch): (slot: number, table: Huffman | undefined) => number {
  const loaded: (Huffman | undefined)[] = [];
  return (slot, table) => {
    if (!table) return 0;
    const pointer = scratch.at(scratch.layout.tables) + slot * huffmanBytes;
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
}

function decodeScansWithCore(
  core: Core,
  buffer: ArrayBuffer,
  bytes: Uint8Array,
  g: Geometry,
  stores: Store[],
  scans: Scan[],
  scratch: Scratch,
): void {
  const descriptor = new Int32Array(buffer, scratch.at(scratch.layout.descriptor), descriptorWords);
  const load = tableLoader(buffer, scratch);
  for (const scan of scans) {
    const kind = scanKind(scan);
    const dcFirst = kind === 0;
    descriptor.fill(0);
    descriptor.set([
      kind,
      scan.ss,
      scan.se,
      scan.al,
      scan.start,
      scan.end,
      scan.restartInterval,
      scan.components.length,
      g.mcusPerLine,
      g.mcusPerColumn,
      bytes.byteOffset,
    ]);
    scan.components.forEach((sc, i) => {
      const c = g.components[sc.index] as GeometryComponent;
      const store = stores[sc.index] as Store;
      descriptor.set(
        [
          c.h,
          c.v,
          c.paddedPerLine,
          c.blocksPerLine,
          c.blocksPerColumn,
          dcFirst ? load(i, sc.dc) : 0,
          kind < 2 ? 0 : load(4, sc.ac),
          store.coefficients.byteOffset,
          store.nonzero.byteOffset,
          scratch.at(scratch.layout.slotOf[sc.index] as number),
          store.slots,
          store.words,
        ],
        16 + i * componentWords,
      );
    });
    if (core.decode_scan(descriptor.byteOffset) !== 0) throw damaged();
  }
}

/** Each component's IDCT matrix and its transpose, quantisers and column map, into the scratch. */
function writeComponentTables(
  buffer: ArrayBuffer,
  plan: ProgressivePlan,
  g: Geometry,
  quant: (Uint16Array | undefined)[],
  scratch: Scratch,
): void {
  const { layout, at } = scratch;
  g.components.forEach((c, ci) => {
    const basis = idctMatrix(c.n);
    new Float64Array(buffer, at(layout.matrix[ci] as number), c.slots).set(basis);
    const transposed = new Float64Array(buffer, at(layout.matrix[ci] as number) + 64 * 8, c.slots);
    for (let x = 0; x < c.n; x += 1)
      for (let u = 0; u < c.n; u += 1) transposed[u * c.n + x] = basis[x * c.n + u] as number;
    cornerQuantisers(quant[c.tq], c.n, new Float64Array(buffer, at(layout.quant[ci] as number), c.slots));
    fillColumnMap(new Int32Array(buffer, at(layout.columnMaps[ci] as number), layout.outWidth), c, g.hMax, plan.n);
  });
}

function emitRowsWithCore(
  core: Core,
  buffer: ArrayBuffer,
  plan: ProgressivePlan,
  g: Geometry,
  stores: Store[],
  quant: (Uint16Array | undefined)[],
  scratch: Scratch,
  row: (rgba: Uint8Array) => void,
): void {
  const { layout, at } = scratch;
  const outWidth = layout.outWidth;
  writeComponentTables(buffer, plan, g, quant, scratch);
  const planePointers = g.components.map((_, ci) => at(layout.planes[ci] as number));
  const mapPointers = g.components.map((_, ci) => at(layout.columnMaps[ci] as number));
  const rgbaPointer = at(layout.rgba);
  const [p0, p1, p2] = planePointers as [number, number, number];
  const [m0, m1, m2] = mapPointers as [number, number, number];
  const emitter: RowEmitter = {
    plan,
    g,
    planes: g.components.map(
      (c, ci) => new Uint8Array(buffer, planePointers[ci] as number, c.paddedPerLine * c.n * c.v * c.n),
    ),
    columnMaps: mapPointers.map((pointer) => new Int32Array(buffer, pointer, outWidth)),
    sourceRows: new Int32Array(g.components.length),
    rgba: new Uint8Array(buffer, rgbaPointer, outWidth * 4),
    outWidth,
    outHeight: Math.ceil((plan.height * plan.n) / 8),
    yccRow: (rows) =>
      core.ycc_row(
        p0 + (rows[0] as number),
        p1 + (rows[1] as number),
        p2 + (rows[2] as number),
        m0,
        m1,
        m2,
        rgbaPointer,
        outWidth,
      ),
    row,
  };
  let emitted = 0;
  for (let my = 0; my < g.mcusPerColumn && emitted < emitter.outHeight; my += 1) {
    g.components.forEach((c, ci) => {
      const planeWidth = c.paddedPerLine * c.n;
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
    });
    emitted = emitMcuRows(emitter, emitted);
  }
}
