// The PNG image data decoder of the conversion pipeline: zlib (Debian's source package, see build.sh)
// inflating into a fixed window, scanlines unfiltered and turned into RGBA, rows handed to the resizer,
// which writes the target in this same memory. The chunk structure (IHDR, PLTE, tRNS, IDAT boundaries) is
// read by png.ts, which feeds the IDAT bytes here a buffer at a time.
//
// Memory is fixed when the decoder is created: zlib's state and window, the window here, two scanlines and
// an RGBA row, and for an interlaced image the even rows (passes 1–6 fill them before pass 7 brings the odd
// rows between them). Nothing is allocated from a number the file states after that, and inflating stops at
// the last row, so a decompression bomb costs what a real image of its header's size costs.

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resize.h"
#include "zlib.h"

#define EXPORT __attribute__((used, visibility("default")))

enum {
  PNG_NEED_INPUT = 0,
  PNG_FINISHED = 1,
  PNG_BAD_DATA = -1,
  PNG_BAD_FILTER = -2,
  PNG_BAD_PALETTE_INDEX = -3,
  PNG_DATA_ENDS_EARLY = -4,
  PNG_NO_MEMORY = -5,
};

#define INPUT_BYTES 65536
#define WINDOW_BYTES 65536

typedef struct {
  int x0, y0, dx, dy, width, height;
} Pass;

typedef struct {
  z_stream z;
  int z_ready;
  int width, height, bit_depth, color_type, interlaced;
  int bits_per_pixel, bytes_per_pixel;
  uint8_t palette[256 * 4];  // RGBA, transparency applied
  int palette_entries;
  int32_t gray_key, red_key, green_key, blue_key;  // tRNS keys, -1 when absent
  Pass passes[7];
  int pass_count, pass_index, row_in_pass;
  int filled;  // bytes of the current scanline so far; -1 while its filter byte is next
  int filter;
  int finished;
  int next_even_row;
  size_t line_capacity;
  // Scanlines are unfiltered where zlib wrote them when they lie wholly in the window; `line` gathers one
  // that straddles two windows. `previous` is the line before (in the window, or in one of the two line
  // buffers: the one `line` is not, where it is copied before the window is overwritten).
  uint8_t *line_a, *line_b, *line;
  const uint8_t* previous;
  uint8_t *rgba, *even_rows, *input, *window;
  Resizer* resizer;
} Png;

static const int adam7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};

static size_t line_bytes(const Png* png, int width) { return ((size_t)width * png->bits_per_pixel + 7) / 8; }

EXPORT void png_free(Png* png) {
  if (!png) return;
  if (png->z_ready) inflateEnd(&png->z);
  free(png->line_a);
  free(png->line_b);
  free(png->rgba);
  free(png->even_rows);
  free(png->input);
  free(png->window);
  free(png);
}

