// WebAssembly SIMD versions of the libjpeg-turbo routines that take most of a scaled decode's time besides the
// Huffman decoder: the inverse DCTs of the scales the pipeline uses (4x4 for M = 4; 6x6 and, for 4:2:0
// chroma, 12x12 for M = 6; 8x8 for M = 8 and for 4:2:0 chroma at M = 4) and the YCbCr-to-RGB conversion.
// libjpeg-turbo's own SIMD code is x86 assembly or NEON. Two ways in, neither touching its files:
// - jsimd.h's hooks (4x4, 8x8 islow, YCbCr to RGB): build.sh compiles its portable jsimd_none.c with these
//   names renamed away, so the definitions here take their place;
// - 6x6 and 12x12, whose hooks jddctmgr.c only consults on MIPS: jpeg_simd_take_over() replaces the C routine
//   in the decoder's method table once jpeg_start_decompress has chosen it (jpeg.c calls it then; the table is
//   set once per output pass, and a decode here has one).
//
// Each is the scalar routine of jidctred.c / jidctint.c / jdcolext.c done four lanes at a time with the same
// 32-bit integer operations (the same wrap-around, the same shortcut for a column or row without AC terms,
// chosen per lane), so the pixels are bit for bit those of the C code, for any coefficients, valid or not.

#include <stdio.h>  // jpeglib.h needs FILE
#include <wasm_simd128.h>

#define JPEG_INTERNALS
#include "jpeglib.h"
#include "jdct.h"
#include "jsimd.h"
#include "jsimddct.h"
#include "jpeg-simd.h"

#define CONST_BITS 13
#define PASS1_BITS 2

// Each libjpeg sample after an IDCT goes through range_limit[x & RANGE_MASK] (jdmaster.c's table, offset by
// CENTERJSAMPLE): x modulo 1024 read as a signed 10-bit number, plus 128, clamped to 0..255. Here: the same
// as ((x + 512) & 1023) - 384, clamped by the saturating narrowing that packs the bytes.
static inline v128_t range_limit(v128_t x) {
  return wasm_i32x4_sub(wasm_v128_and(wasm_i32x4_add(x, wasm_i32x4_splat(512)), wasm_i32x4_splat(1023)),
                        wasm_i32x4_splat(384));
}

static inline v128_t descale(v128_t x, int n) {
  return wasm_i32x4_shr(wasm_i32x4_add(x, wasm_i32x4_splat(1 << (n - 1))), n);
}

static inline v128_t mul(v128_t x, int c) { return wasm_i32x4_mul(x, wasm_i32x4_splat(c)); }

// Four 16-bit coefficients widened to 32 bits, times four quantisation multipliers (ISLOW_MULT_TYPE is int).
static inline v128_t dequantize(const JCOEF* coef, const ISLOW_MULT_TYPE* quant) {
  return wasm_i32x4_mul(wasm_i32x4_extend_low_i16x8(wasm_v128_load64_zero(coef)), wasm_v128_load(quant));
}

static inline void transpose(v128_t* a, v128_t* b, v128_t* c, v128_t* d) {
  const v128_t ab_lo = wasm_i32x4_shuffle(*a, *b, 0, 4, 1, 5), ab_hi = wasm_i32x4_shuffle(*a, *b, 2, 6, 3, 7);
  const v128_t cd_lo = wasm_i32x4_shuffle(*c, *d, 0, 4, 1, 5), cd_hi = wasm_i32x4_shuffle(*c, *d, 2, 6, 3, 7);
  *a = wasm_i32x4_shuffle(ab_lo, cd_lo, 0, 1, 4, 5);
  *b = wasm_i32x4_shuffle(ab_lo, cd_lo, 2, 3, 6, 7);
  *c = wasm_i32x4_shuffle(ab_hi, cd_hi, 0, 1, 4, 5);
  *d = wasm_i32x4_shuffle(ab_hi, cd_hi, 2, 3, 6, 7);
}

