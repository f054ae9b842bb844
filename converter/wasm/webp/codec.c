// Our glue around libwebp 1.2.4 (Debian's source package, see build.sh), built as a standalone wasm module
// for the Worker's conversion pipeline (converter/src/convert/webp-codec.ts). Everything runs in one linear
// memory, so pixels decoded here are encoded here without ever leaving the instance.
//
// Why not libwebp's own entry points as the npm builds expose them: those take the RGBA from JS (copied in,
// then copied again by embind's std::string), keep it for the whole encode, code alpha with the lossless
// encoder (20-35 bytes per pixel of working memory) and collect the output in the heap. Here the RGBA is
// already in this heap, is imported as opaque (the alpha plane is written by alpha-chunk.ts, reading the
// same buffer in place before this call), is freed as soon as libwebp holds its YUV copy, and the output
// leaves through the writer import as libwebp produces it: 5.6 bytes per output pixel at method 2.

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

#include "src/dsp/yuv.h"
#include "src/webp/decode.h"
#include "src/webp/encode.h"

#define EXPORT __attribute__((used, visibility("default")))

// Host function (webp-codec.ts): copies `size` bytes at `data` out of the heap. Returns 0 to abort the encode.
__attribute__((import_module("env"), import_name("write_output"))) extern int write_output(const uint8_t* data,
                                                                                             size_t size);

static int StreamWriter(const uint8_t* data, size_t size, const WebPPicture* picture) {
  (void)picture;
  return write_output(data, size);
}

// libwebp's WebPCleanupTransparentArea (YUV branch, src/enc/picture_tools_enc.c, identical in 1.2.4) reading
// alpha from the RGBA input (stride 4) instead of picture->a. An RGBX import has no alpha plane, so libwebp
// itself skips this step; without it the colour hidden under transparent pixels (often noise or a stale
// background) is coded at full cost. libwebp's own RGBA path also weights chroma by alpha: see
// FillTransparentColour, which does that part here.
#define SIZE 8
#define SIZE2 (SIZE / 2)

// What FillTransparentColour learns of each 8 x 8 block (one byte a block, row by row).
#define BLOCK_VISIBLE 1  // some alpha above 0
#define BLOCK_HIDDEN 2   // some alpha 0
#define BLOCK_BORDER 4   // no alpha above 0, a neighbouring block has: filled with the neighbours' colour

// Sets the luma of transparent pixels of a block to the mean of its visible ones; returns 1 if all are transparent.
static int SmoothenBlock(const uint8_t* a_ptr, int a_stride, uint8_t* y_ptr, int y_stride, int width, int height) {
  int sum = 0, count = 0, x, y;
  const uint8_t* alpha_ptr = a_ptr;
  uint8_t* luma_ptr = y_ptr;
  for (y = 0; y < height; ++y) {
    for (x = 0; x < width; ++x) {
      if (alpha_ptr[4 * x] != 0) {
        ++count;
        sum += luma_ptr[x];
      }
    }
    alpha_ptr += a_stride;
    luma_ptr += y_stride;
  }
  if (count > 0 && count < width * height) {
    const uint8_t avg_u8 = (uint8_t)(sum / count);
    alpha_ptr = a_ptr;
    luma_ptr = y_ptr;
    for (y = 0; y < height; ++y) {
      for (x = 0; x < width; ++x) {
        if (alpha_ptr[4 * x] == 0) luma_ptr[x] = avg_u8;
      }
      alpha_ptr += a_stride;
      luma_ptr += y_stride;
    }
  }
  return (count == 0);
}

static void Flatten(uint8_t* ptr, int v, int stride, int size) {
  int y;
  for (y = 0; y < size; ++y) {
    memset(ptr, v, size);
    ptr += stride;
  }
}

// `blocks`: FillTransparentColour's map of the 8 x 8 blocks (NULL if it had no memory for it). A fully
// transparent block it filled with its neighbours' colour (BLOCK_BORDER) is flattened to that colour, and the run
// after it goes on in it, rather than taking the run's first block's colour (libwebp's rule): that one is often
// the colour under the transparent area (black), and the loop filter and chroma averaging would carry it
// into the visible pixels across the block's edge.
static void CleanupTransparentArea(WebPPicture* picture, const uint8_t* rgba, const uint8_t* blocks) {
  const int width = picture->width, height = picture->height;
  const int blocks_wide = (width + SIZE - 1) / SIZE;
  const int y_stride = picture->y_stride, uv_stride = picture->uv_stride, a_stride = 4 * width;
  uint8_t* y_ptr = picture->y;
  uint8_t* u_ptr = picture->u;
  uint8_t* v_ptr = picture->v;
  const uint8_t* a_ptr = rgba + 3;
  int values[3] = {0};
  int x, y;
  for (y = 0; y + SIZE <= height; y += SIZE) {
    int need_reset = 1;
    for (x = 0; x + SIZE <= width; x += SIZE) {
      if (SmoothenBlock(a_ptr + 4 * x, a_stride, y_ptr + x, y_stride, SIZE, SIZE)) {
        // A run of fully transparent blocks takes the values of its first block: flat, so nearly free to code.
        if (need_reset || (blocks != NULL && (blocks[(y / SIZE) * blocks_wide + x / SIZE] & BLOCK_BORDER))) {
          values[0] = y_ptr[x];
          values[1] = u_ptr[x >> 1];
          values[2] = v_ptr[x >> 1];
          need_reset = 0;
        }
        Flatten(y_ptr + x, values[0], y_stride, SIZE);
        Flatten(u_ptr + (x >> 1), values[1], uv_stride, SIZE2);
        Flatten(v_ptr + (x >> 1), values[2], uv_stride, SIZE2);
      } else {
        need_reset = 1;
      }
    }
    if (x < width) SmoothenBlock(a_ptr + 4 * x, a_stride, y_ptr + x, y_stride, width - x, SIZE);
    a_ptr += SIZE * a_stride;
    y_ptr += SIZE * y_stride;
    u_ptr += SIZE2 * uv_stride;
    v_ptr += SIZE2 * uv_stride;
  }
  if (y < height) {
    const int sub_height = height - y;
    for (x = 0; x + SIZE <= width; x += SIZE) {
      SmoothenBlock(a_ptr + 4 * x, a_stride, y_ptr + x, y_stride, SIZE, sub_height);
    }
    if (x < width) SmoothenBlock(a_ptr + 4 * x, a_stride, y_ptr + x, y_stride, width - x, sub_height);
  }
}

