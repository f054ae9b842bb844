/*
 * Hot loops of the progressive JPEG decoder (converter/src/convert/progressive/), built to WebAssembly by
 * converter/wasm/progressive/build.sh. The module imports the memory of the conversion arena (libjpeg-turbo's instance)
 * and works only on buffers the TypeScript side placed there: it has no data section, no globals and no
 * shadow stack (the build checks this), so it can never write outside what it was given.
 *
 * The arithmetic mirrors the TypeScript path (progressive/entropy.ts, rows.ts) exactly (same
 * double-precision operations in the same order), so both paths produce the same pixels.
 */

typedef unsigned char u8;
typedef short i16;
typedef int i32;
typedef unsigned int u32;

/* Huffman table as progressive/core.ts lays it out: 9-bit lookup (length << 8 | symbol, or -1), then the
 * canonical-code tables for longer codes. */
typedef struct {
  i32 lookup[512];
  i32 max_code[18];
  i32 value_offset[18];
  u8 values[256];
} huffman_t;

/* Scan descriptor written by progressive/core.ts (int32 words): 16 for the scan, then C_WORDS per scan component.
 * Each component has its own store (coefficients, non-zero bits, slot table, N_c² slots a block: 4:4:4 chroma
 * keeps fewer coefficients than luma), and block indices are local to it. */
enum {
  D_KIND, D_SS, D_SE, D_AL, D_START, D_END, D_RESTART, D_COUNT, D_MCUS_PER_LINE, D_MCUS_PER_COLUMN, D_DATA,
  D_COMPONENTS = 16
};
enum {
  C_H, C_V, C_PER_LINE, C_BLOCKS_PER_LINE, C_BLOCKS_PER_COLUMN, C_DC, C_AC, C_COEFFICIENTS, C_NONZERO, C_SLOT_OF,
  C_SLOTS, C_HISTORY_WORDS, C_WORDS = 12
};

typedef struct {
  const u8 *bytes;
  i32 pos;
  i32 end;
  u32 acc;
  i32 count;
  i32 padding;
  i32 eobrun;
  i32 failed;
} reader_t;

#define INLINE static inline __attribute__((always_inline))

INLINE void fill(reader_t *r) {
  while (r->count <= 24) {
    u32 byte = 0;
    if (r->pos < r->end) {
      byte = r->bytes[r->pos];
      if (byte != 0xff) {
        r->pos += 1;
      } else if (r->bytes[r->pos + 1] == 0) {
        r->pos += 2;
      } else {
        byte = 0; /* a marker: stop here and feed zeros */
        r->padding += 1;
      }
    } else {
      r->padding += 1;
    }
    r->acc = (r->acc << 8) | byte;
    r->count += 8;
  }
  if (r->padding > 1024) r->failed = 2;
}

INLINE i32 get_bits(reader_t *r, i32 n) {
  if (r->count < n) fill(r);
  r->count -= n;
  return (i32)((r->acc >> r->count) & ((1u << n) - 1u));
}

INLINE i32 get_bit(reader_t *r) {
  if (r->count < 1) fill(r);
  r->count -= 1;
  return (i32)((r->acc >> r->count) & 1u);
}

INLINE i32 decode(reader_t *r, const huffman_t *t) {
  if (r->count < 16) fill(r);
  i32 hit = t->lookup[(r->acc >> (r->count - 9)) & 511];
  if (hit >= 0) {
    r->count -= hit >> 8;
    return hit & 255;
  }
  i32 code = 0;
  for (i32 length = 1; length <= 16; length += 1) {
    code = (code << 1) | (i32)((r->acc >> (r->count - length)) & 1u);
    if (code <= t->max_code[length]) {
      r->count -= length;
      i32 index = code + t->value_offset[length];
      if (index < 0 || index > 255) break;
      return t->values[index];
    }
  }
  r->failed = 3;
  return 0;
}

INLINE i32 extend(i32 value, i32 size) { return value < (1 << (size - 1)) ? value - (1 << size) + 1 : value; }

typedef unsigned short u16;
typedef unsigned long long u64;