// jpeg_idct_4x4's pass 1 on four columns (lane = column): its four output rows.
static inline void idct_4x4_columns(const JCOEF* in, const ISLOW_MULT_TYPE* quant, v128_t out[4]) {
  const v128_t zero = wasm_i32x4_splat(0);
  const v128_t c0 = dequantize(in, quant);
  const v128_t c1 = dequantize(in + DCTSIZE * 1, quant + DCTSIZE * 1);
  const v128_t c2 = dequantize(in + DCTSIZE * 2, quant + DCTSIZE * 2);
  const v128_t c3 = dequantize(in + DCTSIZE * 3, quant + DCTSIZE * 3);
  const v128_t c5 = dequantize(in + DCTSIZE * 5, quant + DCTSIZE * 5);
  const v128_t c6 = dequantize(in + DCTSIZE * 6, quant + DCTSIZE * 6);
  const v128_t c7 = dequantize(in + DCTSIZE * 7, quant + DCTSIZE * 7);
  // The C code tests the coefficients, not their products: a product may wrap to zero.
  const v128_t raw = wasm_v128_or(
      wasm_v128_or(wasm_v128_load64_zero(in + DCTSIZE * 1), wasm_v128_load64_zero(in + DCTSIZE * 2)),
      wasm_v128_or(wasm_v128_or(wasm_v128_load64_zero(in + DCTSIZE * 3), wasm_v128_load64_zero(in + DCTSIZE * 5)),
                   wasm_v128_or(wasm_v128_load64_zero(in + DCTSIZE * 6), wasm_v128_load64_zero(in + DCTSIZE * 7))));
  const v128_t dc_only = wasm_i32x4_eq(wasm_i32x4_extend_low_i16x8(raw), zero);
  const v128_t dc = wasm_i32x4_shl(c0, PASS1_BITS);

  const v128_t tmp0e = wasm_i32x4_shl(c0, CONST_BITS + 1);
  const v128_t tmp2e = wasm_i32x4_add(mul(c2, 15137), mul(c6, -6270));
  const v128_t tmp10 = wasm_i32x4_add(tmp0e, tmp2e);
  const v128_t tmp12 = wasm_i32x4_sub(tmp0e, tmp2e);
  const v128_t tmp0 = wasm_i32x4_add(wasm_i32x4_add(mul(c7, -1730), mul(c5, 11893)),
                                     wasm_i32x4_add(mul(c3, -17799), mul(c1, 8697)));
  const v128_t tmp2 = wasm_i32x4_add(wasm_i32x4_add(mul(c7, -4176), mul(c5, -4926)),
                                     wasm_i32x4_add(mul(c3, 7373), mul(c1, 20995)));
  const int shift = CONST_BITS - PASS1_BITS + 1;
  out[0] = wasm_v128_bitselect(dc, descale(wasm_i32x4_add(tmp10, tmp2), shift), dc_only);
  out[3] = wasm_v128_bitselect(dc, descale(wasm_i32x4_sub(tmp10, tmp2), shift), dc_only);
  out[1] = wasm_v128_bitselect(dc, descale(wasm_i32x4_add(tmp12, tmp0), shift), dc_only);
  out[2] = wasm_v128_bitselect(dc, descale(wasm_i32x4_sub(tmp12, tmp0), shift), dc_only);
}

GLOBAL(int) jsimd_can_idct_4x4(void) { return 1; }

GLOBAL(void)
jsimd_idct_4x4(j_decompress_ptr cinfo, jpeg_component_info* compptr, JCOEFPTR coef_block, JSAMPARRAY output_buf,
               JDIMENSION output_col) {
  (void)cinfo;
  const ISLOW_MULT_TYPE* quant = (const ISLOW_MULT_TYPE*)compptr->dct_table;
  // Pass 1, columns 0-3 and 4-7 (column 4 is computed with the others and never read).
  v128_t left[4], right[4];
  idct_4x4_columns(coef_block, quant, left);
  idct_4x4_columns(coef_block + 4, quant + 4, right);
  // Pass 2 works on rows: lane = row, one vector per workspace column.
  transpose(&left[0], &left[1], &left[2], &left[3]);      // left[k]: column k of rows 0-3
  transpose(&right[0], &right[1], &right[2], &right[3]);  // right[k]: column 4 + k
  const v128_t w0 = left[0], w1 = left[1], w2 = left[2], w3 = left[3];
  const v128_t w5 = right[1], w6 = right[2], w7 = right[3];
  const v128_t zero = wasm_i32x4_splat(0);
  const v128_t dc_only = wasm_i32x4_eq(
      wasm_v128_or(wasm_v128_or(w1, w2), wasm_v128_or(wasm_v128_or(w3, w5), wasm_v128_or(w6, w7))), zero);
  const v128_t dc = descale(w0, PASS1_BITS + 3);

  const v128_t tmp0e = wasm_i32x4_shl(w0, CONST_BITS + 1);
  const v128_t tmp2e = wasm_i32x4_add(mul(w2, 15137), mul(w6, -6270));
  const v128_t tmp10 = wasm_i32x4_add(tmp0e, tmp2e);
  const v128_t tmp12 = wasm_i32x4_sub(tmp0e, tmp2e);
  const v128_t tmp0 = wasm_i32x4_add(wasm_i32x4_add(mul(w7, -1730), mul(w5, 11893)),
                                     wasm_i32x4_add(mul(w3, -17799), mul(w1, 8697)));
  const v128_t tmp2 = wasm_i32x4_add(wasm_i32x4_add(mul(w7, -4176), mul(w5, -4926)),
                                     wasm_i32x4_add(mul(w3, 7373), mul(w1, 20995)));
  const int shift = CONST_BITS + PASS1_BITS + 3 + 1;
  // Lane = row; o[k] is output column k.
  const v128_t o0 = range_limit(wasm_v128_bitselect(dc, descale(wasm_i32x4_add(tmp10, tmp2), shift), dc_only));
  const v128_t o3 = range_limit(wasm_v128_bitselect(dc, descale(wasm_i32x4_sub(tmp10, tmp2), shift), dc_only));
  const v128_t o1 = range_limit(wasm_v128_bitselect(dc, descale(wasm_i32x4_add(tmp12, tmp0), shift), dc_only));
  const v128_t o2 = range_limit(wasm_v128_bitselect(dc, descale(wasm_i32x4_sub(tmp12, tmp0), shift), dc_only));
  // Bytes o0[r0..r3] o1[r0..r3] o2[...] o3[...], clamped to 0..255, regrouped by row.
  const v128_t bytes = wasm_u8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(o0, o1), wasm_i16x8_narrow_i32x4(o2, o3));
  const v128_t rows = wasm_i8x16_shuffle(bytes, bytes, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  wasm_v128_store32_lane(output_buf[0] + output_col, rows, 0);
  wasm_v128_store32_lane(output_buf[1] + output_col, rows, 1);
  wasm_v128_store32_lane(output_buf[2] + output_col, rows, 2);
  wasm_v128_store32_lane(output_buf[3] + output_col, rows, 3);
}