// Gives every fully transparent pixel (alpha 0) the colour of its visible neighbours, in place, before the
// opaque (RGBX) import. libwebp averages chroma over 2 x 2 pixels; its RGBA import weights that average by
// alpha, the RGBX import does not, so without this an opaque pixel beside transparent ones takes on part of
// the colour hidden under them (a yellow pixel next to transparent black came out (240, 237, 133)). Per 2 x 2
// block, transparent pixels take the alpha-weighted mean of the block's visible pixels; in a block with none,
// the mean of the visible pixels of its 8 x 8 block (the chroma transform's area), so no hidden colour
// reaches a visible pixel through the transform either. 8 x 8 blocks without a visible pixel: see
// FillTransparentColour. Alpha is not changed (its plane was coded before this call).
static void MeanOfVisible(const uint8_t* rgba, int stride, int x0, int y0, int x1, int y1, uint8_t out[3]) {
  uint32_t r = 0, g = 0, b = 0, a = 0;
  for (int y = y0; y < y1; ++y) {
    const uint8_t* p = rgba + (size_t)y * stride + 4 * x0;
    for (int x = x0; x < x1; ++x, p += 4) {
      r += p[0] * p[3];
      g += p[1] * p[3];
      b += p[2] * p[3];
      a += p[3];
    }
  }
  if (a == 0) return;
  out[0] = (uint8_t)((r + a / 2) / a);
  out[1] = (uint8_t)((g + a / 2) / a);
  out[2] = (uint8_t)((b + a / 2) / a);
}

// Maps the blocks (BLOCK_VISIBLE, BLOCK_HIDDEN) into `blocks`.
static void MapBlocks(const uint8_t* rgba, int width, int height, uint8_t* blocks) {
  const int stride = 4 * width;
  for (int by = 0; by < height; by += SIZE) {
    const int by1 = by + SIZE < height ? by + SIZE : height;
    for (int bx = 0; bx < width; bx += SIZE) {
      const int bx1 = bx + SIZE < width ? bx + SIZE : width;
      uint8_t flags = 0;
      for (int y = by; y < by1; ++y) {
        for (int x = bx; x < bx1; ++x) flags |= rgba[(size_t)y * stride + 4 * x + 3] != 0 ? BLOCK_VISIBLE : BLOCK_HIDDEN;
      }
      *blocks++ = flags;
    }
  }
}

// The 8 x 8 blocks without a visible pixel beside one with some (BLOCK_BORDER) are filled whole with the
// alpha-weighted mean colour of the visible pixels of the 3 x 3 blocks around them, so that the loop filter
// across their edges (up to 3 pixels deep on each side) and the prediction from them meet the visible pixels'
// colour, not the one hidden under the transparent area; CleanupTransparentArea keeps that colour. A
// macroblock (16 x 16) holding a visible pixel then holds no hidden colour at all. Blocks further away are left
// to CleanupTransparentArea, which flattens them. `blocks` may be NULL (no memory for the map): then only
// blocks with visible pixels are filled.
static void FillTransparentColour(uint8_t* rgba, int width, int height, uint8_t* blocks) {
  const int stride = 4 * width;
  const int blocks_wide = (width + SIZE - 1) / SIZE, blocks_high = (height + SIZE - 1) / SIZE;
  if (blocks != NULL) MapBlocks(rgba, width, height, blocks);
  for (int by = 0; by < height; by += SIZE) {
    const int by1 = by + SIZE < height ? by + SIZE : height;
    for (int bx = 0; bx < width; bx += SIZE) {
      const int bx1 = bx + SIZE < width ? bx + SIZE : width;
      int visible = 0, hidden = 0;
      if (blocks != NULL) {
        const int i = (by / SIZE) * blocks_wide + bx / SIZE;
        visible = blocks[i] & BLOCK_VISIBLE;
        hidden = blocks[i] & BLOCK_HIDDEN;
        if (!visible) {
          const int row0 = by / SIZE > 0 ? by / SIZE - 1 : 0, row1 = by / SIZE + 1 < blocks_high ? by / SIZE + 1 : by / SIZE;
          const int col0 = bx / SIZE > 0 ? bx / SIZE - 1 : 0, col1 = bx / SIZE + 1 < blocks_wide ? bx / SIZE + 1 : bx / SIZE;
          int beside = 0;
          for (int row = row0; row <= row1; ++row)
            for (int col = col0; col <= col1; ++col) beside |= blocks[row * blocks_wide + col] & BLOCK_VISIBLE;
          if (!beside) continue;
          uint8_t fill[3] = {0, 0, 0};
          const int y1 = (row1 + 1) * SIZE < height ? (row1 + 1) * SIZE : height;
          const int x1 = (col1 + 1) * SIZE < width ? (col1 + 1) * SIZE : width;
          MeanOfVisible(rgba, stride, col0 * SIZE, row0 * SIZE, x1, y1, fill);
          for (int y = by; y < by1; ++y)
            for (int x = bx; x < bx1; ++x) memcpy(rgba + (size_t)y * stride + 4 * x, fill, 3);
          blocks[i] |= BLOCK_BORDER;
          continue;
        }
      } else {
        for (int y = by; y < by1; ++y) {
          for (int x = bx; x < bx1; ++x) {
            if (rgba[(size_t)y * stride + 4 * x + 3] != 0) visible = 1;
            else hidden = 1;
          }
        }
      }
      if (!visible || !hidden) continue;
      uint8_t block[3] = {0, 0, 0};
      MeanOfVisible(rgba, stride, bx, by, bx1, by1, block);
      for (int y = by; y < by1; y += 2) {
        const int y1 = y + 2 < by1 ? y + 2 : by1;
        for (int x = bx; x < bx1; x += 2) {
          const int x1 = x + 2 < bx1 ? x + 2 : bx1;
          uint8_t fill[3] = {block[0], block[1], block[2]};
          MeanOfVisible(rgba, stride, x, y, x1, y1, fill);
          for (int yy = y; yy < y1; ++yy) {
            for (int xx = x; xx < x1; ++xx) {
              uint8_t* p = rgba + (size_t)yy * stride + 4 * xx;
              if (p[3] == 0) memcpy(p, fill, 3);
            }
          }
        }
      }
    }
  }
}

