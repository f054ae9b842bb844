// Our glue around libwebp 1.2.4 (Debian's source package, see build.sh), built as a standalone wasm module
// for the Worker's conversion pipeline (src/uploads/convert/webp-codec.ts). Everything runs in one linear
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
// background) is coded at full cost. Same output as libwebp's own RGBA path apart from its alpha-weighted
// chroma averaging.
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

// Returned by encode_rgba when the arguments are out of range (libwebp's own codes are 0..10).
#define ENCODE_INVALID_ARGUMENT 100

// Encodes the width x height RGBA at `rgba` (malloc'd in this heap; always freed here, also on failure) as a
// lossy simple-format WebP ("RIFF" + "VP8 " chunk), ignoring alpha except to clean up transparent areas. The
// file leaves through write_output in pieces as libwebp writes it. Returns 0, or libwebp's WebPEncodingError.
EXPORT int encode_rgba(uint8_t* rgba, int width, int height, float quality, int method) {
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
  ok = WebPPictureImportRGBX(&picture, rgba, width * 4);
  if (ok) CleanupTransparentArea(&picture, rgba);
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
