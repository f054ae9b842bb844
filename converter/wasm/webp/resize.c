// Area-average downscaling of source rows streamed top to bottom into the target image, inside the codec's
// memory, so decoded rows never hold the whole source and the target is encoded where it is written. The
// weights are the exact overlaps of source and target pixels (a box filter over the true footprint, like
// libvips' reduce for large ratios), pre-divided by the footprint so sums are averages. Images that may be
// transparent are averaged on premultiplied alpha, so the colour under fully transparent pixels does not
// bleed into visible neighbours; opaque sources skip the alpha weighting.
//
// The four channels of a pixel are one 128-bit SIMD vector throughout: a tap is one multiply-add.

#include "resize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

// Loads the 4 bytes of a pixel as four floats. RGB rows are read 4 bytes at a time too (the row buffer
// has a byte of slack after its last pixel); the fourth lane is then ignored.
static inline v128_t load_pixel(const uint8_t* p) {
  v128_t bytes = wasm_v128_load32_zero(p);
  return wasm_f32x4_convert_u32x4(wasm_u32x4_extend_low_u16x8(wasm_u16x8_extend_low_u8x16(bytes)));
}

// Rounds four non-negative floats to bytes (saturating) and stores them.
static inline void store_pixel(uint8_t* out, v128_t value) {
  v128_t rounded = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_add(value, wasm_f32x4_splat(0.5f)));
  v128_t words = wasm_u16x8_narrow_i32x4(rounded, rounded);
  v128_t bytes = wasm_u8x16_narrow_i16x8(words, words);
  wasm_v128_store32_lane(out, bytes, 0);
}

// Quantizes each column's taps to weights summing to exactly 1 << 14 and stores them in pairs (a lone last
// tap gets a zero partner), so the opaque horizontal pass takes two source pixels per dot product.
static void make_pairs(Resizer* r) {
  const float* tap = r->taps;
  v128_t* pair = r->pairs;
  for (int x = 0; x < r->target_width; x++) {
    const int count = r->count[x];
    int total = 0, largest = 0;
    for (int t = 0; t < count; t++) {
      total += (int)lrintf(tap[t] * 16384.0f);
      if (tap[t] > tap[largest]) largest = t;
    }
    for (int t = 0; t < count; t += 2) {
      int16_t w[2];
      for (int i = 0; i < 2; i++) {
        const int index = t + i;
        w[i] = index >= count ? 0 : (int16_t)(lrintf(tap[index] * 16384.0f) + (index == largest ? 16384 - total : 0));
      }
      *pair++ = wasm_i16x8_make(w[0], w[1], w[0], w[1], w[0], w[1], w[0], w[1]);
    }
    tap += count;
  }
}

Resizer* resizer_create(int source_width, int source_height, int target_width, int target_height, uint8_t* out,
                        int opaque, int channels) {
  if (target_width < 1 || target_height < 1 || target_width > source_width || target_height > source_height) return 0;
  if (channels != 3 && channels != 4) return 0;
  if (!opaque && channels != 4) return 0;
  Resizer* r = calloc(1, sizeof(Resizer));
  if (!r) return 0;
  r->source_width = source_width;
  r->source_height = source_height;
  r->target_width = target_width;
  r->target_height = target_height;
  r->out = out;
  r->opaque = opaque;
  r->channels = channels;
  r->ratio_y = (double)source_height / target_height;
  const double ratio_x = (double)source_width / target_width;
  // Each target column covers at most ceil(ratio) + 1 source pixels.
  const size_t max_taps = (size_t)target_width * ((size_t)ceil(ratio_x) + 1);
  r->first = malloc(sizeof(int32_t) * target_width);
  r->count = malloc(sizeof(int32_t) * target_width);
  r->taps = malloc(sizeof(float) * max_taps);
  // Opaque rows: the taps again, in pairs of 14-bit fixed-point weights, each pair repeated across a vector.
  if (opaque) r->pairs = aligned_alloc(16, sizeof(v128_t) * (max_taps / 2 + target_width));
  r->sums = aligned_alloc(16, sizeof(float) * 4 * target_width);
  r->carried = aligned_alloc(16, sizeof(float) * 4 * target_width);
  // One row of the source, with slack for the 8-byte loads of a pair of pixels (the second may be padding).
  r->row = calloc(1, (size_t)source_width * channels + 16);
  if (!r->first || !r->count || !r->taps || (opaque && !r->pairs) || !r->sums || !r->carried || !r->row) {
    resizer_free(r);
    return 0;
  }
  r->sums_fresh = r->carried_fresh = 1;
  size_t k = 0;
  for (int x = 0; x < target_width; x++) {
    const double left = x * ratio_x;
    const double right = fmin(source_width, (x + 1) * ratio_x);
    const int first = (int)floor(left);
    int count = 0;
    for (int source = first; source < right; source++) {
      const double overlap = fmin(source + 1, right) - fmax(source, left);
      r->taps[k + count] = (float)(overlap / (right - left));
      count++;
    }
    r->first[x] = first;
    r->count[x] = count;
    k += count;
  }
  if (opaque) make_pairs(r);
  return r;
}

