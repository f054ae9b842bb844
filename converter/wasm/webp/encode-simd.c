// WebAssembly SIMD versions of libwebp dsp functions whose SSE2 code translates poorly to wasm SIMD, installed
// over libwebp's function pointers once its own initialisation has run (nothing in libwebp's files changes).
// Each gives the same bytes as the function it replaces (libwebp's C and SSE2 versions agree bit for bit).
//
// The rescaler's row import and export for shrinking (decode_scaled and the lossless stream, e.g. a 4K
// screenshot down to 2560 x 1440): libwebp's SSE2 code multiplies 32-bit fixed-point values into 64-bit
// products with _mm_mul_epu32 and shifts 64-bit lanes, which emscripten's x86 headers translate to i64x2
// arithmetic V8 emulates lane by lane; wasm's u64x2.extmul_{low,high}_u32x4 is the same product natively.

#include <stdint.h>
#include <wasm_simd128.h>

#include "src/dsp/dsp.h"
#include "src/utils/rescaler_utils.h"

#define ROUNDER (WEBP_RESCALER_ONE >> 1)

// The high 32 bits of a[i] * b[i] + rounder (64-bit products), lane by lane: libwebp's MULT_FIX (rounder
// 2^31) or MULT_FIX_FLOOR (rounder 0) with WEBP_RESCALER_RFIX = 32.
static inline v128_t MulFix(v128_t a, v128_t b, v128_t rounder) {
  const v128_t lo = wasm_i64x2_add(wasm_u64x2_extmul_low_u32x4(a, b), rounder);
  const v128_t hi = wasm_i64x2_add(wasm_u64x2_extmul_high_u32x4(a, b), rounder);
  return wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7);
}

// WebPRescalerImportRowShrink_C for 4 channels, one output pixel (its 4 channels in one vector) at a time. The
// sums are 32-bit lanes, so unlike the SSE2 version there is no ratio limit: C's uint32 arithmetic exactly.
static void RescalerImportRowShrink(WebPRescaler* const wrk, const uint8_t* src) {
  if (wrk->num_channels != 4) {
    WebPRescalerImportRowShrink_C(wrk, src);
    return;
  }
  const int x_sub = wrk->x_sub, x_add = wrk->x_add;
  const v128_t mult_sub = wasm_i32x4_splat(x_sub);
  const v128_t scale = wasm_i32x4_splat((int32_t)wrk->fx_scale);
  const v128_t rounder = wasm_i64x2_splat(ROUNDER);
  v128_t sum = wasm_i32x4_splat(0);
  rescaler_t* frow = wrk->frow;
  const rescaler_t* const frow_end = wrk->frow + 4 * wrk->dst_width;
  int accum = 0;
  for (; frow < frow_end; frow += 4) {
    v128_t base = wasm_i32x4_splat(0);
    accum += x_add;
    while (accum > 0) {
      base = wasm_u32x4_extend_low_u16x8(wasm_u16x8_extend_low_u8x16(wasm_v128_load32_zero(src)));
      src += 4;
      sum = wasm_i32x4_add(sum, base);
      accum -= x_sub;
    }
    const v128_t frac = wasm_i32x4_mul(base, wasm_i32x4_splat(-accum));
    wasm_v128_store(frow, wasm_i32x4_sub(wasm_i32x4_mul(sum, mult_sub), frac));
    sum = MulFix(frac, scale, rounder);  // fresh fractional start for the next pixel
  }
}

// Narrows four 32-bit results to bytes as the SSE2 version does (signed saturation to 16 bits, then unsigned
// to 8; the C version's `v > 255 ? 255 : v` for every value the rescaler produces).
static inline void Store4(uint8_t* dst, v128_t v) {
  const v128_t v16 = wasm_i16x8_narrow_i32x4(v, v);
  wasm_v128_store32_lane(dst, wasm_u8x16_narrow_i16x8(v16, v16), 0);
}