// jpeg_idct_6x6 (jidctint.c, which has no shortcuts): pass 1 on four columns (lane = column), its six rows.
static inline void idct_6x6_columns(const JCOEF* in, const ISLOW_MULT_TYPE* quant, v128_t out[6]) {
  const v128_t c0 = dequantize(in, quant);
  const v128_t c1 = dequantize(in + DCTSIZE * 1, quant + DCTSIZE * 1);
  const v128_t c2 = dequantize(in + DCTSIZE * 2, quant + DCTSIZE * 2);
  const v128_t c3 = dequantize(in + DCTSIZE * 3, quant + DCTSIZE * 3);
  const v128_t c4 = dequantize(in + DCTSIZE * 4, quant + DCTSIZE * 4);
  const v128_t c5 = dequantize(in + DCTSIZE * 5, quant + DCTSIZE * 5);
  const v128_t tmp0 = wasm_i32x4_add(wasm_i32x4_shl(c0, CONST_BITS), wasm_i32x4_splat(1 << (CONST_BITS - PASS1_BITS - 1)));
  const v128_t c4m = mul(c4, 5793);  // FIX(0.707106781), c4
  const v128_t tmp1 = wasm_i32x4_add(tmp0, c4m);
  const v128_t tmp11 = wasm_i32x4_shr(wasm_i32x4_sub(wasm_i32x4_sub(tmp0, c4m), c4m), CONST_BITS - PASS1_BITS);
  const v128_t c2m = mul(c2, 10033);  // FIX(1.224744871), c2
  const v128_t tmp10 = wasm_i32x4_add(tmp1, c2m);
  const v128_t tmp12 = wasm_i32x4_sub(tmp1, c2m);
  const v128_t o1 = mul(wasm_i32x4_add(c1, c5), 2998);  // FIX(0.366025404), c5
  const v128_t o0 = wasm_i32x4_add(o1, wasm_i32x4_shl(wasm_i32x4_add(c1, c3), CONST_BITS));
  const v128_t o2 = wasm_i32x4_add(o1, wasm_i32x4_shl(wasm_i32x4_sub(c5, c3), CONST_BITS));
  const v128_t o1s = wasm_i32x4_shl(wasm_i32x4_sub(wasm_i32x4_sub(c1, c3), c5), PASS1_BITS);
  const int shift = CONST_BITS - PASS1_BITS;
  out[0] = wasm_i32x4_shr(wasm_i32x4_add(tmp10, o0), shift);
  out[5] = wasm_i32x4_shr(wasm_i32x4_sub(tmp10, o0), shift);
  out[1] = wasm_i32x4_add(tmp11, o1s);
  out[4] = wasm_i32x4_sub(tmp11, o1s);
  out[2] = wasm_i32x4_shr(wasm_i32x4_add(tmp12, o2), shift);
  out[3] = wasm_i32x4_shr(wasm_i32x4_sub(tmp12, o2), shift);
}