void resizer_free(Resizer* r) {
  if (!r) return;
  free(r->first);
  free(r->count);
  free(r->taps);
  free(r->pairs);
  free(r->sums);
  free(r->carried);
  free(r->row);
  free(r);
}

uint8_t* resizer_row(Resizer* r) { return r->row; }

// Adds `weight` × `value` to the four floats at `into`, or stores it when the row holds nothing yet.
static inline void add_weighted(float* into, int fresh, v128_t value, v128_t weight) {
  const v128_t product = wasm_f32x4_mul(value, weight);
  wasm_v128_store(into, fresh ? product : wasm_f32x4_add(wasm_v128_load(into), product));
}

// Averages one source row across each target column's footprint (four floats a column: premultiplied RGB and
// alpha for transparent sources, RGB and an unused lane for opaque ones) and adds it, weighted, to the target
// row being accumulated and, when the source row straddles two target rows (`next` > 0), to the next one.
static void reduce_row(Resizer* r, const uint8_t* row, float current, float next) {
  const int channels = r->channels;
  const float* tap = r->taps;
  float* const sums = r->sums;
  float* const carried = r->carried;
  const int sums_fresh = r->sums_fresh, carried_fresh = r->carried_fresh;
  const v128_t w_current = wasm_f32x4_splat(current);
  const v128_t w_next = wasm_f32x4_splat(next);
  if (r->opaque) {
    // Two pixels' bytes (8 of RGBA, 6 of RGB) spread to 16-bit lanes as (r0 r1 g0 g1 b0 b1 a0 a1): one dot
    // product with the pair's weights gives the four channel sums.
    const v128_t zero = wasm_i32x4_splat(0);
    const v128_t* pair = r->pairs;
    const v128_t scale = wasm_f32x4_splat(1.0f / 16384);
    for (int x = 0; x < r->target_width; x++) {
      const uint8_t* p = row + (size_t)r->first[x] * channels;
      v128_t sum = zero;
      for (int t = r->count[x]; t > 0; t -= 2, p += 2 * channels, pair++) {
        const v128_t bytes = wasm_v128_load64_zero(p);
        const v128_t lanes = channels == 4
                                 ? wasm_i8x16_shuffle(bytes, zero, 0, 16, 4, 16, 1, 16, 5, 16, 2, 16, 6, 16, 3, 16, 7, 16)
                                 : wasm_i8x16_shuffle(bytes, zero, 0, 16, 3, 16, 1, 16, 4, 16, 2, 16, 5, 16, 16, 16, 16, 16);
        sum = wasm_i32x4_add(sum, wasm_i32x4_dot_i16x8(lanes, *pair));
      }
      const v128_t average = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sum), scale);
      add_weighted(sums + 4 * x, sums_fresh, average, w_current);
      if (next > 0) add_weighted(carried + 4 * x, carried_fresh, average, w_next);
    }
  } else {
    const v128_t one_alpha = wasm_f32x4_make(1, 1, 1, 0);
    const v128_t alpha_lane = wasm_f32x4_make(0, 0, 0, 1);
    for (int x = 0; x < r->target_width; x++) {
      const uint8_t* p = row + (size_t)r->first[x] * 4;
      v128_t sum = wasm_f32x4_splat(0);
      for (int t = r->count[x]; t > 0; t--, p += 4, tap++) {
        // (r, g, b, 1) × alpha × weight: premultiplied colour, and the alpha itself in the last lane.
        const float weight = p[3] * *tap;
        const v128_t pixel = wasm_f32x4_add(wasm_f32x4_mul(load_pixel(p), one_alpha), alpha_lane);
        sum = wasm_f32x4_add(sum, wasm_f32x4_mul(pixel, wasm_f32x4_splat(weight)));
      }
      add_weighted(sums + 4 * x, sums_fresh, sum, w_current);
      if (next > 0) add_weighted(carried + 4 * x, carried_fresh, sum, w_next);
    }
  }
  r->sums_fresh = 0;
  if (next > 0) r->carried_fresh = 0;
}

