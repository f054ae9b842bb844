import { coreFor, decodeWithCore } from "./core";
import { decodeScans } from "./entropy";
import { geometry, makeStores, type ProgressivePlan, scratchLayout, storeBytes } from "./plan";
import { emitRows } from "./rows";
import { damaged, readScans, zigzag } from "./scans";

export { type ProgressivePlan, progressiveStorageBytes } from "./plan";

/**
 * A progressive JPEG decoder that never holds all coefficients. libjpeg keeps every coefficient of a
 * progressive image (64 × 2 bytes per 8×8 block, ~3 bytes per pixel for 4:2:0), which for a 24 MP photo
 * alone exceeds what a Worker can spare. This decoder decodes at N/8 scale and stores only the N×N
 * low-frequency coefficients of each block (all an N-point IDCT uses), plus one bit per coefficient not stored
 * saying whether it is non-zero (a stored one's value says it), which the successive-approximation refinement
 * scans need to parse the rest. The chroma of 4:4:4 files is kept at ceil(N/2) (`componentScale`). Storage is
 * blocks × 2·(N_c² + ceil((64 - N_c²)/16)) bytes plus a small scratch (tables, one MCU row of samples, one
 * RGBA row), in memory the caller provides.
 *
 * The files: plan.ts (geometry, store and scratch sizes), scans.ts (tables and scans of the file),
 * entropy.ts (the TypeScript path's scan decoding), rows.ts (IDCT and colour into rows), core.ts (the
 * WebAssembly path).
 */

/**
 * Decodes a progressive JPEG at N/8 scale and pushes RGBA rows (top to bottom, ceil(width·N/8) wide) to `row`.
 * `storage` must hold `progressiveStorageBytes(plan)` bytes, 4-byte aligned; it is overwritten. When `memory`
 * is the WebAssembly memory holding both `bytes` and `storage` (the conversion arena), the entropy decoding,
 * IDCT and colour conversion run in the WebAssembly core inside that memory (progressive.wasm, built from
 * converter/wasm/progressive/progressive.c by converter/wasm/progressive/build.sh; 3–4× faster); otherwise in TypeScript. Both
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
  if (storage.byteLength < storeBytes(g) || storage.byteOffset % 4 !== 0) {
    throw new RangeError("progressive storage too small or unaligned");
  }
  const stores = makeStores(g, storage, zigzag);
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
    decodeWithCore(coreFor(memory), memory, bytes, { plan, g, stores, scans, quant }, scratch, row);
    return;
  }
  decodeScans(bytes, g, stores, scans);
  emitRows(plan, g, stores, quant, row);
}