// jpeg_idct_6x6's pass 2 on four rows (lane = row; w[k] = workspace column k): its six output columns,
// range-limited.
static inline void idct_6x6_rows(const v128_t w[6], v128_t out[6]) {
  const v128_t tmp0 = wasm_i32x4_shl(wasm_i32x4_add(w[0], wasm_i32x4_splat(1 << (PASS1_BITS + 2))), CONST_BITS);
  const v128_t c4m = mul(w[4], 5793);
  const v128_t tmp1 = wasm_i32x4_add(tmp0, c4m);
  const v128_t tmp11 = wasm_i32x4_sub(wasm_i32x4_sub(tmp0, c4m), c4m);
  const v128_t c2m = mul(w[2], 10033);
  const v128_t tmp10 = wasm_i32x4_add(tmp1, c2m);
  const v128_t tmp12 = wasm_i32x4_sub(tmp1, c2m);
  const v128_t o1 = mul(wasm_i32x4_add(w[1], w[5]), 2998);
  const v128_t o0 = wasm_i32x4_add(o1, wasm_i32x4_shl(wasm_i32x4_add(w[1], w[3]), CONST_BITS));
  const v128_t o2 = wasm_i32x4_add(o1, wasm_i32x4_shl(wasm_i32x4_sub(w[5], w[3]), CONST_BITS));
  const v128_t o1s = wasm_i32x4_shl(wasm_i32x4_sub(wasm_i32x4_sub(w[1], w[3]), w[5]), CONST_BITS);
  const int shift = CONST_BITS + PASS1_BITS + 3;
  out[0] = range_limit(wasm_i32x4_shr(wasm_i32x4_add(tmp10, o0), shift));
  out[5] = range_limit(wasm_i32x4_shr(wasm_i32x4_sub(tmp10, o0), shift));
  out[1] = range_limit(wasm_i32x4_shr(wasm_i32x4_add(tmp11, o1s), shift));
  out[4] = range_limit(wasm_i32x4_shr(wasm_i32x4_sub(tmp11, o1s), shift));
  out[2] = range_limit(wasm_i32x4_shr(wasm_i32x4_add(tmp12, o2), shift));
  out[3] = range_limit(wasm_i32x4_shr(wasm_i32x4_sub(tmp12, o2), shift));
}

// Writes `rows` rows of six bytes from six range-limited vectors (lane = row, vector = column).
static inline void store_6_columns(const v128_t o[6], JSAMPARRAY output_buf, JDIMENSION output_col, int first, int rows) {
  // Bytes: o0[r0..3] o1[r0..3] o2[r0..3] o3[r0..3] | o4[r0..3] o5[r0..3], clamped to 0..255.
  const v128_t a = wasm_u8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(o[0], o[1]), wasm_i16x8_narrow_i32x4(o[2], o[3]));
  const v128_t b = wasm_u8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(o[4], o[5]), wasm_i16x8_narrow_i32x4(o[4], o[5]));
  // Row r's six bytes: a[r], a[4 + r], a[8 + r], a[12 + r], b[r], b[4 + r]; two rows a vector.
  const v128_t r01 = wasm_i8x16_shuffle(a, b, 0, 4, 8, 12, 16, 20, 0, 0, 1, 5, 9, 13, 17, 21, 0, 0);
  const v128_t r23 = wasm_i8x16_shuffle(a, b, 2, 6, 10, 14, 18, 22, 0, 0, 3, 7, 11, 15, 19, 23, 0, 0);
  const v128_t pairs[2] = {r01, r23};
  for (int r = 0; r < rows; r++) {
    JSAMPROW out = output_buf[first + r] + output_col;
    const v128_t v = pairs[r >> 1];
    if (r & 1) {
      wasm_v128_store32_lane(out, v, 2);
      wasm_v128_store16_lane(out + 4, v, 6);
    } else {
      wasm_v128_store32_lane(out, v, 0);
      wasm_v128_store16_lane(out + 4, v, 2);
    }
  }
}

static void idct_6x6(j_decompress_ptr cinfo, jpeg_component_info* compptr, JCOEFPTR coef_block, JSAMPARRAY output_buf,
               JDIMENSION output_col) {
  (void)cinfo;
  const ISLOW_MULT_TYPE* quant = (const ISLOW_MULT_TYPE*)compptr->dct_table;
  // Pass 1: columns 0-3 and 4-7 (6 and 7 computed from their coefficients and never read); rows 6, 7 zero.
  v128_t left[8], right[8];
  idct_6x6_columns(coef_block, quant, left);
  idct_6x6_columns(coef_block + 4, quant + 4, right);
  left[6] = left[7] = right[6] = right[7] = wasm_i32x4_splat(0);
  // Pass 2 on rows 0-3, then 4-5: workspace columns as vectors over those rows.
  for (int group = 0; group < 2; group++) {
    v128_t w[8];
    for (int k = 0; k < 4; k++) {
      w[k] = left[4 * group + k];
      w[4 + k] = right[4 * group + k];
    }
    transpose(&w[0], &w[1], &w[2], &w[3]);
    transpose(&w[4], &w[5], &w[6], &w[7]);
    v128_t o[6];
    idct_6x6_rows(w, o);
    store_6_columns(o, output_buf, output_col, 4 * group, group == 0 ? 4 : 2);
  }
}