/* One component's store. A stored coefficient's non-zero history is its value being non-zero; the history of
 * the others is one bit each in `words` 16-bit words a block: slot_of[k] is k's slot when stored, else -1 - b
 * for its bit b. slot_of[64..64+slots) lists the stored zigzag indices in ascending order. */
typedef struct {
  i16 *coefficients;
  u16 *nonzero;
  const i32 *slot_of;
  i32 slots;
  i32 words;
} store_t;

INLINE void ac_first(reader_t *r, const store_t *s, i32 block, const huffman_t *t, i32 ss, i32 se, i32 al) {
  if (r->eobrun > 0) {
    r->eobrun -= 1;
    return;
  }
  i32 base = block * s->slots;
  u16 *words = s->nonzero + block * s->words;
  for (i32 k = ss; k <= se;) {
    i32 rs = decode(r, t);
    i32 size = rs & 15;
    i32 run = rs >> 4;
    if (size == 0) {
      if (run < 15) {
        r->eobrun = (1 << run) - 1 + get_bits(r, run);
        break;
      }
      k += 16;
      continue;
    }
    k += run;
    if (k > 63) {
      r->failed = 4;
      return;
    }
    i32 value = get_bits(r, size);
    i32 slot = s->slot_of[k];
    if (slot >= 0) {
      s->coefficients[base + slot] = (i16)(extend(value, size) * (1 << al));
    } else {
      i32 b = -1 - slot;
      words[b >> 4] |= (u16)(1u << (b & 15));
    }
    k += 1;
  }
}

/* Applies a correction bit to coefficient k (if stored): adds p1 away from zero unless that bit is already set.
 * Branch-free in the bit, which is as good as random, so a branch on it would mispredict half the time. */
INLINE void refine(const store_t *s, i32 base, i32 k, i32 p1, i32 bit) {
  i32 slot = s->slot_of[k];
  if (slot >= 0) {
    i32 old = s->coefficients[base + slot];
    i32 apply = bit & ((old & p1) == 0);
    i32 sign = old >> 31;
    s->coefficients[base + slot] = (i16)(old + (((p1 ^ sign) - sign) & -apply));
  }
}

/* The non-zero history of a block's 64 coefficients (built from the stored values and the bits of the others)
 * is kept in a local 64-bit word while the block is refined, so the end-of-band path visits only the
 * coefficients already non-zero (count trailing zeros) instead of all. */
INLINE void ac_refine(reader_t *r, const store_t *s, i32 block, const huffman_t *t, i32 ss, i32 se, i32 al) {
  i32 base = block * s->slots;
  u16 *words = s->nonzero + block * s->words;
  u64 compact = 0;
  for (i32 i = 0; i < s->words; i += 1) compact |= (u64)words[i] << (16 * i);
  const u64 before = compact;
  /* The history by zigzag index: the unstored bits spread out by inserting, at each stored index (ascending),
   * whether that coefficient is non-zero. */
  u64 history = compact;
  for (i32 i = 0; i < s->slots; i += 1) {
    i32 p = s->slot_of[64 + i];
    u64 low = history & ((1ull << p) - 1u);
    u64 high = p == 63 ? 0 : (history >> p) << (p + 1);
    history = low | high | ((u64)(s->coefficients[base + s->slot_of[p]] != 0) << p);
  }
  i32 p1 = 1 << al;
  i32 k = ss;
  if (r->eobrun == 0) {
    for (; k <= se; k += 1) {
      i32 rs = decode(r, t);
      i32 run = rs >> 4;
      i32 size = rs & 15;
      i32 value = 0;
      if (size != 0) {
        if (size != 1) {
          r->failed = 5;
          return;
        }
        value = get_bit(r) ? p1 : -p1;
      } else if (run != 15) {
        r->eobrun = (1 << run) + get_bits(r, run);
        break;
      }
      /* libjpeg walks k one by one: a coefficient with history takes a correction bit, one without counts
       * down the run, and the walk stops at the (run+1)-th coefficient without history. The same with bit
       * masks: find that stop, then read the correction bits of the coefficients with history before it. */
      const unsigned long long span = (se == 63 ? ~0ull : (2ull << se) - 1u) & (~0ull << k);
      unsigned long long free_slots = ~history & span;
      for (i32 i = 0; i < run && free_slots; i += 1) free_slots &= free_slots - 1u;
      i32 stop = free_slots ? __builtin_ctzll(free_slots) : se + 1;
      unsigned long long corrections = history & span & (stop >= 64 ? ~0ull : (1ull << stop) - 1u);
      while (corrections) {
        i32 at = __builtin_ctzll(corrections);
        corrections &= corrections - 1u;
        refine(s, base, at, p1, get_bit(r));
      }
      k = stop;
      if (value != 0 && k <= se) {
        history |= 1ull << k;
        i32 slot = s->slot_of[k];
        if (slot >= 0) s->coefficients[base + slot] = (i16)value;
        else compact |= 1ull << (-1 - slot);
      }
    }
  }
  if (r->eobrun > 0) {
    if (k <= se) {
      unsigned long long pending = (history >> k) << k;
      if (se < 63) pending &= (2ull << se) - 1u;
      while (pending) {
        i32 at = __builtin_ctzll(pending);
        pending &= pending - 1u;
        refine(s, base, at, p1, get_bit(r));
      }
    }
    r->eobrun -= 1;
  }
  if (compact != before) {
    for (i32 i = 0; i < s->words; i += 1) words[i] = (u16)(compact >> (16 * i));
  }
}

