/**
 * Our own encoder for the WebP ALPH chunk (compression 1 = VP8L lossless image-stream of the alpha plane in
 * the green channel). libwebp's encoder codes alpha with its full lossless coder, which needs 20–35 bytes per
 * pixel of working memory; this one needs a few KB of histograms plus its output, so the VP8 part can be
 * encoded as opaque (webp-encode.ts) and the alpha added beside it.
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
 *
 * The tokens come from alpha-tokens.ts, the prefix codes and the bit writer from vp8l-codes.ts; this file
 * chooses the filter, sizes the stream and writes it.
 */

import {
  type AlphaFilter,
  alphaFilter,
  DIST_SIZE,
  GREEN_SIZE,
  LEN_EB,
  LEN_EV,
  LEN_SYM,
  tokenize,
} from "./alpha-tokens";
import { BitWriter, type NormalCode, normalCode, writeSimpleZero } from "./vp8l-codes";

export { type AlphaFilter, alphaFilter } from "./alpha-tokens";

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
type AlphaChunk = {
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
type AlphaOptions = {
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