// The 8-point 1-D kernel of jpeg_idct_islow (jidctint.c), both passes: c[0..7] the inputs (dequantized
// coefficients, or workspace values); out[k] is output k before the pass's descale.
static inline void idct_8(const v128_t c[8], v128_t out[8]) {
  const v128_t z1 = mul(wasm_i32x4_add(c[2], c[6]), 4433);        // FIX_0_541196100
  const v128_t tmp2 = wasm_i32x4_add(z1, mul(c[6], -15137));       // -FIX_1_847759065
  const v128_t tmp3 = wasm_i32x4_add(z1, mul(c[2], 6270));         // FIX_0_765366865
  const v128_t tmp0 = wasm_i32x4_shl(wasm_i32x4_add(c[0], c[4]), CONST_BITS);
  const v128_t tmp1 = wasm_i32x4_shl(wasm_i32x4_sub(c[0], c[4]), CONST_BITS);
  const v128_t tmp10 = wasm_i32x4_add(tmp0, tmp3), tmp13 = wasm_i32x4_sub(tmp0, tmp3);
  const v128_t tmp11 = wasm_i32x4_add(tmp1, tmp2), tmp12 = wasm_i32x4_sub(tmp1, tmp2);

  const v128_t a0 = c[7], a1 = c[5], a2 = c[3], a3 = c[1];
  const v128_t y1 = wasm_i32x4_add(a0, a3), y2 = wasm_i32x4_add(a1, a2);
  const v128_t y3 = wasm_i32x4_add(a0, a2), y4 = wasm_i32x4_add(a1, a3);
  const v128_t z5 = mul(wasm_i32x4_add(y3, y4), 9633);             // FIX_1_175875602
  const v128_t m1 = mul(y1, -7373), m2 = mul(y2, -20995);           // FIX_0_899976223, FIX_2_562915447
  const v128_t m3 = wasm_i32x4_add(mul(y3, -16069), z5);           // FIX_1_961570560
  const v128_t m4 = wasm_i32x4_add(mul(y4, -3196), z5);            // FIX_0_390180644
  const v128_t o0 = wasm_i32x4_add(mul(a0, 2446), wasm_i32x4_add(m1, m3));   // FIX_0_298631336
  const v128_t o1 = wasm_i32x4_add(mul(a1, 16819), wasm_i32x4_add(m2, m4));  // FIX_2_053119869
  const v128_t o2 = wasm_i32x4_add(mul(a2, 25172), wasm_i32x4_add(m2, m3));  // FIX_3_072711026
  const v128_t o3 = wasm_i32x4_add(mul(a3, 12299), wasm_i32x4_add(m1, m4));  // FIX_1_501321110

  out[0] = wasm_i32x4_add(tmp10, o3);
  out[7] = wasm_i32x4_sub(tmp10, o3);
  out[1] = wasm_i32x4_add(tmp11, o2);
  out[6] = wasm_i32x4_sub(tmp11, o2);
  out[2] = wasm_i32x4_add(tmp12, o1);
  out[5] = wasm_i32x4_sub(tmp12, o1);
  out[3] = wasm_i32x4_add(tmp13, o0);
  out[4] = wasm_i32x4_sub(tmp13, o0);
}

GLOBAL(int) jsimd_can_idct_islow(void) { return 1; }

GLOBAL(void)
jsimd_idct_islow(j_decompress_ptr cinfo, jpeg_component_info* compptr, JCOEFPTR coef_block, JSAMPARRAY output_buf,
                 JDIMENSION output_col) {
  (void)cinfo;
  const ISLOW_MULT_TYPE* quant = (const ISLOW_MULT_TYPE*)compptr->dct_table;
  const v128_t zero = wasm_i32x4_splat(0);
  // Pass 1 on columns 0-3 and 4-7 (lane = column); a column without AC coefficients is its DC << PASS1_BITS.
  v128_t half[2][8];
  for (int h = 0; h < 2; h++) {
    v128_t c[8];
    v128_t raw = zero;
    for (int k = 0; k < 8; k++) {
      c[k] = dequantize(coef_block + DCTSIZE * k + 4 * h, quant + DCTSIZE * k + 4 * h);
      if (k) raw = wasm_v128_or(raw, wasm_v128_load64_zero(coef_block + DCTSIZE * k + 4 * h));
    }
    const v128_t dc_only = wasm_i32x4_eq(wasm_i32x4_extend_low_i16x8(raw), zero);
    const v128_t dc = wasm_i32x4_shl(c[0], PASS1_BITS);
    idct_8(c, half[h]);
    for (int r = 0; r < 8; r++)
      half[h][r] = wasm_v128_bitselect(dc, descale(half[h][r], CONST_BITS - PASS1_BITS), dc_only);
  }
  // Pass 2, four rows at a time (lane = row); a row whose terms 1-7 are zero is its descaled DC.
  for (int group = 0; group < 2; group++) {
    v128_t w[8];
    for (int k = 0; k < 4; k++) {
      w[k] = half[0][4 * group + k];
      w[4 + k] = half[1][4 * group + k];
    }
    transpose(&w[0], &w[1], &w[2], &w[3]);
    transpose(&w[4], &w[5], &w[6], &w[7]);
    v128_t ac = w[1];
    for (int k = 2; k < 8; k++) ac = wasm_v128_or(ac, w[k]);
    const v128_t dc_only = wasm_i32x4_eq(ac, zero);
    const v128_t dc = descale(w[0], PASS1_BITS + 3);
    v128_t o[8];
    idct_8(w, o);
    for (int k = 0; k < 8; k++)
      o[k] = range_limit(wasm_v128_bitselect(dc, descale(o[k], CONST_BITS + PASS1_BITS + 3), dc_only));
    // Back to one vector per row, packed to eight bytes.
    transpose(&o[0], &o[1], &o[2], &o[3]);
    transpose(&o[4], &o[5], &o[6], &o[7]);
    for (int r = 0; r < 4; r++) {
      const v128_t words = wasm_i16x8_narrow_i32x4(o[r], o[4 + r]);
      wasm_v128_store64_lane(output_buf[4 * group + r] + output_col, wasm_u8x16_narrow_i16x8(words, words), 0);
    }
  }
}

