// The baseline JPEG decoder of the conversion pipeline: libjpeg-turbo (Debian's source package, see build.sh)
// decoding the file at the M/8 scale jpeg-input.ts chose, its scanlines handed straight to the resizer, which
// writes the target in this same memory. Only a strip of rows ever exists at the decoded size: libjpeg's
// own buffers (an MCU row of each component) and one output strip, never the whole decoded image.
//
// Colour, as the pipeline applies it: grey and three-component files (YCbCr, or RGB as an Adobe marker says)
// come out as RGB rows; CMYK and YCCK files as CMYK rows, which go through `ink` (the embedded or built-in
// press profile's transform, colour.c) when there is one, else through the plain formula, Adobe files stored
// inverted (255 = no ink). An RGB or grey profile is applied later, on the target (colour.ts).
//
// libjpeg reports a fatal error through error_exit, which must not return: it longjmps back here (the module
// is built with WebAssembly exception handling for setjmp/longjmp, build.sh), the decoder is destroyed with
// everything it allocated, and a status says why. A warning (corrupt data libjpeg would paper over, data that
// ends early) stops the decoding too: like sharp's default, such a file is refused rather than published with
// grey areas.

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>  // jpeglib.h needs FILE

#include "jpeglib.h"
#include "jerror.h"
#include "jpeg-simd.h"
#include "lcms2.h"
#include "resize.h"

#define EXPORT __attribute__((used, visibility("default")))

enum {
  JPEG_OK = 0,
  JPEG_DAMAGED = -1,       // a fatal error or a warning: the data cannot be decoded as it is
  JPEG_NO_MEMORY = -2,     // libjpeg's buffers do not fit the module's memory
  JPEG_SIZE_MISMATCH = -3, // libjpeg's scaled size is not the resizer's source size
};

typedef struct {
  struct jpeg_error_mgr pub;
  jmp_buf unwind;
} ErrorManager;

static void stop(j_common_ptr cinfo) {
  ErrorManager* errors = (ErrorManager*)cinfo->err;
  longjmp(errors->unwind, 1);
}

// Traces (level >= 0) are dropped; a warning (-1) ends the decoding as an error would.
static void message(j_common_ptr cinfo, int level) {
  if (level < 0) {
    cinfo->err->num_warnings++;
    stop(cinfo);
  }
}

// Nothing is printed (the module has no output): jpeg_std_error's printing handlers are not linked.
static void no_output(j_common_ptr cinfo) { (void)cinfo; }
static void no_format(j_common_ptr cinfo, char* buffer) {
  (void)cinfo;
  buffer[0] = 0;
}
static void reset(j_common_ptr cinfo) {
  cinfo->err->num_warnings = 0;
  cinfo->err->msg_code = 0;
}

static void init_errors(ErrorManager* errors) {
  struct jpeg_error_mgr* e = &errors->pub;
  e->error_exit = stop;
  e->emit_message = message;
  e->output_message = no_output;
  e->format_message = no_format;
  e->reset_error_mgr = reset;
  e->msg_code = 0;
  e->trace_level = 0;
  e->num_warnings = 0;
  e->jpeg_message_table = NULL;
  e->last_jpeg_message = 0;
  e->addon_message_table = NULL;
  e->first_addon_message = 0;
  e->last_addon_message = 0;
}

// Math.round(a / 255) for a >= 0, as jpeg-header.ts's cmykChannel is rounded.
static inline uint8_t divide_255(uint32_t a) { return (uint8_t)((2 * a + 255) / 510); }

// CMYK to RGB by the plain formula (no profile), into `out` of `channels` (3, or 4 with opaque alpha).
static void cmyk_formula(const uint8_t* in, uint8_t* out, uint32_t width, int inverted, int channels) {
  for (uint32_t x = 0; x < width; x++, in += 4, out += channels) {
    const uint32_t k = in[3];
    for (int c = 0; c < 3; c++)
      out[c] = inverted ? divide_255(in[c] * k) : divide_255((255u - in[c]) * (255u - k));
    if (channels == 4) out[3] = 255;
  }
}

// Decodes the JPEG data[0..size) at scale/8 (1..8) into `resizer`, whose source size must be libjpeg's
// scaled size. CMYK rows go through `ink` (a CMYK-to-RGB transform, resizer of 3 channels) or, when it is
// null, through the formula (`inverted`: an Adobe file). `max_memory` bounds libjpeg's whole-image buffer,
// which only a file coded in several scans needs (all its coefficients, 128 bytes per 8x8 block): past it
// libjpeg would want a backing store, which is an error (JPEG_NO_MEMORY) here. Returns a status above; on
// success every row of the scaled image has been pushed.
EXPORT int jpeg_decode(const uint8_t* data, uint32_t size, int scale, Resizer* resizer, cmsHTRANSFORM ink,
                       int inverted, uint32_t max_memory) {
  struct jpeg_decompress_struct cinfo;
  ErrorManager errors;
  // Volatile: read after a longjmp, which restores no register.
  volatile int created = 0;
  init_errors(&errors);
  cinfo.err = &errors.pub;
  if (setjmp(errors.unwind)) {
    const int code = errors.pub.msg_code;
    if (created) jpeg_destroy_decompress(&cinfo);
    return code == JERR_OUT_OF_MEMORY || code == JERR_NO_BACKING_STORE ? JPEG_NO_MEMORY : JPEG_DAMAGED;
  }
  jpeg_create_decompress(&cinfo);
  created = 1;
  cinfo.mem->max_memory_to_use = (long)max_memory;
  jpeg_mem_src(&cinfo, data, size);
  jpeg_read_header(&cinfo, TRUE);
  const int cmyk = cinfo.num_components == 4;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  cinfo.scale_num = (unsigned int)scale;
  cinfo.scale_denom = 8;
  jpeg_start_decompress(&cinfo);
  jpeg_simd_take_over(&cinfo);
  // RGB rows and transformed CMYK rows are 3 bytes a pixel; the formula writes either layout.
  const int channels_fit = resizer->channels == 3 || (cmyk && ink == NULL);
  if ((int)cinfo.output_width != resizer->source_width || (int)cinfo.output_height != resizer->source_height ||
      !channels_fit) {
    jpeg_destroy_decompress(&cinfo);
    return JPEG_SIZE_MISMATCH;
  }
  const uint32_t width = cinfo.output_width;
  const int strip = cinfo.rec_outbuf_height < 1 ? 1 : cinfo.rec_outbuf_height;
  // 16 bytes past each row: the resizer reads a pair of pixels 8 bytes at a time.
  JSAMPARRAY rows = (*cinfo.mem->alloc_sarray)((j_common_ptr)&cinfo, JPOOL_IMAGE,
                                               width * (JDIMENSION)cinfo.output_components + 16, (JDIMENSION)strip);
  while (cinfo.output_scanline < cinfo.output_height) {
    const JDIMENSION got = jpeg_read_scanlines(&cinfo, rows, (JDIMENSION)strip);
    for (JDIMENSION i = 0; i < got; i++) {
      if (!cmyk) {
        resizer_push_from(resizer, rows[i]);
      } else if (ink != NULL) {
        cmsDoTransform(ink, rows[i], resizer_row(resizer), width);
        resizer_push(resizer);
      } else {
        cmyk_formula(rows[i], resizer_row(resizer), width, inverted, resizer->channels);
        resizer_push(resizer);
      }
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return JPEG_OK;
}