// Whether any of the `pixels` RGBA pixels at `rgba` has an alpha below `bound` (1: fully transparent ones;
// 255: any transparency), 16 bytes at a time.
static int AnyAlphaBelow(const uint8_t* rgba, size_t pixels, uint8_t bound) {
  const v128_t alpha_lanes = wasm_u32x4_splat(0xff000000u);
  const v128_t limit = wasm_u8x16_splat(bound);
  size_t i = 0;
  for (; i + 16 <= pixels; i += 16) {
    const uint8_t* p = rgba + 4 * i;
    const v128_t below = wasm_v128_or(wasm_v128_or(wasm_u8x16_lt(wasm_v128_load(p), limit),
                                                   wasm_u8x16_lt(wasm_v128_load(p + 16), limit)),
                                      wasm_v128_or(wasm_u8x16_lt(wasm_v128_load(p + 32), limit),
                                                   wasm_u8x16_lt(wasm_v128_load(p + 48), limit)));
    if (wasm_v128_any_true(wasm_v128_and(below, alpha_lanes))) return 1;
  }
  for (; i < pixels; i++)
    if (rgba[4 * i + 3] < bound) return 1;
  return 0;
}

// Rewrites the `pixels` RGBA pixels at `rgba` as RGB in place (3 bytes each, from the start), 4 pixels a step.
// Each 16-byte store ends at or before where the next load begins, so it never overwrites a pixel not yet read.
static void PackRgbaAsRgb(uint8_t* rgba, size_t pixels) {
  const v128_t rgb_lanes = wasm_i8x16_make(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  size_t i = 0;
  for (; i + 4 <= pixels; i += 4) wasm_v128_store(rgba + 3 * i, wasm_i8x16_swizzle(wasm_v128_load(rgba + 4 * i), rgb_lanes));
  for (; i < pixels; i++) memmove(rgba + 3 * i, rgba + 4 * i, 3);
}

// Whether any alpha of the width x height RGBA at `rgba` is below 255 (the encoder then writes an ALPH chunk).
EXPORT int rgba_has_transparency(const uint8_t* rgba, int pixels) {
  return pixels > 0 && AnyAlphaBelow(rgba, (size_t)pixels, 255);
}

// Chroma weighted by alpha, as libwebp's RGBA import computes it (picture_csp_enc.c, AccumulateRGBA with
// USE_GAMMA_COMPRESSION): the RGBX import averages the colour of each 2 x 2 block for U and V without alpha,
// so a faint pixel tints its opaque neighbours' chroma (an opaque (200, 100, 50) pixel beside black ones of
// alpha 8 came out (155, 113, 91)). After that import, every block whose alphas differ gets libwebp's
// alpha-weighted average instead (blocks of one alpha: the weighted average is the plain one). libwebp's
// tables are static there, so they are made here with its formulas; 4 * sum / a is its exact division
// (the variant without its inverse table).
#define GAMMA_FIX 12
#define GAMMA_TAB_FIX 7
#define GAMMA_TAB_SIZE (1 << (GAMMA_FIX - GAMMA_TAB_FIX))
static int linear_to_gamma[GAMMA_TAB_SIZE + 1];
static uint16_t gamma_to_linear[256];
static int gamma_ready;

static void InitGamma(void) {
  if (gamma_ready) return;
  const double scale = (double)(1 << GAMMA_TAB_FIX) / ((1 << GAMMA_FIX) - 1), norm = 1. / 255.;
  for (int v = 0; v <= 255; ++v) gamma_to_linear[v] = (uint16_t)(pow(norm * v, 0.80) * ((1 << GAMMA_FIX) - 1) + .5);
  for (int v = 0; v <= GAMMA_TAB_SIZE; ++v) linear_to_gamma[v] = (int)(255. * pow(scale * v, 1. / 0.80) + .5);
  gamma_ready = 1;
}

// libwebp's LinearToGamma(v, 0): a linear value times 4 to the gamma scale times 4 that VP8RGBToU/V expect.
static int LinearToGamma(uint32_t v) {
  const int position = v >> (GAMMA_TAB_FIX + 2), fraction = v & ((1 << GAMMA_TAB_FIX << 2) - 1);
  const int y = linear_to_gamma[position + 1] * fraction + linear_to_gamma[position] * ((1 << GAMMA_TAB_FIX << 2) - fraction);
  return (y + (1 << GAMMA_TAB_FIX >> 1)) >> GAMMA_TAB_FIX;
}

// The alpha-weighted gamma average (times 4) of channel `c` of the four pixels at p[0..3] of total alpha `a`.
static int WeightedChannel(const uint8_t* const p[4], int c, uint32_t a) {
  uint32_t sum = 0;
  for (int i = 0; i < 4; ++i) sum += p[i][3] * gamma_to_linear[p[i][c]];
  return LinearToGamma(4 * sum / a);
}

static void WeightChromaByAlpha(WebPPicture* picture, const uint8_t* rgba) {
  const int width = picture->width, height = picture->height;
  const size_t stride = (size_t)width * 4;
  InitGamma();
  for (int y = 0; y < height; y += 2) {
    // A last odd row or column counts twice, as libwebp's import does (its SUM2 and rgb_stride 0).
    const uint8_t* const row = rgba + (size_t)y * stride;
    const uint8_t* const below = y + 1 < height ? row + stride : row;
    uint8_t* const u = picture->u + (size_t)(y >> 1) * picture->uv_stride;
    uint8_t* const v = picture->v + (size_t)(y >> 1) * picture->uv_stride;
    for (int x = 0; x < width; x += 2) {
      const int right = x + 1 < width ? 4 : 0;
      const uint8_t* const p[4] = {row + 4 * x, row + 4 * x + right, below + 4 * x, below + 4 * x + right};
      const uint8_t a0 = p[0][3];
      if (p[1][3] == a0 && p[2][3] == a0 && p[3][3] == a0) continue;
      const uint32_t a = (uint32_t)a0 + p[1][3] + p[2][3] + p[3][3];
      const int r = WeightedChannel(p, 0, a), g = WeightedChannel(p, 1, a), b = WeightedChannel(p, 2, a);
      u[x >> 1] = (uint8_t)VP8RGBToU(r, g, b, YUV_HALF << 2);
      v[x >> 1] = (uint8_t)VP8RGBToV(r, g, b, YUV_HALF << 2);
    }
  }
}

// Returned by encode_rgba when the arguments are out of range (libwebp's own codes are 0..10).
#define ENCODE_INVALID_ARGUMENT 100

// Encodes the width x height RGBA at `rgba` (malloc'd in this heap; rewritten, then always freed here) as a
// lossy simple-format WebP ("RIFF" + "VP8 " chunk), ignoring alpha except to hide the colour under transparent pixels. The
// file leaves through write_output in pieces as libwebp writes it. `opaque`: the caller knows every alpha is 255
// (its source has no alpha), so nothing is hidden and the scan for it is skipped. Returns 0, or libwebp's
// WebPEncodingError.
EXPORT int encode_rgba(uint8_t* rgba, int width, int height, float quality, int method, int opaque) {
  WebPConfig config;
  WebPPicture picture;
  int ok;
  if (rgba == NULL || width <= 0 || height <= 0 || width > WEBP_MAX_DIMENSION || height > WEBP_MAX_DIMENSION ||
      !WebPConfigInit(&config) || !WebPPictureInit(&picture)) {
    free(rgba);
    return ENCODE_INVALID_ARGUMENT;
  }
  // The remaining settings are libwebp's defaults, which are also @jsquash/webp's defaultOptions.
  config.quality = quality;
  config.method = method;
  if (!WebPValidateConfig(&config)) {
    free(rgba);
    return ENCODE_INVALID_ARGUMENT;
  }
  picture.use_argb = 0;
  picture.width = width;
  picture.height = height;
  picture.writer = StreamWriter;
  // Filling and cleaning only change pixels beside fully transparent ones: without any, they are skipped (two
  // passes over every pixel's alpha, ~15 ms at 2560 x 1920); weighting chroma needs some alpha below 255.
  const size_t pixels = (size_t)width * height;
  const int hidden = !opaque && AnyAlphaBelow(rgba, pixels, 1);
  const int translucent = hidden || (!opaque && AnyAlphaBelow(rgba, pixels, 255));
  if (translucent) {
    // One byte per 8 x 8 block (0.1 MB at 2560 x 2560), freed before encoding.
    uint8_t* const blocks = hidden ? malloc((size_t)((width + SIZE - 1) / SIZE) * ((height + SIZE - 1) / SIZE)) : NULL;
    if (hidden) FillTransparentColour(rgba, width, height, blocks);
    ok = WebPPictureImportRGBX(&picture, rgba, width * 4);
    if (ok) WeightChromaByAlpha(&picture, rgba);
    if (ok && hidden) CleanupTransparentArea(&picture, rgba, blocks);
    free(blocks);
  } else {
    // Nothing needs the alpha here (every alpha is 255), and libwebp 1.2.4 computes the luma of 3-byte pixels
    // with its SIMD row function but that of 4-byte ones a pixel at a time in C: the same arithmetic and the
    // same planes; at 2560 x 1920 ~9 ms in C against ~2.5 ms for the rows and ~2 ms for the packing.
    PackRgbaAsRgb(rgba, (size_t)width * height);
    ok = WebPPictureImportRGB(&picture, rgba, width * 3);
  }
  // The YUV planes (1.5 bytes per pixel) are all libwebp needs from here on; the 4 bytes per pixel of RGBA
  // go back to the allocator, which hands them to the encoder's own buffers.
  free(rgba);
  ok = ok && WebPEncode(&config, &picture);
  ok = ok ? VP8_ENC_OK : (picture.error_code != VP8_ENC_OK ? picture.error_code : ENCODE_INVALID_ARGUMENT);
  WebPPictureFree(&picture);
  return ok;
}

// Decodes the WebP file at data[0..size) straight to out_width x out_height RGBA (not premultiplied) at `out`,
// stride out_width * 4, scaling with libwebp's rescaler while decoding, so no full-size image is ever held
// (a lossless VP8L file still needs its 4-byte-per-pixel ARGB plane: that is how libwebp decodes it). Returns
// libwebp's VP8StatusCode: 0 on success; animated files give 4 (UNSUPPORTED_FEATURE), damaged ones 3 or 7.
EXPORT int decode_scaled(const uint8_t* data, size_t size, uint8_t* out, int out_width, int out_height) {
  WebPDecoderConfig config;
  VP8StatusCode status;
  if (data == NULL || out == NULL || out_width <= 0 || out_height <= 0 || !WebPInitDecoderConfig(&config)) {
    return VP8_STATUS_INVALID_PARAM;
  }
  status = WebPGetFeatures(data, size, &config.input);
  if (status != VP8_STATUS_OK) return status;
  // The rescaler only runs when the size changes; at the same size the usual (fancy-upsampling) path is kept.
  if (config.input.width != out_width || config.input.height != out_height) {
    config.options.use_scaling = 1;
    config.options.scaled_width = out_width;
    config.options.scaled_height = out_height;
  }
  config.output.colorspace = MODE_RGBA;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = out;
  config.output.u.RGBA.stride = out_width * 4;
  config.output.u.RGBA.size = (size_t)out_width * 4 * (size_t)out_height;
  status = WebPDecode(data, size, &config);
  WebPFreeDecBuffer(&config.output);  // releases nothing of `out` (external memory), only libwebp's bookkeeping
  return status;
}

// ------------------------------------------------------------------------------------------------------------
// A lossy WebP with alpha, downscaled: decoded at full size and handed row by row to our resizer (resize.c),
// which averages colour weighted by alpha.
//
// Why not decode_scaled: libwebp 1.2.4's rescaler (io_dec.c, InitRGBRescaler) scales the Y, U, V and alpha
// planes of a lossy image each on its own, so colour is averaged without weighting by alpha: the colour under
// transparent pixels (black in most files) bleeds into the visible ones beside them. Asking for premultiplied
// output (MODE_rgbA) does not help: libwebp multiplies after rescaling (ExportAlpha). Lossless images are
// streamed (lossless_* below), which hands its full-size rows to a resizer the same way.
//
// The rows are the ones WebPDecode writes at full size (loop filter on, fancy upsampling of the chroma),
// produced by libwebp's VP8 decoder through our own output callbacks instead of its full-size buffer: each
// call of `put` brings up to 24 rows of Y and alpha and half as many of U and V; the fancy upsampler turns two
// luma rows and the chroma rows around them into two RGBA rows, and each finished row goes to the resizer.
// What is held besides libwebp's own work: two RGBA rows and the last row of each plane of the previous call
// (the upsampler finishes it with the next call's first row), ~10.5 bytes per source column.

#include "resize.h"
#include "src/dec/vp8i_dec.h"

typedef struct {
  Resizer* resizer;
  WebPUpsampleLinePairFunc upsample;
  uint8_t* memory;  // everything below, one block
  uint8_t *top, *bottom;  // two RGBA rows (and 16 bytes of slack after each, which resize.c may read)
  uint8_t *last_y, *last_u, *last_v, *last_a;  // the previous call's unfinished row
  int out_of_memory;
} ResizedOutput;

static int ResizedSetup(VP8Io* io) {
  ResizedOutput* const output = (ResizedOutput*)io->opaque;
  // No options: no cropping, no scaling, the loop filter and fancy upsampling on, as WebPDecode at full size.
  if (!WebPIoInitFromOptions(NULL, io, MODE_YUV)) return 0;
  if (io->width != output->resizer->source_width || io->height != output->resizer->source_height) return 0;
  const size_t width = (size_t)io->width, uv_width = (width + 1) / 2, row = 4 * width + 16;
  output->memory = malloc(2 * row + 2 * width + 2 * uv_width);
  if (output->memory == NULL) {
    output->out_of_memory = 1;
    return 0;
  }
  output->top = output->memory;
  output->bottom = output->top + row;
  output->last_y = output->bottom + row;
  output->last_a = output->last_y + width;
  output->last_u = output->last_a + width;
  output->last_v = output->last_u + uv_width;
  WebPInitUpsamplers();
  output->upsample = WebPUpsamplers[MODE_RGBA];
  return 1;
}

// Writes the alpha row (255 without an alpha plane) into the RGBA row and hands the row to the resizer.
static int PushResizedRow(ResizedOutput* output, uint8_t* rgba, const uint8_t* alpha, int width) {
  if (alpha != NULL)
    for (int x = 0; x < width; ++x) rgba[4 * x + 3] = alpha[x];
  return resizer_push_from(output->resizer, rgba) >= 0;
}

// libwebp's EmitFancyRGB and EmitAlphaRGB (io_dec.c, 1.2.4) with the rows going to the resizer instead of a
// full-size buffer: the first row alone, then pairs of rows, the last row of a call kept for the next one
// (the upsampler needs the chroma row below it), the very last row of an even height alone.
static int ResizedPut(const VP8Io* io) {
  ResizedOutput* const output = (ResizedOutput*)io->opaque;
  const int width = io->mb_w, uv_width = (width + 1) / 2;
  const int y_end = io->mb_y + io->mb_h;
  const uint8_t* cur_y = io->y;
  const uint8_t* cur_u = io->u;
  const uint8_t* cur_v = io->v;
  // Row y's alpha (io->a holds this call's rows, io->width apart); NULL when the image has none.
#define ALPHA_ROW(y) (io->a != NULL ? io->a + (size_t)((y) - io->mb_y) * io->width : NULL)
  int y = io->mb_y;
  if (y == 0) {
    output->upsample(cur_y, NULL, cur_u, cur_v, cur_u, cur_v, output->top, NULL, width);
    if (!PushResizedRow(output, output->top, ALPHA_ROW(0), width)) return 0;
  } else {
    output->upsample(output->last_y, cur_y, output->last_u, output->last_v, cur_u, cur_v, output->top, output->bottom,
                     width);
    if (!PushResizedRow(output, output->top, io->a != NULL ? output->last_a : NULL, width) ||
        !PushResizedRow(output, output->bottom, ALPHA_ROW(y), width))
      return 0;
  }
  for (; y + 2 < y_end; y += 2) {
    const uint8_t* const top_u = cur_u;
    const uint8_t* const top_v = cur_v;
    cur_u += io->uv_stride;
    cur_v += io->uv_stride;
    cur_y += 2 * io->y_stride;
    output->upsample(cur_y - io->y_stride, cur_y, top_u, top_v, cur_u, cur_v, output->top, output->bottom, width);
    if (!PushResizedRow(output, output->top, ALPHA_ROW(y + 1), width) ||
        !PushResizedRow(output, output->bottom, ALPHA_ROW(y + 2), width))
      return 0;
  }
  cur_y += io->y_stride;
  if (io->crop_top + y_end < io->crop_bottom) {
    // Row y_end - 1 waits for the next call's first chroma row.
    memcpy(output->last_y, cur_y, width);
    memcpy(output->last_u, cur_u, uv_width);
    memcpy(output->last_v, cur_v, uv_width);
    if (io->a != NULL) memcpy(output->last_a, ALPHA_ROW(y_end - 1), width);
  } else if (!(y_end & 1)) {
    output->upsample(cur_y, NULL, cur_u, cur_v, cur_u, cur_v, output->top, NULL, width);
    if (!PushResizedRow(output, output->top, ALPHA_ROW(y_end - 1), width)) return 0;
  }
#undef ALPHA_ROW
  return 1;
}

// Decodes the lossy WebP file at data[0..size) at full size into `resizer`, whose source size must be the
// image's (its target is the output). Returns libwebp's VP8StatusCode: 0 when every row reached the resizer;
// lossless files give 4 (UNSUPPORTED_FEATURE: they are streamed, lossless_*), as do animated ones.
EXPORT int decode_resized(const uint8_t* data, size_t size, Resizer* resizer) {
  WebPHeaderStructure headers;
  VP8Io io;
  ResizedOutput output;
  VP8StatusCode status;
  if (data == NULL || resizer == NULL || resizer->channels != 4) return VP8_STATUS_INVALID_PARAM;
  memset(&headers, 0, sizeof(headers));
  headers.data = data;
  headers.data_size = size;
  headers.have_all_data = 1;
  status = WebPParseHeaders(&headers);
  if (status != VP8_STATUS_OK) return status;
  if (headers.is_lossless) return VP8_STATUS_UNSUPPORTED_FEATURE;
  memset(&output, 0, sizeof(output));
  output.resizer = resizer;
  VP8InitIo(&io);
  io.data = headers.data + headers.offset;
  io.data_size = headers.data_size - headers.offset;
  io.opaque = &output;
  io.setup = ResizedSetup;
  io.put = ResizedPut;
  VP8Decoder* const dec = VP8New();
  if (dec == NULL) return VP8_STATUS_OUT_OF_MEMORY;
  dec->alpha_data_ = headers.alpha_data;
  dec->alpha_data_size_ = headers.alpha_data_size;
  const int ok = VP8GetHeaders(dec, &io) && VP8Decode(dec, &io);
  status = ok ? VP8_STATUS_OK : dec->status_ != VP8_STATUS_OK ? dec->status_ : VP8_STATUS_BITSTREAM_ERROR;
  VP8Delete(dec);
  free(output.memory);
  if (output.out_of_memory) return VP8_STATUS_OUT_OF_MEMORY;
  if (status == VP8_STATUS_OK && resizer_rows_pushed(resizer) != resizer->source_height)
    return VP8_STATUS_BITSTREAM_ERROR;
  return status;
}

// Reads the header of the WebP file at data[0..size) into out[0..4]: width, height, has_alpha, has_animation,
// format (0 mixed/unknown, 1 lossy, 2 lossless). Returns libwebp's VP8StatusCode (0 on success, 7 when the
// bytes end before the header does).
EXPORT int get_features(const uint8_t* data, size_t size, int32_t* out) {
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(data, size, &features);
  if (status != VP8_STATUS_OK) return status;
  out[0] = features.width;
  out[1] = features.height;
  out[2] = features.has_alpha;
  out[3] = features.has_animation;
  out[4] = features.format;
  return VP8_STATUS_OK;
}

// ------------------------------------------------------------------------------------------------------------
// Lossless (VP8L) WebP decoded from the file streamed through a window, so the file is never held whole.
//
// libwebp 1.2.4's own incremental decoder (idec_dec.c) keeps every byte of a VP8L bitstream: in its append
// mode it copies all the data into one growing buffer, in its map mode the caller must hand it all the data
// again on every call. Its lossless decoder does not need them: VP8LDecodeImage, told the data may be
// incomplete (`incremental_`), saves its bit reader and colour cache every 8 rows (SaveState) and, when the
// data runs out, goes back to that checkpoint (RestoreState) and asks for more; its bit reader only ever reads
// forward from its position. So this drives libwebp's lossless decoder as idec_dec.c does, through the same
// internal functions, but keeps only a window of the bitstream: after each call, the bytes before the
// restored position are dropped (moved out of the window) and the next bytes of the file come in behind the
// rest. The header (transforms, colour cache, Huffman codes, read by VP8LDecodeHeader) is read again from the
// start of the bitstream until the window holds all of it, as idec_dec.c does. The window therefore needs
// the header, plus the data of at most 8 rows and a partial one, plus whatever is read per call; the caller
// sizes it (webp-codec.ts). libwebp itself still holds the whole ARGB plane of the image (4 bytes a pixel,
// its longest back-reference reaches a million pixels back) and scales rows into `out` as they complete.
//
// A transparent image made smaller goes to our resizer (resize.c) instead of libwebp's rescaler: libwebp
// premultiplies each pixel into 8 bits before rescaling and divides again after (vp8l_dec.c,
// EmitRescaledRowsRGBA), which weights colour by alpha but leaves a pixel of alpha 8 with 1 of every 32
// levels of its colour (a uniform (200, 100, 50) edge came out up to 23 levels off at alpha 8, 7 at alpha
// 32-63). resize.c weights in floats. libwebp writes the rows at full size then, every one into the same
// one-row buffer (stride 0), through VP8LConvertBGRAToRGBA, which the wrapper below follows by handing the
// row to the resizer.

#include "src/dec/vp8li_dec.h"
#include "src/dsp/lossless.h"

typedef struct {
  WebPDecoderConfig config;
  WebPDecParams params;
  VP8Io io;
  VP8LDecoder* dec;
  uint8_t* window;
  size_t capacity;     // bytes the window holds
  size_t filled;       // bytes of the bitstream in the window, from its start
  size_t remaining;    // bytes of the bitstream not yet in the window
  size_t header_try;   // the header is read again once the window holds at least this much
  int header_done;
  Resizer* resizer;    // where full-size rows go, or NULL (libwebp scales into `out`)
  uint8_t* row;        // the one row libwebp writes them to (with 16 bytes of slack resize.c may read)
} LosslessStream;

// The stream whose rows VP8LConvertBGRAToRGBA hands on while lossless_feed runs (NULL otherwise), and
// whether the resizer refused one (more rows than its source height).
static LosslessStream* rows_to_resizer;
static int rows_refused;
static VP8LConvertFunc LibwebpConvertBGRAToRGBA;

// libwebp's conversion of a row of the lossless decoder's output; a row written to the one-row buffer of the
// stream being fed (stride 0: every row of its output is that buffer) then goes to its resizer.
static void ConvertBGRAToRGBAThenResize(const uint32_t* src, int num_pixels, uint8_t* dst) {
  LibwebpConvertBGRAToRGBA(src, num_pixels, dst);
  if (rows_to_resizer != NULL && dst == rows_to_resizer->row && resizer_push_from(rows_to_resizer->resizer, dst) < 0)
    rows_refused = 1;
}

// What lossless_feed answers besides libwebp's VP8StatusCode (0 done, 5 suspended: feed more).
#define LOSSLESS_WINDOW_TOO_SMALL 101

// A decoder of a VP8L bitstream of `size` bytes (the VP8L chunk's payload) to out_width x out_height RGBA at
// `out` (stride out_width * 4, scaled while decoding), reading through a window of `capacity` bytes; or, with
// a `resizer` (whose source size must be the image's; `out` and the size are then not used), to full-size
// rows handed to it. NULL without memory.
EXPORT LosslessStream* lossless_create(uint32_t size, uint32_t capacity, uint8_t* out, int out_width, int out_height,
                                       Resizer* resizer) {
  LosslessStream* stream;
  if (resizer != NULL) {
    if (LibwebpConvertBGRAToRGBA == NULL) {
      VP8LDspInit();  // runs its body once: the pointer set below stays
      LibwebpConvertBGRAToRGBA = VP8LConvertBGRAToRGBA;
      VP8LConvertBGRAToRGBA = ConvertBGRAToRGBAThenResize;
    }
    out = resizer->out;
    out_width = resizer->target_width;
    out_height = resizer->target_height;
  }
  if (out == NULL || out_width <= 0 || out_height <= 0 || capacity == 0) return NULL;
  stream = calloc(1, sizeof(*stream));
  if (stream == NULL) return NULL;
  stream->window = malloc(capacity);
  stream->dec = VP8LNew();
  if (stream->window == NULL || stream->dec == NULL || !WebPInitDecoderConfig(&stream->config)) {
    free(stream->window);
    VP8LDelete(stream->dec);
    free(stream);
    return NULL;
  }
  stream->capacity = capacity;
  stream->remaining = size;
  stream->header_try = 0;
  stream->resizer = resizer;
  WebPDecoderConfig* const config = &stream->config;
  config->options.use_scaling = 1;  // dropped below once the image's size is known, if it is the same
  config->options.scaled_width = out_width;
  config->options.scaled_height = out_height;
  config->output.colorspace = MODE_RGBA;
  config->output.is_external_memory = 1;
  config->output.u.RGBA.rgba = out;
  config->output.u.RGBA.stride = out_width * 4;
  config->output.u.RGBA.size = (size_t)out_width * 4 * (size_t)out_height;
  WebPResetDecParams(&stream->params);
  stream->params.output = &config->output;
  stream->params.options = &config->options;
  VP8InitIo(&stream->io);
  WebPInitCustomIo(&stream->params, &stream->io);
  return stream;
}

// Where the caller writes the next bytes of the bitstream, and how many fit there now.
EXPORT uint8_t* lossless_input(LosslessStream* stream) { return stream->window + stream->filled; }
EXPORT uint32_t lossless_room(LosslessStream* stream) {
  const size_t room = stream->capacity - stream->filled;
  return (uint32_t)(room < stream->remaining ? room : stream->remaining);
}

// Moves the bytes the decoder still needs (from its bit reader's position) to the start of the window.
static void DropConsumed(LosslessStream* stream) {
  VP8LDecoder* const dec = stream->dec;
  const size_t keep_from = dec->br_.pos_;
  if (keep_from == 0) return;
  memmove(stream->window, stream->window + keep_from, stream->filled - keep_from);
  stream->filled -= keep_from;
  dec->br_.pos_ -= keep_from;
  // After RestoreState the saved reader is the current one; keep both pointing into the moved window.
  dec->saved_br_ = dec->br_;
  VP8LBitReaderSetBuffer(&dec->br_, stream->window, stream->filled);
  VP8LBitReaderSetBuffer(&dec->saved_br_, stream->window, stream->filled);
}

// Takes `count` more bytes written at lossless_input and decodes what they allow. Returns 0 when the image
// is complete, 5 (VP8_STATUS_SUSPENDED) when more bytes are needed, LOSSLESS_WINDOW_TOO_SMALL when the window
// is full and the decoder cannot move on (a header, or 8 rows, larger than the window), or libwebp's error.
EXPORT int lossless_feed(LosslessStream* stream, uint32_t count) {
  VP8LDecoder* const dec = stream->dec;
  if (count > stream->capacity - stream->filled || count > stream->remaining) return VP8_STATUS_INVALID_PARAM;
  stream->filled += count;
  stream->remaining -= count;
  const int complete = stream->remaining == 0;
  if (!stream->header_done) {
    // Read again from the start each time the window has doubled (or holds the whole bitstream).
    if (!complete && stream->filled < stream->header_try && stream->filled < stream->capacity)
      return VP8_STATUS_SUSPENDED;
    stream->io.data = stream->window;
    stream->io.data_size = stream->filled;
    if (!VP8LDecodeHeader(dec, &stream->io)) {
      const VP8StatusCode status = dec->status_;
      // Damaged rather than cut short when the reader stopped before the end of what the window holds.
      const int ran_out = dec->br_.eos_ || dec->br_.pos_ >= dec->br_.len_;
      if (complete || !ran_out || (status != VP8_STATUS_SUSPENDED && status != VP8_STATUS_BITSTREAM_ERROR))
        return status == VP8_STATUS_OK ? VP8_STATUS_BITSTREAM_ERROR : status;
      if (stream->filled >= stream->capacity) return LOSSLESS_WINDOW_TOO_SMALL;
      stream->header_try = stream->filled * 2;
      return VP8_STATUS_SUSPENDED;
    }
    WebPDecoderConfig* const config = &stream->config;
    if (stream->resizer != NULL) {
      const int width = stream->io.width;
      if (width != stream->resizer->source_width || stream->io.height != stream->resizer->source_height)
        return VP8_STATUS_INVALID_PARAM;
      stream->row = malloc((size_t)width * 4 + 16);
      if (stream->row == NULL) return VP8_STATUS_OUT_OF_MEMORY;
      // Full size, every row into the same buffer (WebPAllocateDecBuffer would refuse a stride of 0; the
      // lossless decoder reads only these fields).
      config->options.use_scaling = 0;
      config->output.width = width;
      config->output.height = stream->io.height;
      config->output.u.RGBA.rgba = stream->row;
      config->output.u.RGBA.stride = 0;
      config->output.u.RGBA.size = (size_t)width * 4;
    } else {
      if (config->options.scaled_width == stream->io.width && config->options.scaled_height == stream->io.height)
        config->options.use_scaling = 0;  // the usual path at the same size, as decode_scaled does
      const VP8StatusCode status =
          WebPAllocateDecBuffer(stream->io.width, stream->io.height, &config->options, &config->output);
      if (status != VP8_STATUS_OK) return status;
    }
    stream->header_done = 1;
  }
  VP8LBitReaderSetBuffer(&dec->br_, stream->window, stream->filled);
  dec->incremental_ = !complete;
  rows_to_resizer = stream->resizer != NULL ? stream : NULL;
  rows_refused = 0;
  const int decoded = VP8LDecodeImage(dec);
  rows_to_resizer = NULL;
  if (!decoded) return dec->status_ == VP8_STATUS_OK ? VP8_STATUS_BITSTREAM_ERROR : dec->status_;
  if (rows_refused) return VP8_STATUS_BITSTREAM_ERROR;
  if (dec->status_ == VP8_STATUS_OK && stream->resizer != NULL &&
      resizer_rows_pushed(stream->resizer) != stream->resizer->source_height)
    return VP8_STATUS_BITSTREAM_ERROR;
  if (dec->status_ != VP8_STATUS_SUSPENDED) return dec->status_;
  DropConsumed(stream);
  return stream->filled >= stream->capacity ? LOSSLESS_WINDOW_TOO_SMALL : VP8_STATUS_SUSPENDED;
}

EXPORT void lossless_free(LosslessStream* stream) {
  if (stream == NULL) return;
  VP8LDelete(stream->dec);
  WebPFreeDecBuffer(&stream->config.output);  // external memory: only libwebp's bookkeeping
  free(stream->window);
  free(stream->row);
  free(stream);
}