// ycc_rgb_convert (jdcolext.c) for RGB rows: jdcolor.c's tables are these products, rounded the same way.
#define SCALEBITS 16
#define FIX_1_40200 91881
#define FIX_1_77200 116130
#define FIX_0_71414 46802
#define FIX_0_34414 22554

static inline void ycc_pixel(int y, int cb, int cr, JSAMPLE* out, int red, int green, int blue) {
  const int x_cb = cb - CENTERJSAMPLE, x_cr = cr - CENTERJSAMPLE;
  const int r = y + ((FIX_1_40200 * x_cr + (1 << (SCALEBITS - 1))) >> SCALEBITS);
  const int g = y + ((-FIX_0_71414 * x_cr + (-FIX_0_34414 * x_cb + (1 << (SCALEBITS - 1)))) >> SCALEBITS);
  const int b = y + ((FIX_1_77200 * x_cb + (1 << (SCALEBITS - 1))) >> SCALEBITS);
  out[red] = (JSAMPLE)(r < 0 ? 0 : r > MAXJSAMPLE ? MAXJSAMPLE : r);
  out[green] = (JSAMPLE)(g < 0 ? 0 : g > MAXJSAMPLE ? MAXJSAMPLE : g);
  out[blue] = (JSAMPLE)(b < 0 ? 0 : b > MAXJSAMPLE ? MAXJSAMPLE : b);
}

// The four quarters of sixteen bytes as 32-bit lanes, `centre` subtracted (0, or CENTERJSAMPLE for chroma).
static inline void widen(v128_t bytes, int centre, v128_t out[4]) {
  const v128_t c = wasm_i16x8_splat((int16_t)centre);
  const v128_t lo = wasm_i16x8_sub(wasm_u16x8_extend_low_u8x16(bytes), c);
  const v128_t hi = wasm_i16x8_sub(wasm_u16x8_extend_high_u8x16(bytes), c);
  out[0] = wasm_i32x4_extend_low_i16x8(lo);
  out[1] = wasm_i32x4_extend_high_i16x8(lo);
  out[2] = wasm_i32x4_extend_low_i16x8(hi);
  out[3] = wasm_i32x4_extend_high_i16x8(hi);
}

// y + ((a * x + b * z + ONE_HALF) >> SCALEBITS) for sixteen pixels, clamped to bytes. G adds its two products
// in jdcolor.c's order (Cb_g_tab holds ONE_HALF); the sum is the same integer either way.
static inline v128_t channel16(const v128_t y[4], const v128_t x[4], int a, const v128_t z[4], int b) {
  v128_t q[4];
  for (int i = 0; i < 4; i++) {
    v128_t sum = wasm_i32x4_add(wasm_i32x4_mul(x[i], wasm_i32x4_splat(a)), wasm_i32x4_splat(1 << (SCALEBITS - 1)));
    if (b) sum = wasm_i32x4_add(sum, wasm_i32x4_mul(z[i], wasm_i32x4_splat(b)));
    q[i] = wasm_i32x4_add(y[i], wasm_i32x4_shr(sum, SCALEBITS));
  }
  return wasm_u8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(q[0], q[1]), wasm_i16x8_narrow_i32x4(q[2], q[3]));
}

GLOBAL(int) jsimd_can_ycc_rgb(void) { return 1; }

