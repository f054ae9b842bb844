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

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

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

static void CleanupTransparentArea(WebPPicture* picture, const uint8_t* rgba) {
  const int width = picture->width, height = picture->height;
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
        if (need_reset) {
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
// reaches a visible pixel through the transform either. 8 x 8 blocks without a visible pixel are left to
// CleanupTransparentArea, which flattens them. Alpha is not changed (its plane was coded before this call).
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

static void FillTransparentColour(uint8_t* rgba, int width, int height) {
  const int stride = 4 * width;
  for (int by = 0; by < height; by += SIZE) {
    const int by1 = by + SIZE < height ? by + SIZE : height;
    for (int bx = 0; bx < width; bx += SIZE) {
      const int bx1 = bx + SIZE < width ? bx + SIZE : width;
      int visible = 0, hidden = 0;
      for (int y = by; y < by1; ++y) {
        for (int x = bx; x < bx1; ++x) {
          if (rgba[(size_t)y * stride + 4 * x + 3] != 0) visible = 1;
          else hidden = 1;
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
  // Both steps only change pixels beside fully transparent ones: without any, they are skipped (two passes
  // over every pixel's alpha, ~15 ms at 2560 x 1920).
  const int hidden = !opaque && AnyAlphaBelow(rgba, (size_t)width * height, 1);
  if (hidden) {
    FillTransparentColour(rgba, width, height);
    ok = WebPPictureImportRGBX(&picture, rgba, width * 4);
    if (ok) CleanupTransparentArea(&picture, rgba);
  } else {
    // Nothing needs the alpha here (it is coded apart), and libwebp 1.2.4 computes the luma of 3-byte pixels
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

#include "src/dec/vp8li_dec.h"

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
} LosslessStream;

// What lossless_feed answers besides libwebp's VP8StatusCode (0 done, 5 suspended: feed more).
#define LOSSLESS_WINDOW_TOO_SMALL 101

// A decoder of a VP8L bitstream of `size` bytes (the VP8L chunk's payload) to out_width x out_height RGBA at
// `out` (stride out_width * 4, scaled while decoding), reading through a window of `capacity` bytes. NULL
// without memory.
EXPORT LosslessStream* lossless_create(uint32_t size, uint32_t capacity, uint8_t* out, int out_width, int out_height) {
  LosslessStream* stream;
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
    if (config->options.scaled_width == stream->io.width && config->options.scaled_height == stream->io.height)
      config->options.use_scaling = 0;  // the usual path at the same size, as decode_scaled does
    const VP8StatusCode status =
        WebPAllocateDecBuffer(stream->io.width, stream->io.height, &config->options, &config->output);
    if (status != VP8_STATUS_OK) return status;
    stream->header_done = 1;
  }
  VP8LBitReaderSetBuffer(&dec->br_, stream->window, stream->filled);
  dec->incremental_ = !complete;
  if (!VP8LDecodeImage(dec)) return dec->status_ == VP8_STATUS_OK ? VP8_STATUS_BITSTREAM_ERROR : dec->status_;
  if (dec->status_ != VP8_STATUS_SUSPENDED) return dec->status_;
  DropConsumed(stream);
  return stream->filled >= stream->capacity ? LOSSLESS_WINDOW_TOO_SMALL : VP8_STATUS_SUSPENDED;
}

EXPORT void lossless_free(LosslessStream* stream) {
  if (stream == NULL) return;
  VP8LDelete(stream->dec);
  WebPFreeDecBuffer(&stream->config.output);  // external memory: only libwebp's bookkeeping
  free(stream->window);
  free(stream);
}