INLINE i32 restart(reader_t *r) {
  r->count = 0;
  r->acc = 0;
  r->eobrun = 0;
  i32 pos = r->pos;
  while (pos < r->end && r->bytes[pos] == 0xff && r->bytes[pos + 1] == 0xff) pos += 1;
  i32 marker = r->bytes[pos + 1];
  if (r->bytes[pos] != 0xff || marker < 0xd0 || marker > 0xd7) return 1;
  r->pos = pos + 2;
  r->padding = 0;
  return 0;
}

/* Returns 0 when the scan decoded, else why its data is damaged (2 padding, 3 code, 4 run, 5 refinement,
 * 6 restart, 7 layout). */
__attribute__((export_name("decode_scan"))) i32 decode_scan(const i32 *d) {
  reader_t r;
  r.bytes = (const u8 *)d[D_DATA];
  r.pos = d[D_START];
  r.end = d[D_END];
  r.acc = 0;
  r.count = 0;
  r.padding = 0;
  r.eobrun = 0;
  r.failed = 0;
  const i32 *c0 = d + D_COMPONENTS;
  store_t s;
  s.coefficients = (i16 *)c0[C_COEFFICIENTS];
  s.nonzero = (u16 *)c0[C_NONZERO];
  s.slot_of = (const i32 *)c0[C_SLOT_OF];
  s.slots = c0[C_SLOTS];
  s.words = c0[C_HISTORY_WORDS];
  const i32 kind = d[D_KIND], ss = d[D_SS], se = d[D_SE], al = d[D_AL];
  const i32 interval = d[D_RESTART];
  const i32 count = d[D_COUNT];
  i32 until_restart = interval;
  /* Four scalars, not an array: an array would live on a shadow stack in memory the module does not own. */
  i32 pred0 = 0, pred1 = 0, pred2 = 0, pred3 = 0;
  if (count == 1) {
    const huffman_t *t = (const huffman_t *)(kind >= 2 ? c0[C_AC] : c0[C_DC]);
    for (i32 by = 0; by < c0[C_BLOCKS_PER_COLUMN]; by += 1) {
      i32 row_start = by * c0[C_PER_LINE];
      for (i32 bx = 0; bx < c0[C_BLOCKS_PER_LINE]; bx += 1) {
        if (interval) {
          if (until_restart == 0) {
            if (restart(&r)) return 6;
            pred0 = 0;
            until_restart = interval;
          }
          until_restart -= 1;
        }
        i32 block = row_start + bx;
        if (kind == 2) {
          ac_first(&r, &s, block, t, ss, se, al);
        } else if (kind == 3) {
          ac_refine(&r, &s, block, t, ss, se, al);
        } else if (kind == 0) {
          i32 size = decode(&r, t);
          i32 diff = size == 0 ? 0 : extend(get_bits(&r, size), size);
          pred0 += diff;
          s.coefficients[block * s.slots] = (i16)(pred0 * (1 << al));
        } else if (get_bit(&r)) {
          s.coefficients[block * s.slots] |= (i16)(1 << al);
        }
        if (r.failed) return r.failed;
      }
    }
    return 0;
  }
  if (kind >= 2 || count > 4) return 7;
  for (i32 my = 0; my < d[D_MCUS_PER_COLUMN]; my += 1) {
    for (i32 mx = 0; mx < d[D_MCUS_PER_LINE]; mx += 1) {
      if (interval) {
        if (until_restart == 0) {
          if (restart(&r)) return 6;
          pred0 = pred1 = pred2 = pred3 = 0;
          until_restart = interval;
        }
        until_restart -= 1;
      }
      for (i32 slot = 0; slot < count; slot += 1) {
        const i32 *c = c0 + slot * C_WORDS;
        const huffman_t *t = (const huffman_t *)c[C_DC];
        i16 *coefficients = (i16 *)c[C_COEFFICIENTS];
        const i32 slots = c[C_SLOTS];
        for (i32 v = 0; v < c[C_V]; v += 1) {
          i32 row_start = (my * c[C_V] + v) * c[C_PER_LINE] + mx * c[C_H];
          for (i32 h = 0; h < c[C_H]; h += 1) {
            i32 block = row_start + h;
            if (kind == 0) {
              i32 size = decode(&r, t);
              i32 diff = size == 0 ? 0 : extend(get_bits(&r, size), size);
              i32 value;
              if (slot == 0) value = pred0 += diff;
              else if (slot == 1) value = pred1 += diff;
              else if (slot == 2) value = pred2 += diff;
              else value = pred3 += diff;
              coefficients[block * slots] = (i16)(value * (1 << al));
            } else if (get_bit(&r)) {
              coefficients[block * slots] |= (i16)(1 << al);
            }
          }
        }
      }
      if (r.failed) return r.failed;
    }
  }
  return 0;
}