static void emit_row(Resizer* r) {
  uint8_t* out = r->out + (size_t)r->output_row * r->target_width * 4;
  const float* sums = r->sums;
  if (r->opaque) {
    // Four pixels at a time: rounded and narrowed as store_pixel does, alpha set to 255.
    const v128_t half = wasm_f32x4_splat(0.5f);
    const v128_t alpha = wasm_u32x4_splat(0xff000000u);
    int x = 0;
    for (; x + 4 <= r->target_width; x += 4, out += 16) {
      const float* s = sums + 4 * x;
      const v128_t a = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_add(wasm_v128_load(s), half));
      const v128_t b = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_add(wasm_v128_load(s + 4), half));
      const v128_t c = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_add(wasm_v128_load(s + 8), half));
      const v128_t d = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_add(wasm_v128_load(s + 12), half));
      const v128_t bytes = wasm_u8x16_narrow_i16x8(wasm_u16x8_narrow_i32x4(a, b), wasm_u16x8_narrow_i32x4(c, d));
      wasm_v128_store(out, wasm_v128_or(bytes, alpha));
    }
    for (; x < r->target_width; x++, out += 4) {
      store_pixel(out, wasm_v128_load(sums + 4 * x));
      out[3] = 255;
    }
  } else {
    for (int x = 0; x < r->target_width; x++, out += 4) {
      const v128_t sum = wasm_v128_load(sums + 4 * x);
      const float alpha = wasm_f32x4_extract_lane(sum, 3);
      if (alpha <= 0) {
        memset(out, 0, 4);
        r->saw_transparency = 1;
        continue;
      }
      // Colour = premultiplied sum / alpha sum; alpha = the alpha average (already in the last lane).
      const v128_t scale = wasm_f32x4_make(1 / alpha, 1 / alpha, 1 / alpha, 1);
      store_pixel(out, wasm_f32x4_min(wasm_f32x4_mul(sum, scale), wasm_f32x4_splat(255)));
      if (out[3] < 255) r->saw_transparency = 1;
    }
  }
  r->output_row++;
}

int resizer_push(Resizer* r) { return resizer_push_from(r, r->row); }

int resizer_push_from(Resizer* r, const uint8_t* row) {
  if (r->rows_pushed >= r->source_height) return -1;
  const int y = r->rows_pushed++;
  const double top = r->output_row * r->ratio_y;
  const double bottom = fmin(r->source_height, (r->output_row + 1) * r->ratio_y);
  const double in_current = (fmin(y + 1, bottom) - fmax(y, top)) / (bottom - top);
  // A source row straddling a target row's bottom gives the rest of its weight to the next target row
  // (a ratio of at least 1 means it reaches no further).
  const double rest = y + 1 - bottom;
  float in_next = 0;
  if (rest > 1e-9 && r->output_row + 1 < r->target_height) {
    const double next_span = fmin(r->source_height, (r->output_row + 2) * r->ratio_y) - bottom;
    in_next = (float)(rest / next_span);
  }
  reduce_row(r, row, (float)in_current, in_next);
  if (y + 1 >= bottom - 1e-9 || r->rows_pushed == r->source_height) {
    if (r->output_row < r->target_height) emit_row(r);
    float* swap = r->sums;
    r->sums = r->carried;
    r->sums_fresh = r->carried_fresh;
    r->carried = swap;
    r->carried_fresh = 1;
  }
  return r->rows_pushed;
}

int resizer_saw_transparency(const Resizer* r) { return r->saw_transparency; }

int resizer_rows_pushed(const Resizer* r) { return r->rows_pushed; }
