/**
 * Our own encoder for the WebP ALPH chunk (compression 1 = VP8L lossless image-stream of the alpha plane in
 * the green channel). libwebp's encoder codes alpha with its full lossless coder, which needs 20–35 bytes per
 * pixel of working memory; this one needs a few KB of histograms plus its output, so the VP8 part can be
 * encoded as opaque (webp-codec.ts) and the alpha added beside it.
 *
 * The alpha plane is read in place from an RGBA buffer (stride 4): no copy of the plane is made. Two passes:
 * pass 1 tokenises (per candidate filter) into histograms only; pass 2 tokenises again identically and
 * writes bits into an output buffer whose exact size is known from pass 1. Memory: histograms (a few KB) +
 * the output (≤ ~1.01 B/px for random alpha, far less for real cut-outs).
 *
 * Bitstream restrictions: one transform (colour indexing with the identity palette of 256 entries, see
 * writeIdentityPalette), no colour cache, one Huffman group; red/blue/alpha are 1-symbol codes (0 bits);
 * tokens are green literals and backward references with distance code 2 (previous pixel: a run), 1 (pixel
 * one row up), 3 (up-left) or 4 (up-right), length ≤ 4096. The palette and the 0-bit codes together are what
 * libwebp's decoder (Is8bOptimizable in vp8l_dec.c) requires for its 8-bit alpha path: 1 byte per pixel of
 * working memory while decoding the plane, instead of 4 bytes per pixel (measured: a 4000 × 3000 cut-out
 * needed 72 MB to decode without the palette).
 */

