/**
 * The tokens of an ALPH chunk's VP8L stream (alpha-chunk.ts): the alpha plane, filtered as the ALPH header
 * says, read in place from RGBA (stride 4) and cut greedily into green literals and backward references
 * (runs, and copies from the row above and its neighbours), with the VP8L prefix coding of lengths and
 * distances. Both passes of the encoder tokenise through here, so they agree bit for bit.
 */
const MAX_LEN = 4096;
const NUM_LEN_CODES = 24;
export const GREEN_SIZE = 256 + NUM_LEN_CODES;
export const DIST_SIZE = 40;
/** Shortest backward reference worth a token (shorter matches cost more than their literals). */
const MIN_RUN = 3;

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
export const LEN_SYM = new Uint8Array(MAX_LEN + 1);
export const LEN_EB = new Uint8Array(MAX_LEN + 1);
export const LEN_EV = new Uint16Array(MAX_LEN + 1);
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

export type Candidate = { off: number; sym: number; eb: number; ev: number };

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
export function tokenize(
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