/*
 * IDCT of one block: N×N stored coefficients, dequantised by `q`, transformed with the N-point `matrix`, written
 * to `out` with row stride `stride`. Terms known to be zero (rows after the last non-zero one, columns after
 * each row's last non-zero one) are skipped, which leaves every sum exactly as the full transform computes it.
 * Instantiated for each N so the loops are unrolled; `work` holds 2·N² + N doubles and `row_ends` N ints.
 */
INLINE void idct_block(const i16 *coefficients, const double *q, const double *matrix, const i32 n, u8 *out,
                       i32 stride, double *work, i32 *row_ends) {
  const i32 slots = n * n;
  i32 last_row = -1;
  for (i32 vy = 0; vy < n; vy += 1) {
    i32 last_u = -1;
    for (i32 u = 0; u < n; u += 1) {
      double value = (double)coefficients[vy * n + u] * q[vy * n + u];
      work[vy * n + u] = value;
      if (value != 0) last_u = u;
    }
    row_ends[vy] = last_u;
    if (last_u >= 0) last_row = vy;
  }
  if (last_row <= 0 && row_ends[0] <= 0) {
    /* Only a DC term: M[x][0] is the same for every x. */
    double m0 = matrix[0];
    double sum = 128 + m0 * (work[0] * m0);
    u8 value = sum < 0 ? 0 : sum > 255 ? 255 : (u8)(i32)(sum + 0.5);
    for (i32 y = 0; y < n; y += 1)
      for (i32 x = 0; x < n; x += 1) out[y * stride + x] = value;
    return;
  }
  /*
   * x is the innermost loop of both passes, so the compiler vectorises across a row (f64x2) while each
   * output sums its terms in the same order as the TypeScript path (bit-identical pixels). The row pass
   * reads the transposed matrix, stored after the matrix itself.
   */
  const double *transposed = matrix + 64;
  double *partial = work + slots;
  double *row = work + 2 * slots;
  for (i32 vy = 0; vy <= last_row; vy += 1) {
    i32 last_u = row_ends[vy];
    double *target = partial + vy * n;
    for (i32 x = 0; x < n; x += 1) target[x] = 0;
    for (i32 u = 0; u <= last_u; u += 1) {
      const double w = work[vy * n + u];
      const double *column = transposed + u * n;
      for (i32 x = 0; x < n; x += 1) target[x] += w * column[x];
    }
  }
  for (i32 y = 0; y < n; y += 1) {
    for (i32 x = 0; x < n; x += 1) row[x] = 128;
    for (i32 vy = 0; vy <= last_row; vy += 1) {
      const double m = matrix[y * n + vy];
      const double *source = partial + vy * n;
      for (i32 x = 0; x < n; x += 1) row[x] += m * source[x];
    }
    for (i32 x = 0; x < n; x += 1) {
      const double sum = row[x];
      out[y * stride + x] = sum < 0 ? 0 : sum > 255 ? 255 : (u8)(i32)(sum + 0.5);
    }
  }
}