const MAX_LEN = 4096;
const NUM_LEN_CODES = 24;
const GREEN_SIZE = 256 + NUM_LEN_CODES;
const DIST_SIZE = 40;
/** Shortest backward reference worth a token (shorter matches cost more than their literals). */
const MIN_RUN = 3;
const CODE_LENGTH_ORDER = [17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/** The ALPH prediction filters (the header byte's filter field). */
export const alphaFilter = { none: 0, horizontal: 1, vertical: 2, gradient: 3 } as const;

/** One of the ALPH prediction filters. */
export type AlphaFilter = (typeof alphaFilter)[keyof typeof alphaFilter];

type Prefix = { symbol: number; extraBits: number; extraValue: number };

/** VP8L prefix coding of value ≥ 1. */
function prefixOf(value: number): Prefix {
  const n = value - 1;
  if (n < 4) return { symbol: n, extraBits: 0, extraValue: 0 };
  const h = 31 - Math.clz32(n);
  const s = (n >>> (h - 1)) & 1;
  return { symbol: 2 * h + s, extraBits: h - 1, extraValue: n & ((1 << (h - 1)) - 1) };
}

// Precomputed length prefixes (1..4096).
const LEN_SYM = new Uint8Array(MAX_LEN + 1);
const LEN_EB = new Uint8Array(MAX_LEN + 1);
const LEN_EV = new Uint16Array(MAX_LEN + 1);
for (let l = 1; l <= MAX_LEN; l += 1) {
  const p = prefixOf(l);
  LEN_SYM[l] = p.symbol;
  LEN_EB[l] = p.extraBits;
  LEN_EV[l] = p.extraValue;
}

// Backward-reference candidates: VP8L "plane codes" (1-based index into the decoder's kCodeToPlane table)
// for small 2-D offsets; only the first 4 are used (previous pixel, up, up-left, up-right), whose sources
// stay in the ring of residual rows.
const CODE_TO_PLANE = [0x18, 0x07, 0x17, 0x19];

type Candidate = { off: number; sym: number; eb: number; ev: number };

/** Candidates for width w (offset in pixels back, distance prefix), cheapest codes first. */
function candidatesFor(w: number): Candidate[] {
  const out: Candidate[] = [];
  for (let code = 1; code <= CODE_TO_PLANE.length; code += 1) {
    const v = CODE_TO_PLANE[code - 1] as number;
    const dy = v >> 4;
    const dx = 8 - (v & 15);
    if (dy > 1) continue;
    const off = dy * w + dx;
    if (off < 1) continue; // up-right on a one-pixel-wide image points at the pixel itself
    const p = prefixOf(code);
    out.push({ off, sym: p.symbol, eb: p.extraBits, ev: p.extraValue });
  }
  return out;
}

/** Computes row y of the filtered alpha (residuals) into out[o..o+w), reading alpha in place (offset 3, stride 4). */
function residualRow(rgba: Uint8Array, w: number, y: number, filter: AlphaFilter, out: Uint8Array, o: number): void {
  const row = y * w * 4 + 3;
  const up = row - w * 4;
  for (let x = 0; x < w; x += 1) {
    const p = row + x * 4;
    const a = rgba[p] as number;
    let pred: number;
    if (filter === alphaFilter.none) pred = 0;
    else if (y === 0) pred = x === 0 ? 0 : (rgba[p - 4] as number);
    else if (x === 0) pred = rgba[up] as number;
    else if (filter === alphaFilter.horizontal) pred = rgba[p - 4] as number;
    else if (filter === alphaFilter.vertical) pred = rgba[up + x * 4] as number;
    else {
      const g = (rgba[p - 4] as number) + (rgba[up + x * 4] as number) - (rgba[up + x * 4 - 4] as number);
      pred = Math.max(0, Math.min(g, 255));
    }
    out[o + x] = (a - pred) & 255;
  }
}

/**
 * Tokenises the filtered plane; calls lit(v) for literals and ref(len, candidate) for backward references.
 * Greedy: the longest of "same as previous residual" (a run, distance 1), "same as the residual one row
 * up" (distance = width), up-left and up-right. Residuals live in a ring of rows y-1 .. y+ceil(4096/w)+1,
 * enough for a lookahead of MAX_LEN pixels.
 */
function tokenize(
  rgba: Uint8Array,
  w: number,
  h: number,
  filter: AlphaFilter,
  lit: (value: number) => void,
  ref: (length: number, candidate: Candidate) => void,
): void {
  const n = w * h;
  const rows = Math.ceil(MAX_LEN / w) + 2;
  const ring = new Uint8Array(rows * w);
  const base = (r: number) => (r % rows) * w;
  const cands = candidatesFor(w);
  let rowsDone = 0;
  let i = 0;
  let x = 0;
  let y = 0;
  while (i < n) {
    while (rowsDone <= y + rows - 2 && rowsDone < h) {
      residualRow(rgba, w, rowsDone, filter, ring, base(rowsDone));
      rowsDone += 1;
    }
    const b0 = base(y);
    const v = ring[b0 + x] as number;
    const lim = Math.min(n - i, MAX_LEN, (y + rows - 1) * w - i);
    // longest match among the candidates; ties keep the earlier (cheaper) one
    let bestLen = 0;
    let best = 0;
    for (let c = 0; c < cands.length; c += 1) {
      const q = i - (cands[c] as Candidate).off;
      if (q < 0) continue;
      let qy = (q / w) | 0;
      let qx = q - qy * w;
      if (qy < y - 1) continue; // outside the ring
      let qb = base(qy);
      let jb = b0;
      let jx = x;
      let jy = y;
      let k = 0;
      while (k < lim && ring[jb + jx] === ring[qb + qx]) {
        k += 1;
        jx += 1;
        if (jx === w) {
          jx = 0;
          jy += 1;
          jb = base(jy);
        }
        qx += 1;
        if (qx === w) {
          qx = 0;
          qy += 1;
          qb = base(qy);
        }
      }
      if (k > bestLen) {
        bestLen = k;
        best = c;
      }
    }
    let len = 1;
    if (bestLen >= MIN_RUN) {
      ref(bestLen, cands[best] as Candidate);
      len = bestLen;
    } else lit(v);
    i += len;
    x += len;
    while (x >= w) {
      x -= w;
      y += 1;
    }
  }
}

// ---- Huffman ----

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
class BitWriter {
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

type NormalCode = { lengths: Uint8Array; codes: Uint32Array; headerBits(): number; write(bw: BitWriter): void };

/** A normal (non-simple) Huffman code for the counts: its lengths, codes, header size and header writer. */
function normalCode(counts: ArrayLike<number>): NormalCode {
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
function writeSimpleZero(bw: BitWriter): void {
  bw.put(1, 1);
  bw.put(0, 1);
  bw.put(0, 1);
  bw.put(0, 1);
}

/** Size of what writeIdentityPalette writes, in bits. */
const PALETTE_BITS = 1 + 2 + 8 + 1 + 12 + 4 * 4 + 256;

/**
 * The colour-indexing transform with the identity palette: entry i has green i (the plane's values pass
 * through unchanged). 256 entries, because with more than 16 the decoder bundles no pixels and reads indices
 * up to 255 (a shorter palette would map the rest to 0). The palette is coded as deltas from the previous
 * entry: 0 once, then 1 255 times, one bit each with a two-symbol simple code; 37 bytes in all.
 */
function writeIdentityPalette(bw: BitWriter): void {
  bw.put(1, 1); // a transform follows
  bw.put(3, 2); // COLOR_INDEXING_TRANSFORM
  bw.put(255, 8); // 256 colours
  bw.put(0, 1); // the palette sub-image: no colour cache
  bw.put(1, 1); // green: simple code,
  bw.put(1, 1); // two symbols,
  bw.put(0, 1); // the first written with 1 bit:
  bw.put(0, 1); // symbol 0 (code 0)
  bw.put(1, 8); // and symbol 1 (code 1)
  writeSimpleZero(bw); // red
  writeSimpleZero(bw); // blue
  writeSimpleZero(bw); // alpha
  writeSimpleZero(bw); // distance (no backward references)
  bw.put(0, 1); // entry 0: green 0
  for (let i = 1; i < 256; i += 1) bw.put(1, 1); // entries 1..255: green + 1
}

type Histogram = { green: Float64Array; dist: Float64Array; extra: number };

/** Pass 1: symbol counts of the tokenised plane, plus the extra bits the tokens carry. */
function histogram(rgba: Uint8Array, w: number, h: number, filter: AlphaFilter): Histogram {
  const green = new Float64Array(GREEN_SIZE);
  const dist = new Float64Array(DIST_SIZE);
  let extra = 0;
  tokenize(
    rgba,
    w,
    h,
    filter,
    (v) => {
      green[v] = (green[v] as number) + 1;
    },
    (len, d) => {
      const s = 256 + (LEN_SYM[len] as number);
      green[s] = (green[s] as number) + 1;
      extra += (LEN_EB[len] as number) + d.eb;
      dist[d.sym] = (dist[d.sym] as number) + 1;
    },
  );
  return { green, dist, extra };
}

type Plan = { bits: number; g: NormalCode; d: NormalCode };

/** Exact size in bits of the VP8L stream for a histogram, with the codes that achieve it. */
function streamBits(hist: Histogram): Plan {
  const g = normalCode(hist.green);
  const d = normalCode(hist.dist);
  let bits = PALETTE_BITS + 1 + 1 + 1; // the palette, no further transform, no cache, no meta codes
  bits += g.headerBits() + 3 * 4 + d.headerBits();
  for (let s = 0; s < GREEN_SIZE; s += 1) bits += (hist.green[s] as number) * (g.lengths[s] as number);
  for (let s = 0; s < DIST_SIZE; s += 1) bits += (hist.dist[s] as number) * (d.lengths[s] as number);
  bits += hist.extra;
  return { bits, g, d };
}

/** An ALPH chunk payload: the header byte and the coded plane. */
export type AlphaChunk = {
  /** Chunk payload (header byte + data), without the chunk's tag and size. */
  payload: Uint8Array;
  /** Filter used, or -1 for the raw (uncompressed) plane. */
  filter: AlphaFilter | -1;
  /** Bytes allocated for the payload (the payload itself plus up to 8 spare bytes). */
  bufferBytes: number;
};

/** Incompressible alpha (e.g. random): the raw plane; header 0 = no pre-processing, no filter, compression 0. */
function rawAlph(rgba: Uint8Array, n: number): AlphaChunk {
  const payload = new Uint8Array(1 + n);
  for (let i = 0; i < n; i += 1) payload[1 + i] = rgba[i * 4 + 3] as number;
  return { payload, filter: -1, bufferBytes: payload.length };
}

/** Choices for encodeAlph. */
export type AlphaOptions = {
  /** Candidate filters; the smallest estimated size wins (default none, horizontal, gradient). */
  filters?: readonly AlphaFilter[];
  /** Never fall back to the raw plane (for tests of the coder). */
  noRaw?: boolean;
};

/** Encodes the alpha of a w × h RGBA buffer (read in place) as an ALPH chunk payload. */
export function encodeAlph(rgba: Uint8Array, w: number, h: number, options: AlphaOptions = {}): AlphaChunk {
  const n = w * h;
  if (rgba.length < n * 4) throw new RangeError(`RGBA buffer of ${rgba.length} bytes for ${w} × ${h}`);
  const filters = options.filters ?? [alphaFilter.none, alphaFilter.horizontal, alphaFilter.gradient];
  // filter choice: coded size of each candidate on a sample of row bands (16 rows of every 128) when the image
  // is tall enough, else on the whole plane
  let f: AlphaFilter = filters[0] ?? alphaFilter.none;
  let sampledRaw = false; // the sample says the coded plane would not be smaller than the raw one
  if (filters.length > 1) {
    const BAND = 16;
    const EVERY = 128;
    let bestBits = Number.POSITIVE_INFINITY;
    for (const cand of filters) {
      let bits = 0;
      if (h >= 2 * EVERY) {
        const agg: Histogram = { green: new Float64Array(GREEN_SIZE), dist: new Float64Array(DIST_SIZE), extra: 0 };
        for (let y0 = 0; y0 + BAND <= h; y0 += EVERY) {
          const hb = histogram(rgba.subarray(y0 * w * 4, (y0 + BAND) * w * 4), w, BAND, cand);
          for (let k = 0; k < GREEN_SIZE; k += 1) agg.green[k] = (agg.green[k] as number) + (hb.green[k] as number);
          for (let k = 0; k < DIST_SIZE; k += 1) agg.dist[k] = (agg.dist[k] as number) + (hb.dist[k] as number);
          agg.extra += hb.extra;
        }
        bits = streamBits(agg).bits;
        bits = (bits / (Math.floor((h - BAND) / EVERY) + 1) / BAND / w) * n; // scaled to the whole plane
      } else bits = streamBits(histogram(rgba, w, h, cand)).bits;
      if (bits < bestBits) {
        bestBits = bits;
        f = cand;
      }
    }
    sampledRaw = h >= 2 * EVERY && bestBits >= 8 * n;
  }
  if (!options.noRaw && sampledRaw) return rawAlph(rgba, n);
  // pass 1 for the chosen filter: histograms only; the exact coded size follows from them
  const plan = streamBits(histogram(rgba, w, h, f));
  if (!options.noRaw && 1 + Math.ceil(plan.bits / 8) >= 1 + n) return rawAlph(rgba, n);
  const bw = new BitWriter(1 + Math.ceil(plan.bits / 8) + 8);
  bw.buf[0] = (0 << 4) | (f << 2) | 1; // no pre-processing, filter, compression 1 (lossless)
  bw.pos = 1;
  writeIdentityPalette(bw);
  bw.put(0, 1); // no further transform
  bw.put(0, 1); // no colour cache
  bw.put(0, 1); // no meta Huffman codes
  plan.g.write(bw);
  writeSimpleZero(bw);
  writeSimpleZero(bw);
  writeSimpleZero(bw);
  plan.d.write(bw);
  const { g, d } = plan;
  // pass 2: the same tokens again, now written
  tokenize(
    rgba,
    w,
    h,
    f,
    (v) => bw.put(g.codes[v] as number, g.lengths[v] as number),
    (len, c) => {
      const s = 256 + (LEN_SYM[len] as number);
      bw.put(g.codes[s] as number, g.lengths[s] as number);
      if (LEN_EB[len]) bw.put(LEN_EV[len] as number, LEN_EB[len] as number);
      bw.put(d.codes[c.sym] as number, d.lengths[c.sym] as number);
      if (c.eb) bw.put(c.ev, c.eb);
    },
  );
  const payload = bw.finish();
  // pass 1 and pass 2 must agree bit for bit; a mismatch would be a bug in this file, not bad input
  if (payload.length !== 1 + Math.ceil(plan.bits / 8)) {
    throw new Error(`ALPH size plan mismatch: ${payload.length} vs ${1 + Math.ceil(plan.bits / 8)}`);
  }
  return { payload, filter: f, bufferBytes: bw.buf.length };
}