static void RescalerExportRowShrink(WebPRescaler* const wrk) {
  int x_out;
  uint8_t* const dst = wrk->dst;
  rescaler_t* const irow = wrk->irow;
  const int x_out_max = wrk->dst_width * wrk->num_channels;
  const rescaler_t* const frow = wrk->frow;
  const uint32_t yscale = wrk->fy_scale * (-wrk->y_accum);
  const v128_t mult_xy = wasm_i32x4_splat((int32_t)wrk->fxy_scale);
  const v128_t rounder = wasm_i64x2_splat(ROUNDER);
  if (yscale) {
    const v128_t mult_y = wasm_i32x4_splat((int32_t)yscale);
    const v128_t zero = wasm_i64x2_splat(0);
    for (x_out = 0; x_out + 4 <= x_out_max; x_out += 4) {
      const v128_t frac = MulFix(wasm_v128_load(frow + x_out), mult_y, zero);
      const v128_t v = MulFix(wasm_i32x4_sub(wasm_v128_load(irow + x_out), frac), mult_xy, rounder);
      wasm_v128_store(irow + x_out, frac);  // new fractional start
      Store4(dst + x_out, v);
    }
    for (; x_out < x_out_max; ++x_out) {
      const uint32_t frac = (uint32_t)(((uint64_t)frow[x_out] * yscale) >> WEBP_RESCALER_RFIX);
      const int v = (int)(((uint64_t)(irow[x_out] - frac) * wrk->fxy_scale + ROUNDER) >> WEBP_RESCALER_RFIX);
      dst[x_out] = (v > 255) ? 255u : (uint8_t)v;
      irow[x_out] = frac;
    }
  } else {
    const v128_t zero = wasm_i32x4_splat(0);
    for (x_out = 0; x_out + 4 <= x_out_max; x_out += 4) {
      const v128_t v = MulFix(wasm_v128_load(irow + x_out), mult_xy, rounder);
      wasm_v128_store(irow + x_out, zero);
      Store4(dst + x_out, v);
    }
    for (; x_out < x_out_max; ++x_out) {
      const int v = (int)(((uint64_t)irow[x_out] * wrk->fxy_scale + ROUNDER) >> WEBP_RESCALER_RFIX);
      dst[x_out] = (v > 255) ? 255u : (uint8_t)v;
      irow[x_out] = 0;
    }
  }
}

// WebPMultARGBRow (premultiplies alpha before the rescaler, un-premultiplies its output rows): four pixels at a
// time, and a group whose alphas are all 255 is left as it is, which is what libwebp's versions do pixel by
// pixel (the SSE2 one multiplies every pixel, also opaque ones, and only the forward way; the inverse is C
// only). Other groups go to the function libwebp installed, so they get exactly its bytes.
static void (*LibwebpMultARGBRow)(uint32_t* const ptr, int width, int inverse);

static void MultARGBRow(uint32_t* const ptr, int width, int inverse) {
  const v128_t opaque = wasm_u32x4_splat(0xff000000u);
  int x = 0;
  for (; x + 4 <= width; x += 4) {
    if (!wasm_i32x4_all_true(wasm_u32x4_ge(wasm_v128_load(ptr + x), opaque))) LibwebpMultARGBRow(ptr + x, 4, inverse);
  }
  if (x < width) LibwebpMultARGBRow(ptr + x, width - x, inverse);
}