// Creates a decoder for a header png.ts has validated; rows go to `resizer`, whose source size is the
// image's. Keys are the tRNS values (-1: none). Returns 0 when memory runs out.
EXPORT Png* png_create(int width, int height, int bit_depth, int color_type, int interlaced, int palette_entries,
                       int gray_key, int red_key, int green_key, int blue_key, Resizer* resizer) {
  static const int channels_of[7] = {1, 0, 3, 1, 2, 0, 4};
  if (color_type < 0 || color_type > 6 || channels_of[color_type] == 0) return 0;
  // A resizer taking RGB rows gets the scanlines themselves: only 8-bit RGB without a tRNS key, not interlaced.
  const int direct = resizer->channels == 3;
  if (direct && (color_type != 2 || bit_depth != 8 || red_key >= 0 || interlaced)) return 0;
  Png* png = calloc(1, sizeof(Png));
  if (!png) return 0;
  png->width = width;
  png->height = height;
  png->bit_depth = bit_depth;
  png->color_type = color_type;
  png->interlaced = interlaced;
  png->bits_per_pixel = channels_of[color_type] * bit_depth;
  png->bytes_per_pixel = png->bits_per_pixel >= 8 ? png->bits_per_pixel / 8 : 1;
  png->palette_entries = palette_entries;
  png->gray_key = gray_key;
  png->red_key = red_key;
  png->green_key = green_key;
  png->blue_key = blue_key;
  png->resizer = resizer;
  png->filled = -1;
  for (int p = 0; p < (interlaced ? 7 : 1); p++) {
    Pass pass = {0, 0, 1, 1, width, height};
    if (interlaced) {
      pass.x0 = adam7[p][0];
      pass.y0 = adam7[p][1];
      pass.dx = adam7[p][2];
      pass.dy = adam7[p][3];
      pass.width = width > pass.x0 ? (width - pass.x0 + pass.dx - 1) / pass.dx : 0;
      pass.height = height > pass.y0 ? (height - pass.y0 + pass.dy - 1) / pass.dy : 0;
    }
    if (pass.width > 0 && pass.height > 0) png->passes[png->pass_count++] = pass;
  }
  png->line_capacity = line_bytes(png, width);
  // Slack after the scanlines: the resizer reads pixels in 8-byte pairs straight from an RGB line.
  png->line_a = calloc(1, png->line_capacity + 16);
  png->line_b = calloc(1, png->line_capacity + 16);
  png->line = png->line_a;
  png->previous = png->line_b;  // zeros: the line above the first

  png->input = malloc(INPUT_BYTES);
  png->window = malloc(WINDOW_BYTES + 16);
  if (interlaced) {
    // Passes 1–6 fill the even rows a pass row at a time, through one RGBA row.
    png->rgba = malloc((size_t)width * 4);
    png->even_rows = malloc((size_t)((height + 1) / 2) * width * 4);
  }
  if (!png->line_a || !png->line_b || !png->input || !png->window || (interlaced && (!png->rgba || !png->even_rows)) ||
      inflateInit(&png->z) != Z_OK) {
    png_free(png);
    return 0;
  }
  png->z_ready = 1;
  // The Adler-32 of the data is not computed (a tenth of the inflating time): decoding stops at the last row,
  // before the checksum that follows it, which browsers do not hold against complete rows either.
  inflateValidate(&png->z, 0);
  return png;
}

// The palette table (256 RGBA entries) png.ts fills before the first feed.
EXPORT uint8_t* png_palette(Png* png) { return png->palette; }

// The buffer png.ts copies compressed bytes into before png_feed (INPUT_BYTES long).
EXPORT uint8_t* png_input(Png* png) { return png->input; }
EXPORT int png_input_size(void) { return INPUT_BYTES; }