GLOBAL(void)
jsimd_ycc_rgb_convert(j_decompress_ptr cinfo, JSAMPIMAGE input_buf, JDIMENSION input_row, JSAMPARRAY output_buf,
                      int num_rows) {
  const JDIMENSION width = cinfo->output_width;
  const int space = cinfo->out_color_space;
  const int red = rgb_red[space], green = rgb_green[space], blue = rgb_blue[space], size = rgb_pixelsize[space];
  // Sixteen pixels at a time for 3-byte RGB (the only layout jpeg.c asks for); the rest, and any other
  // layout, pixel by pixel.
  const int vector = red == 0 && green == 1 && blue == 2 && size == 3;
  while (--num_rows >= 0) {
    const JSAMPLE* y_row = input_buf[0][input_row];
    const JSAMPLE* cb_row = input_buf[1][input_row];
    const JSAMPLE* cr_row = input_buf[2][input_row];
    input_row++;
    JSAMPLE* out = *output_buf++;
    JDIMENSION col = 0;
    if (vector) {
      for (; col + 16 <= width; col += 16, out += 48) {
        v128_t y[4], cb[4], cr[4];
        widen(wasm_v128_load(y_row + col), 0, y);
        widen(wasm_v128_load(cb_row + col), CENTERJSAMPLE, cb);
        widen(wasm_v128_load(cr_row + col), CENTERJSAMPLE, cr);
        const v128_t R = channel16(y, cr, FIX_1_40200, cr, 0);
        const v128_t G = channel16(y, cb, -FIX_0_34414, cr, -FIX_0_71414);
        const v128_t B = channel16(y, cb, FIX_1_77200, cb, 0);
        // Interleaved as R G B R G B ...: each 16-byte piece from R and G, then from that and B.
        const v128_t a0 = wasm_i8x16_shuffle(R, G, 0, 16, 0, 1, 17, 0, 2, 18, 0, 3, 19, 0, 4, 20, 0, 5);
        const v128_t a1 = wasm_i8x16_shuffle(R, G, 21, 0, 6, 22, 0, 7, 23, 0, 8, 24, 0, 9, 25, 0, 10, 26);
        const v128_t a2 = wasm_i8x16_shuffle(R, G, 0, 11, 27, 0, 12, 28, 0, 13, 29, 0, 14, 30, 0, 15, 31, 0);
        wasm_v128_store(out, wasm_i8x16_shuffle(a0, B, 0, 1, 16, 3, 4, 17, 6, 7, 18, 9, 10, 19, 12, 13, 20, 15));
        wasm_v128_store(out + 16, wasm_i8x16_shuffle(a1, B, 0, 21, 2, 3, 22, 5, 6, 23, 8, 9, 24, 11, 12, 25, 14, 15));
        wasm_v128_store(out + 32, wasm_i8x16_shuffle(a2, B, 26, 1, 2, 27, 4, 5, 28, 7, 8, 29, 10, 11, 30, 13, 14, 31));
      }
    }
    for (; col < width; col++, out += size) {
      ycc_pixel(y_row[col], cb_row[col], cr_row[col], out, red, green, blue);
      if (size == 4) out[6 - red - green - blue] = MAXJSAMPLE;  // the fourth byte, as jdcolor.c sets it
    }
  }
}

// The 12-point 1-D kernel of jpeg_idct_12x12 (jidctint.c), both passes: `z3` is the DC term already scaled and
// rounded as the pass does it, c[1..7] the other inputs; out[k] is output k before the pass's final shift.
// Only additions, subtractions and multiplications come before that shift, so the 32-bit lanes wrap exactly
// as the C code's values do whatever the order of the terms.
static inline void idct_12(v128_t z3, const v128_t c[8], v128_t out[12]) {
  const v128_t c4 = mul(c[4], 10033);  // FIX(1.224744871), c4
  const v128_t tmp10e = wasm_i32x4_add(z3, c4), tmp11e = wasm_i32x4_sub(z3, c4);
  const v128_t z4 = mul(c[2], 11190);  // FIX(1.366025404), c2
  const v128_t z1 = wasm_i32x4_shl(c[2], CONST_BITS), z2 = wasm_i32x4_shl(c[6], CONST_BITS);
  const v128_t d12 = wasm_i32x4_sub(z1, z2);
  const v128_t tmp21 = wasm_i32x4_add(z3, d12), tmp24 = wasm_i32x4_sub(z3, d12);
  const v128_t s12 = wasm_i32x4_add(z4, z2);
  const v128_t tmp20 = wasm_i32x4_add(tmp10e, s12), tmp25 = wasm_i32x4_sub(tmp10e, s12);
  const v128_t e12 = wasm_i32x4_sub(wasm_i32x4_sub(z4, z1), z2);
  const v128_t tmp22 = wasm_i32x4_add(tmp11e, e12), tmp23 = wasm_i32x4_sub(tmp11e, e12);

  const v128_t o1 = c[1], o2 = c[3], o3 = c[5], o4 = c[7];
  const v128_t tmp11 = mul(o2, 10703);  // FIX(1.306562965), c3
  const v128_t tmp14 = mul(o2, -4433);  // -FIX_0_541196100, -c9
  const v128_t t10 = wasm_i32x4_add(o1, o3);
  v128_t tmp15 = mul(wasm_i32x4_add(t10, o4), 7053);                 // c7
  v128_t tmp12 = wasm_i32x4_add(tmp15, mul(t10, 2139));              // c5-c7
  const v128_t tmp10 = wasm_i32x4_add(wasm_i32x4_add(tmp12, tmp11), mul(o1, 2295));  // c1-c5
  v128_t tmp13 = mul(wasm_i32x4_add(o3, o4), -8565);                 // -(c7+c11)
  tmp12 = wasm_i32x4_add(tmp12, wasm_i32x4_sub(wasm_i32x4_add(tmp13, tmp14), mul(o3, 12112)));
  tmp13 = wasm_i32x4_add(tmp13, wasm_i32x4_add(wasm_i32x4_sub(tmp15, tmp11), mul(o4, 12998)));
  tmp15 = wasm_i32x4_add(tmp15, wasm_i32x4_sub(wasm_i32x4_sub(tmp14, mul(o1, 5540)), mul(o4, 16244)));
  const v128_t y1 = wasm_i32x4_sub(o1, o4), y2 = wasm_i32x4_sub(o2, o3);
  const v128_t y3 = mul(wasm_i32x4_add(y1, y2), 4433);               // c9
  const v128_t tmp11o = wasm_i32x4_add(y3, mul(y1, 6270));           // c3-c9
  const v128_t tmp14o = wasm_i32x4_sub(y3, mul(y2, 15137));          // c3+c9

  out[0] = wasm_i32x4_add(tmp20, tmp10);
  out[11] = wasm_i32x4_sub(tmp20, tmp10);
  out[1] = wasm_i32x4_add(tmp21, tmp11o);
  out[10] = wasm_i32x4_sub(tmp21, tmp11o);
  out[2] = wasm_i32x4_add(tmp22, tmp12);
  out[9] = wasm_i32x4_sub(tmp22, tmp12);
  out[3] = wasm_i32x4_add(tmp23, tmp13);
  out[8] = wasm_i32x4_sub(tmp23, tmp13);
  out[4] = wasm_i32x4_add(tmp24, tmp14o);
  out[7] = wasm_i32x4_sub(tmp24, tmp14o);
  out[5] = wasm_i32x4_add(tmp25, tmp15);
  out[6] = wasm_i32x4_sub(tmp25, tmp15);
}