// libwebp's FTransform (the VP8 forward DCT of src - ref, 4 x 4, BPS apart; FTransform_C) in 32-bit lanes,
// returned as four vectors: out[0..3], out[4..7], out[8..11], out[12..15] of the C version.
static inline void FTransform(const uint8_t* src, const uint8_t* ref, v128_t out[4]) {
  v128_t s = wasm_v128_load32_zero(src);
  v128_t r = wasm_v128_load32_zero(ref);
  s = wasm_v128_load32_lane(src + BPS, s, 1);
  r = wasm_v128_load32_lane(ref + BPS, r, 1);
  s = wasm_v128_load32_lane(src + 2 * BPS, s, 2);
  r = wasm_v128_load32_lane(ref + 2 * BPS, r, 2);
  s = wasm_v128_load32_lane(src + 3 * BPS, s, 3);
  r = wasm_v128_load32_lane(ref + 3 * BPS, r, 3);
  // Columns: byte j of every row together (d[row][j] for row 0..3 in lanes 0..3).
  s = wasm_i8x16_shuffle(s, s, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  r = wasm_i8x16_shuffle(r, r, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const v128_t d01 = wasm_i16x8_sub(wasm_u16x8_extend_low_u8x16(s), wasm_u16x8_extend_low_u8x16(r));
  const v128_t d23 = wasm_i16x8_sub(wasm_u16x8_extend_high_u8x16(s), wasm_u16x8_extend_high_u8x16(r));
  const v128_t c0 = wasm_i32x4_extend_low_i16x8(d01), c1 = wasm_i32x4_extend_high_i16x8(d01);
  const v128_t c2 = wasm_i32x4_extend_low_i16x8(d23), c3 = wasm_i32x4_extend_high_i16x8(d23);
  const v128_t k2217 = wasm_i32x4_splat(2217), k5352 = wasm_i32x4_splat(5352);
  // First pass, each row on its own (lane = row): tmp[k + 4 * row] in tk.
  v128_t a0 = wasm_i32x4_add(c0, c3), a1 = wasm_i32x4_add(c1, c2);
  v128_t a2 = wasm_i32x4_sub(c1, c2), a3 = wasm_i32x4_sub(c0, c3);
  const v128_t t0 = wasm_i32x4_shl(wasm_i32x4_add(a0, a1), 3);
  const v128_t t1 = wasm_i32x4_shr(
      wasm_i32x4_add(wasm_i32x4_add(wasm_i32x4_mul(a2, k2217), wasm_i32x4_mul(a3, k5352)), wasm_i32x4_splat(1812)), 9);
  const v128_t t2 = wasm_i32x4_shl(wasm_i32x4_sub(a0, a1), 3);
  const v128_t t3 = wasm_i32x4_shr(
      wasm_i32x4_add(wasm_i32x4_sub(wasm_i32x4_mul(a3, k2217), wasm_i32x4_mul(a2, k5352)), wasm_i32x4_splat(937)), 9);
  // Transposed: row i of tmp (tmp[4 * i + 0..3]) in ri, so lane = column in the second pass.
  const v128_t u0 = wasm_i32x4_shuffle(t0, t1, 0, 4, 1, 5), u1 = wasm_i32x4_shuffle(t0, t1, 2, 6, 3, 7);
  const v128_t u2 = wasm_i32x4_shuffle(t2, t3, 0, 4, 1, 5), u3 = wasm_i32x4_shuffle(t2, t3, 2, 6, 3, 7);
  const v128_t r0 = wasm_i64x2_shuffle(u0, u2, 0, 2), r1 = wasm_i64x2_shuffle(u0, u2, 1, 3);
  const v128_t r2 = wasm_i64x2_shuffle(u1, u3, 0, 2), r3 = wasm_i64x2_shuffle(u1, u3, 1, 3);
  a0 = wasm_i32x4_add(r0, r3);
  a1 = wasm_i32x4_add(r1, r2);
  a2 = wasm_i32x4_sub(r1, r2);
  a3 = wasm_i32x4_sub(r0, r3);
  const v128_t seven = wasm_i32x4_splat(7);
  out[0] = wasm_i32x4_shr(wasm_i32x4_add(wasm_i32x4_add(a0, a1), seven), 4);
  // + (a3 != 0): the comparison gives -1 where a3 == 0, so add 1 and then the mask.
  out[1] = wasm_i32x4_add(
      wasm_i32x4_shr(wasm_i32x4_add(wasm_i32x4_add(wasm_i32x4_mul(a2, k2217), wasm_i32x4_mul(a3, k5352)),
                                    wasm_i32x4_splat(12000 + (1 << 16))),
                     16),
      wasm_i32x4_eq(a3, wasm_i32x4_splat(0)));
  out[2] = wasm_i32x4_shr(wasm_i32x4_add(wasm_i32x4_sub(a0, a1), seven), 4);
  out[3] = wasm_i32x4_shr(
      wasm_i32x4_add(wasm_i32x4_sub(wasm_i32x4_mul(a3, k2217), wasm_i32x4_mul(a2, k5352)), wasm_i32x4_splat(51000)),
      16);
}

// VP8CollectHistogram (the encoder's analysis pass: 80 4 x 4 blocks a macroblock at method 2). libwebp's
// version calls VP8FTransform through its pointer, stores the coefficients, and adds each block's 16 bins
// into one histogram in memory, so increments of the same bin (most of them are bin 0) wait for each other's
// store. Here the transform is inline, the bins (min(|coefficient| >> 3, 31), as libwebp's) come from
// registers, and coefficient k of a block goes to histogram k % 4: four independent chains, summed at the end.
static void CollectHistogram(const uint8_t* ref, const uint8_t* pred, int start_block, int end_block,
                             VP8Histogram* const histo) {
  const v128_t max_coeff = wasm_i32x4_splat(MAX_COEFF_THRESH);
  int sub[4][MAX_COEFF_THRESH + 1] = {{0}};
  int distribution[MAX_COEFF_THRESH + 1];
  for (int j = start_block; j < end_block; ++j) {
    v128_t out[4];
    FTransform(ref + VP8DspScan[j], pred + VP8DspScan[j], out);
    for (int i = 0; i < 4; ++i) {
      const v128_t bin = wasm_i32x4_min(wasm_i32x4_shr(wasm_i32x4_abs(out[i]), 3), max_coeff);
      ++sub[0][wasm_i32x4_extract_lane(bin, 0)];
      ++sub[1][wasm_i32x4_extract_lane(bin, 1)];
      ++sub[2][wasm_i32x4_extract_lane(bin, 2)];
      ++sub[3][wasm_i32x4_extract_lane(bin, 3)];
    }
  }
  for (int k = 0; k <= MAX_COEFF_THRESH; k += 4) {
    const v128_t total = wasm_i32x4_add(wasm_i32x4_add(wasm_v128_load(&sub[0][k]), wasm_v128_load(&sub[1][k])),
                                        wasm_i32x4_add(wasm_v128_load(&sub[2][k]), wasm_v128_load(&sub[3][k])));
    wasm_v128_store(&distribution[k], total);
  }
  VP8SetHistogramData(distribution, histo);
}

// Run by the module's _initialize (a reactor's C constructors). libwebp's init functions run their body once
// (WEBP_DSP_INIT_FUNC), so the pointers set here stay when libwebp calls them again.
__attribute__((constructor)) static void InstallWasmSimd(void) {
  WebPRescalerDspInit();
  WebPRescalerImportRowShrink = RescalerImportRowShrink;
  WebPRescalerExportRowShrink = RescalerExportRowShrink;
  VP8EncDspInit();
  VP8CollectHistogram = CollectHistogram;
  WebPInitAlphaProcessing();
  LibwebpMultARGBRow = WebPMultARGBRow;
  WebPMultARGBRow = MultARGBRow;
}