static inline uint8_t paeth(int a, int b, int c) {
  int p = a + b - c;
  int pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  return (uint8_t)(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

static int unfilter(int filter, uint8_t* line, const uint8_t* previous, size_t length, int bpp) {
  size_t i;
  switch (filter) {
    case 0:
      return 0;
    case 1:
      for (i = bpp; i < length; i++) line[i] += line[i - bpp];
      return 0;
    case 2:
      for (i = 0; i < length; i++) line[i] += previous[i];
      return 0;
    case 3:
      for (i = 0; i < (size_t)bpp && i < length; i++) line[i] += previous[i] >> 1;
      for (; i < length; i++) line[i] += (line[i - bpp] + previous[i]) >> 1;
      return 0;
    case 4:
      for (i = 0; i < (size_t)bpp && i < length; i++) line[i] += previous[i];
      for (; i < length; i++) line[i] += paeth(line[i - bpp], previous[i], previous[i - bpp]);
      return 0;
    default:
      return PNG_BAD_FILTER;
  }
}

// One unfiltered scanline of `width` pixels to RGBA8; 16-bit samples keep their high byte.
static int to_rgba(const Png* png, const uint8_t* line, int width, uint8_t* out) {
  const int depth = png->bit_depth;
  const int wide = depth == 16;
  if (png->color_type == 3 && depth == 8) {
    // 8-bit palette indices, the common palette layout: one table word a pixel.
    int worst = 0;
    for (int x = 0; x < width; x++, out += 4) {
      const int value = line[x];
      worst = value > worst ? value : worst;
      memcpy(out, png->palette + 4 * value, 4);
    }
    return worst >= png->palette_entries ? PNG_BAD_PALETTE_INDEX : 0;
  }
  switch (png->color_type) {
    case 0:
    case 3: {
      const int max = (1 << depth) - 1;
      for (int x = 0; x < width; x++, out += 4) {
        int value;
        if (depth < 8) {
          const int bit = x * depth;
          value = (line[bit >> 3] >> (8 - depth - (bit & 7))) & max;
        } else {
          value = wide ? (line[2 * x] << 8) | line[2 * x + 1] : line[x];
        }
        if (png->color_type == 3) {
          if (value >= png->palette_entries) return PNG_BAD_PALETTE_INDEX;
          memcpy(out, png->palette + 4 * value, 4);
        } else {
          const uint8_t gray = depth < 8 ? (uint8_t)(value * (255 / max)) : wide ? (uint8_t)(value >> 8) : (uint8_t)value;
          out[0] = out[1] = out[2] = gray;
          out[3] = value == png->gray_key ? 0 : 255;
        }
      }
      return 0;
    }
    case 2:
      if (!wide) {
        for (int x = 0; x < width; x++, out += 4, line += 3) {
          out[0] = line[0];
          out[1] = line[1];
          out[2] = line[2];
          out[3] = line[0] == png->red_key && line[1] == png->green_key && line[2] == png->blue_key ? 0 : 255;
        }
      } else {
        for (int x = 0; x < width; x++, out += 4, line += 6) {
          out[0] = line[0];
          out[1] = line[2];
          out[2] = line[4];
          const int transparent = ((line[0] << 8) | line[1]) == png->red_key &&
                                  ((line[2] << 8) | line[3]) == png->green_key &&
                                  ((line[4] << 8) | line[5]) == png->blue_key;
          out[3] = transparent ? 0 : 255;
        }
      }
      return 0;
    case 4: {
      const int step = wide ? 4 : 2;
      for (int x = 0; x < width; x++, out += 4, line += step) {
        out[0] = out[1] = out[2] = line[0];
        out[3] = line[wide ? 2 : 1];
      }
      return 0;
    }
    default: {  // 6
      if (!wide) {
        memcpy(out, line, (size_t)width * 4);
      } else {
        for (int x = 0; x < width; x++, out += 4, line += 8) {
          out[0] = line[0];
          out[1] = line[2];
          out[2] = line[4];
          out[3] = line[6];
        }
      }
      return 0;
    }
  }
}

static void hand_on_even_rows_before(Png* png, int y) {
  const size_t row_bytes = (size_t)png->width * 4;
  for (; png->next_even_row < y && png->next_even_row < png->height; png->next_even_row += 2) {
    memcpy(resizer_row(png->resizer), png->even_rows + (size_t)(png->next_even_row >> 1) * row_bytes, row_bytes);
    resizer_push(png->resizer);
  }
}

// The line buffer `line` is not (the place `previous` may be copied to, or zeroed).
static uint8_t* spare_line(Png* png) { return png->line == png->line_a ? png->line_b : png->line_a; }

// Unfilters the scanline at `line` (in the window, or `png->line`) and hands it on; it becomes `previous`.
static int complete_line(Png* png, uint8_t* line) {
  const Pass* pass = &png->passes[png->pass_index];
  const size_t length = line_bytes(png, pass->width);
  int status = unfilter(png->filter, line, png->previous, length, png->bytes_per_pixel);
  if (status < 0) return status;
  const int y = pass->y0 + png->row_in_pass * pass->dy;
  if (!png->interlaced || (y & 1) == 1) {
    // Rows 1, 3, 5… of an interlaced image come only from pass 7, which is full width.
    if (png->interlaced) hand_on_even_rows_before(png, y);
    if (png->resizer->channels == 3) {
      resizer_push_from(png->resizer, line);
    } else {
      status = to_rgba(png, line, pass->width, resizer_row(png->resizer));
      if (status < 0) return status;
      resizer_push(png->resizer);
    }
  } else {
    status = to_rgba(png, line, pass->width, png->rgba);
    if (status < 0) return status;
    uint8_t* row = png->even_rows + (size_t)(y >> 1) * png->width * 4;
    for (int i = 0; i < pass->width; i++) memcpy(row + (size_t)(pass->x0 + i * pass->dx) * 4, png->rgba + 4 * i, 4);
  }
  png->previous = line;
  // A line gathered in `line` stays as the previous one: the next is gathered in the other buffer.
  if (line == png->line) png->line = spare_line(png);
  if (++png->row_in_pass == pass->height) {
    png->pass_index++;
    png->row_in_pass = 0;
    uint8_t* zeros = spare_line(png);
    memset(zeros, 0, png->line_capacity);
    png->previous = zeros;
    png->finished = png->pass_index == png->pass_count;
    if (png->finished && png->interlaced) hand_on_even_rows_before(png, png->height);
  }
  return 0;
}

static int consume(Png* png, uint8_t* data, size_t size) {
  size_t at = 0;
  int status = 0;
  while (at < size && !png->finished && status == 0) {
    if (png->filled < 0) {
      png->filter = data[at++];
      png->filled = 0;
      continue;
    }
    const size_t length = line_bytes(png, png->passes[png->pass_index].width);
    if (png->filled == 0 && size - at >= length) {
      // The whole scanline is in the window: unfiltered where it is, not copied.
      png->filled = -1;
      status = complete_line(png, data + at);
      at += length;
      continue;
    }
    size_t take = length - (size_t)png->filled;
    if (take > size - at) take = size - at;
    memcpy(png->line + png->filled, data + at, take);
    png->filled += (int)take;
    at += take;
    if ((size_t)png->filled == length) {
      png->filled = -1;
      status = complete_line(png, png->line);
    }
  }
  // The window is about to be overwritten: a previous line still in it moves to the spare line buffer.
  const uintptr_t previous = (uintptr_t)png->previous;
  if (!png->finished && previous >= (uintptr_t)data && previous < (uintptr_t)(data + size)) {
    uint8_t* kept = spare_line(png);
    memcpy(kept, png->previous, line_bytes(png, png->passes[png->pass_index].width));
    png->previous = kept;
  }
  // Inflated bytes after the last scanline are ignored, as libpng does.
  return status;
}

// Inflates the `size` bytes png.ts put in png_input and consumes the scanlines they complete. Returns
// PNG_FINISHED once the last row has gone to the resizer (the rest of the data is never inflated),
// PNG_NEED_INPUT when every byte was used, or a negative PNG_* error.
EXPORT int png_feed(Png* png, int size) {
  if (png->finished) return PNG_FINISHED;
  png->z.next_in = png->input;
  png->z.avail_in = (uInt)size;
  for (;;) {
    png->z.next_out = png->window;
    png->z.avail_out = WINDOW_BYTES;
    const int status = inflate(&png->z, Z_NO_FLUSH);
    const size_t produced = WINDOW_BYTES - png->z.avail_out;
    if (produced > 0) {
      const int consumed = consume(png, png->window, produced);
      if (consumed < 0) return consumed;
    }
    // The last row decides, not what follows it (a bad checksum after complete rows is ignored, as libpng does).
    if (png->finished) return PNG_FINISHED;
    if (status == Z_STREAM_END) return PNG_DATA_ENDS_EARLY;
    if (status == Z_MEM_ERROR) return PNG_NO_MEMORY;
    if (status == Z_BUF_ERROR) return PNG_NEED_INPUT;  // no progress without more input
    if (status != Z_OK) return PNG_BAD_DATA;
    if (png->z.avail_in == 0 && png->z.avail_out != 0) return PNG_NEED_INPUT;
  }
}