static void idct_12x12(j_decompress_ptr cinfo, jpeg_component_info* compptr, JCOEFPTR coef_block, JSAMPARRAY output_buf,
                 JDIMENSION output_col) {
  (void)cinfo;
  const ISLOW_MULT_TYPE* quant = (const ISLOW_MULT_TYPE*)compptr->dct_table;
  // Pass 1 on columns 0-3 and 4-7: twelve workspace rows each.
  v128_t half[2][12];
  for (int h = 0; h < 2; h++) {
    v128_t c[8];
    for (int k = 0; k < 8; k++) c[k] = dequantize(coef_block + DCTSIZE * k + 4 * h, quant + DCTSIZE * k + 4 * h);
    const v128_t z3 = wasm_i32x4_add(wasm_i32x4_shl(c[0], CONST_BITS), wasm_i32x4_splat(1 << (CONST_BITS - PASS1_BITS - 1)));
    idct_12(z3, c, half[h]);
    for (int r = 0; r < 12; r++) half[h][r] = wasm_i32x4_shr(half[h][r], CONST_BITS - PASS1_BITS);
  }
  // Pass 2, four rows at a time (lane = row).
  for (int group = 0; group < 3; group++) {
    v128_t w[8];
    for (int k = 0; k < 4; k++) {
      w[k] = half[0][4 * group + k];
      w[4 + k] = half[1][4 * group + k];
    }
    transpose(&w[0], &w[1], &w[2], &w[3]);
    transpose(&w[4], &w[5], &w[6], &w[7]);
    const v128_t z3 = wasm_i32x4_shl(wasm_i32x4_add(w[0], wasm_i32x4_splat(1 << (PASS1_BITS + 2))), CONST_BITS);
    v128_t o[12];
    idct_12(z3, w, o);
    for (int k = 0; k < 12; k++) o[k] = range_limit(wasm_i32x4_shr(o[k], CONST_BITS + PASS1_BITS + 3));
    // Back to one vector per row (columns 0-3, 4-7, 8-11), packed to twelve bytes.
    transpose(&o[0], &o[1], &o[2], &o[3]);
    transpose(&o[4], &o[5], &o[6], &o[7]);
    transpose(&o[8], &o[9], &o[10], &o[11]);
    for (int r = 0; r < 4; r++) {
      const v128_t bytes = wasm_u8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(o[r], o[4 + r]),
                                                   wasm_i16x8_narrow_i32x4(o[8 + r], o[8 + r]));
      JSAMPROW out = output_buf[4 * group + r] + output_col;
      wasm_v128_store64_lane(out, bytes, 0);
      wasm_v128_store32_lane(out + 8, bytes, 2);
    }
  }
}

void jpeg_simd_take_over(j_decompress_ptr cinfo) {
  for (int ci = 0; ci < cinfo->num_components; ci++) {
    inverse_DCT_method_ptr* method = &cinfo->idct->inverse_DCT[ci];
    if (*method == jpeg_idct_6x6) *method = idct_6x6;
    else if (*method == jpeg_idct_12x12) *method = idct_12x12;
  }
}
