/**
 * VP8L prefix codes for the ALPH encoder (alpha-chunk.ts): length-limited Huffman code lengths, canonical
 * codes, the code-length code that transmits them, and an LSB-first bit writer into a buffer sized in advance.
 */

const CODE_LENGTH_ORDER = [17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

type HuffmanNode = { w: number; s: number; a?: HuffmanNode; b?: HuffmanNode };

/** Length-limited Huffman code lengths (complete codes); counts with < 2 used symbols get phantom symbols. */
function huffmanLengths(counts: ArrayLike<number>, limit: number): Uint8Array {
  const size = counts.length;
  const c = Array.from(counts);
  let used = c.filter((x) => x > 0).length;
  for (let s = 0; used < 2 && s < size; s += 1) {
    if (c[s] === 0) {
      c[s] = 1;
      used += 1;
    }
  }
  // Too deep a tree: halve the weights (keeping every used symbol ≥ 1) and build again.
  for (let scale = 0; ; scale += 1) {
    const leaves: HuffmanNode[] = [];
    for (let s = 0; s < size; s += 1) {
      const count = c[s] as number;
      if (count > 0) leaves.push({ w: scale ? Math.max(1, count >>> scale) : count, s });
    }
    leaves.sort((a, b) => a.w - b.w || a.s - b.s);
    // two-queue Huffman: leaves sorted, internal nodes created in non-decreasing weight order
    const q2: HuffmanNode[] = [];
    let i1 = 0;
    let i2 = 0;
    const pop = (): HuffmanNode => {
      const leaf = leaves[i1];
      const node = q2[i2];
      if (leaf && (!node || leaf.w <= node.w)) {
        i1 += 1;
        return leaf;
      }
      i2 += 1;
      return node as HuffmanNode;
    };
    while (leaves.length - i1 + q2.length - i2 > 1) {
      const a = pop();
      const b = pop();
      q2.push({ w: a.w + b.w, s: -1, a, b });
    }
    const root = q2[q2.length - 1] as HuffmanNode;
    const lengths = new Uint8Array(size);
    let max = 0;
    const stack: [HuffmanNode, number][] = [[root, 0]];
    for (let top = stack.pop(); top; top = stack.pop()) {
      const [node, d] = top;
      if (node.a && node.b) stack.push([node.a, d + 1], [node.b, d + 1]);
      else {
        lengths[node.s] = d;
        if (d > max) max = d;
      }
    }
    if (max <= limit) return lengths;
  }
}

/** Canonical codes, bit-reversed for LSB-first writing. */
function canonicalCodes(lengths: Uint8Array): Uint32Array {
  const size = lengths.length;
  const blCount = new Uint32Array(16);
  for (let s = 0; s < size; s += 1) {
    const len = lengths[s] as number;
    blCount[len] = (blCount[len] as number) + 1;
  }
  blCount[0] = 0;
  const next = new Uint32Array(16);
  let code = 0;
  for (let b = 1; b < 16; b += 1) {
    code = (code + (blCount[b - 1] as number)) << 1;
    next[b] = code;
  }
  const codes = new Uint32Array(size);
  for (let s = 0; s < size; s += 1) {
    const len = lengths[s] as number;
    if (!len) continue;
    let v = next[len] as number;
    next[len] = v + 1;
    let r = 0;
    for (let k = 0; k < len; k += 1) {
      r = (r << 1) | (v & 1);
      v >>>= 1;
    }
    codes[s] = r;
  }
  return codes;
}

type Token = [symbol: number, extraBits: number, extraValue: number];

/** Run-length tokens for a code-length array. */
function codeLengthTokens(lengths: Uint8Array): Token[] {
  const out: Token[] = [];
  let prev = 8; // libwebp's initial "previous non-zero length"
  let i = 0;
  const n = lengths.length;
  while (i < n) {
    const v = lengths[i] as number;
    let j = i;
    while (j < n && lengths[j] === v) j += 1;
    let run = j - i;
    if (v === 0) {
      while (run >= 11) {
        const r = Math.min(run, 138);
        out.push([18, 7, r - 11]);
        run -= r;
      }
      if (run >= 3) {
        out.push([17, 3, run - 3]);
        run = 0;
      }
      for (; run > 0; run -= 1) out.push([0, 0, 0]);
    } else {
      if (v !== prev) {
        out.push([v, 0, 0]);
        run -= 1;
        prev = v;
      }
      while (run >= 3) {
        const r = Math.min(run, 6);
        out.push([16, 2, r - 3]);
        run -= r;
      }
      for (; run > 0; run -= 1) out.push([v, 0, 0]);
    }
    i = j;
  }
  return out;
}

/** LSB-first bit writer into a buffer sized in advance. */
export class BitWriter {
  readonly buf: Uint8Array;
  pos = 0;
  private acc = 0;
  private nacc = 0;

  constructor(bytes: number) {
    this.buf = new Uint8Array(bytes);
  }

  /** Appends the low `nbits` (≤ 24) bits of value. */
  put(value: number, nbits: number): void {
    this.acc |= value << this.nacc;
    this.nacc += nbits;
    while (this.nacc >= 8) {
      this.buf[this.pos] = this.acc & 255;
      this.pos += 1;
      this.acc >>>= 8;
      this.nacc -= 8;
    }
  }

  /** Flushes the last partial byte; returns the bytes written. */
  finish(): Uint8Array {
    if (this.nacc > 0) {
      this.buf[this.pos] = this.acc & 255;
      this.pos += 1;
      this.acc = 0;
      this.nacc = 0;
    }
    return this.buf.subarray(0, this.pos);
  }
}

export type NormalCode = { lengths: Uint8Array; codes: Uint32Array; headerBits(): number; write(bw: BitWriter): void };

/** A normal (non-simple) Huffman code for the counts: its lengths, codes, header size and header writer. */
export function normalCode(counts: ArrayLike<number>): NormalCode {
  const lengths = huffmanLengths(counts, 15);
  const codes = canonicalCodes(lengths);
  const tokens = codeLengthTokens(lengths);
  const clCounts = new Uint32Array(19);
  for (const [s] of tokens) clCounts[s] = (clCounts[s] as number) + 1;
  const clLengths = huffmanLengths(clCounts, 7);
  const clCodes = canonicalCodes(clLengths);
  // with exactly one code-length symbol used, the decoder reads it with 0 bits
  const clZero = clCounts.filter((x) => x > 0).length === 1;
  let numCodes = 19;
  while (numCodes > 4 && clLengths[CODE_LENGTH_ORDER[numCodes - 1] as number] === 0) numCodes -= 1;
  const headerBits = () => {
    let b = 1 + 4 + 3 * numCodes + 1;
    for (const [s, eb] of tokens) b += (clZero ? 0 : (clLengths[s] as number)) + eb;
    return b;
  };
  const write = (bw: BitWriter) => {
    bw.put(0, 1); // normal code
    bw.put(numCodes - 4, 4);
    for (let k = 0; k < numCodes; k += 1) bw.put(clLengths[CODE_LENGTH_ORDER[k] as number] as number, 3);
    bw.put(0, 1); // max_symbol = alphabet size
    for (const [s, eb, ev] of tokens) {
      if (!clZero) bw.put(clCodes[s] as number, clLengths[s] as number);
      if (eb) bw.put(ev, eb);
    }
  };
  // a code with one used symbol is read with 0 bits; huffmanLengths added a phantom, so ≥ 2 symbols here
  return { lengths, codes, headerBits, write };
}

/** A simple code with the single symbol 0 (red, blue and alpha: 0 bits per pixel). */
export function writeSimpleZero(bw: BitWriter): void {
  bw.put(1, 1);
  bw.put(0, 1);
  bw.put(0, 1);
  bw.put(0, 1);
}