#define IDCT_FOR(N)                                                                                                 \
  static void idct_##N(const i16 *coefficients, i32 count, const double *q, const double *matrix, u8 *out,        \
                       i32 stride, double *work, i32 *row_ends) {                                                 \
    for (i32 b = 0; b < count; b += 1)                                                                            \
      idct_block(coefficients + b * N * N, q, matrix, N, out + b * N, stride, work, row_ends);                    \
  }
IDCT_FOR(1)
IDCT_FOR(2)
IDCT_FOR(3)
IDCT_FOR(4)
IDCT_FOR(5)
IDCT_FOR(6)
IDCT_FOR(7)
IDCT_FOR(8)

/*
 * IDCT of `count` consecutive blocks (N×N stored coefficients each, from `coefficients`) into `plane` at
 * `target`, block b at target + b·N, with row stride `stride`. `q` and `matrix` are N×N doubles.
 */
__attribute__((export_name("idct_blocks"))) void idct_blocks(const i16 *coefficients, i32 count, const double *q,
                                                              const double *matrix, i32 n, u8 *plane, i32 target,
                                                              i32 stride, double *work, i32 *row_ends) {
  u8 *out = plane + target;
  switch (n) {
    case 1: idct_1(coefficients, count, q, matrix, out, stride, work, row_ends); break;
    case 2: idct_2(coefficients, count, q, matrix, out, stride, work, row_ends); break;
    case 3: idct_3(coefficients, count, q, matrix, out, stride, work, row_ends); break;
    case 4: idct_4(coefficients, count, q, matrix, out, stride, work, row_ends); break;
    case 5: idct_5(coefficients, count, q, matrix, out, stride, work, row_ends); break;
    case 6: idct_6(coefficients, count, q, matrix, out, stride, work, row_ends); break;
    case 7: idct_7(coefficients, count, q, matrix, out, stride, work, row_ends); break;
    default: idct_8(coefficients, count, q, matrix, out, stride, work, row_ends); break;
  }
}

/* One output row of YCbCr planes to RGBA, in libjpeg's 16-bit fixed point (jdcolor.c's tables, computed inline). */
INLINE u8 clamp_byte(i32 v) { return v < 0 ? 0 : v > 255 ? 255 : (u8)v; }

__attribute__((export_name("ycc_row"))) void ycc_row(const u8 *p0, const u8 *p1, const u8 *p2, const i32 *m0,
                                                      const i32 *m1, const i32 *m2, u8 *rgba, i32 width) {
  for (i32 x = 0; x < width; x += 1) {
    i32 y = p0[m0[x]];
    i32 cb = (i32)p1[m1[x]] - 128;
    i32 cr = (i32)p2[m2[x]] - 128;
    rgba[x * 4] = clamp_byte(y + ((91881 * cr + 32768) >> 16));
    rgba[x * 4 + 1] = clamp_byte(y + ((-22554 * cb - 46802 * cr + 32768) >> 16));
    rgba[x * 4 + 2] = clamp_byte(y + ((116130 * cb + 32768) >> 16));
    rgba[x * 4 + 3] = 255;
  }
}
