// The GIF image data decoder of the conversion pipeline: LZW decoding of the first frame, its palette
// indices painted as RGBA onto the transparent screen, rows handed to the resizer, which writes the target in
// this same memory. The block structure (screen, colour tables, extensions, the image descriptor, every
// frame counted) is read by gif.ts, which feeds the frame's data sub-blocks here a buffer of whole sub-blocks
// at a time.
//
// A file can make this allocate or work no more than its screen and its own length justify. The frame's
// claimed size is only compared, never allocated: the frame is clipped to the screen, and LZW strings that
// fall off the screen only advance the position, never expanded. Memory is fixed when the decoder is created:
// the LZW tables (4096 entries), the palette, one input buffer, and for an interlaced frame its visible even
// rows as indices (passes 1-3 bring them before pass 4 brings the odd rows between them in order), so at most
// half the visible frame at one byte a pixel.
//
// Work (counted in `steps`, for the tests) is at most: codes read + frame rows crossed + visible row segments +
// visible pixels + 2 × 4096 per visible row (the strings straddling the visible edge are expanded from their
// end, which is where their chain starts).

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resize.h"

#define EXPORT __attribute__((used, visibility("default")))

enum {
  GIF_NEED_INPUT = 0,
  GIF_FINISHED = 1,
  GIF_ENDS_EARLY = -1,     // an end code, or the sub-blocks' terminator, before the last visible row
  GIF_BAD_FIRST_CODE = -2,  // the first code after a clear code is not a colour
  GIF_UNDEFINED_CODE = -3,  // a code past the next table entry
};

#define MAX_CODES 4096
#define INPUT_BYTES 65536

typedef struct {
  // The screen and the frame on it (from its top-left corner, clipped to the screen).
  int screen_width, screen_height;
  int left, top, frame_width, frame_height, visible_width, visible_height, interlaced;
  uint32_t colours[256];  // RGBA words in memory order; the transparent index is 0 (the canvas shows)
  uint8_t palette[256 * 4];  // filled by gif.ts: RGB + 255 for each entry of the table, 0, 0, 0, 255 past it
  int transparent;
  int min_code_size, clear_code, end_code;
  // LZW state.
  uint16_t prefix[MAX_CODES];
  uint16_t length[MAX_CODES];
  uint8_t suffix[MAX_CODES];
  uint8_t first[MAX_CODES];
  uint8_t string[MAX_CODES];  // a string being placed across rows or the visible edge, from its end
  int next_code, code_size, previous;
  uint32_t bits;
  int bit_count;
  int block_left;  // bytes of the current sub-block still to come; 0: a length byte comes next
  // Where the next pixel goes.
  int frame_row, column, pass;
  int rows_received;  // visible frame rows complete (interlaced)
  int next_even;      // interlaced: the next stored even row to hand on
  int done, began;
  uint8_t* even_rows;  // interlaced: visible even rows, visible_width indices each
  uint8_t* odd_row;    // interlaced: the odd row being received
  uint8_t* row_indices;  // interlaced: where the current frame row's visible indices go, 0 off the screen
  uint32_t* row_pixels;  // not interlaced: the resizer's row at the frame's left edge
  double steps;
  Resizer* resizer;
  uint8_t* input;
} Gif;

static const int pass_start[4] = {0, 4, 2, 1};
static const int pass_step[4] = {8, 8, 4, 2};

EXPORT void gif_free(Gif* gif) {
  if (!gif) return;
  free(gif->even_rows);
  free(gif->odd_row);
  free(gif->input);
  free(gif);
}

static void reset_table(Gif* gif) {
  gif->next_code = gif->clear_code + 2;
  gif->code_size = gif->min_code_size + 1;
  gif->previous = -1;
}

// Creates a decoder for a frame gif.ts has read and the caller has admitted: `left`, `top` and the frame's
// size as its descriptor claims, `visible_*` the part on the screen (0 × 0 when it lies outside). Rows of the
// screen go to `resizer` (screen-sized source, four channels). `transparent` is the index drawn transparent,
// or -1. Returns 0 when memory runs out or a value is out of range.
EXPORT Gif* gif_create(int screen_width, int screen_height, int left, int top, int frame_width, int frame_height,
                       int visible_width, int visible_height, int interlaced, int min_code_size, int transparent,
                       Resizer* resizer) {
  if (min_code_size < 0 || min_code_size > 8 || resizer->channels != 4 || resizer->source_width != screen_width ||
      resizer->source_height != screen_height || frame_width < 1 || frame_height < 1)
    return 0;
  const int on_screen = visible_width > 0 && visible_height > 0;
  if (on_screen && (left < 0 || top < 0 || visible_width > frame_width || visible_height > frame_height ||
                    left + visible_width > screen_width || top + visible_height > screen_height))
    return 0;
  Gif* gif = calloc(1, sizeof(Gif));
  if (!gif) return 0;
  gif->screen_width = screen_width;
  gif->screen_height = screen_height;
  gif->left = left;
  gif->top = top;
  gif->frame_width = frame_width;
  gif->frame_height = frame_height;
  gif->visible_width = on_screen ? visible_width : 0;
  gif->visible_height = on_screen ? visible_height : 0;
  gif->interlaced = interlaced;
  gif->transparent = transparent;
  gif->min_code_size = min_code_size;
  gif->clear_code = 1 << min_code_size;
  gif->end_code = gif->clear_code + 1;
  for (int code = 0; code < gif->clear_code; code++) {
    gif->suffix[code] = (uint8_t)code;
    gif->first[code] = (uint8_t)code;
    gif->length[code] = 1;
  }
  reset_table(gif);
  gif->resizer = resizer;
  gif->input = malloc(INPUT_BYTES);
  if (interlaced && gif->visible_height > 0) {
    gif->even_rows = malloc((size_t)((gif->visible_height + 1) / 2) * visible_width);
    gif->odd_row = malloc((size_t)visible_width);
  }
  if (!gif->input || (interlaced && gif->visible_height > 0 && (!gif->even_rows || !gif->odd_row))) {
    gif_free(gif);
    return 0;
  }
  return gif;
}

// The palette gif.ts fills before gif_begin (256 RGBA entries).
EXPORT uint8_t* gif_palette(Gif* gif) { return gif->palette; }

// The buffer gif.ts copies sub-blocks into before gif_feed (INPUT_BYTES long).
EXPORT uint8_t* gif_input(Gif* gif) { return gif->input; }
EXPORT int gif_input_size(void) { return INPUT_BYTES; }

// Decoding steps so far (codes, row segments, string characters expanded, rows crossed).
EXPORT double gif_steps(const Gif* gif) { return gif->steps; }

static void push_blank_rows(Gif* gif, int count) {
  // The resizer's row is only ever painted between the frame's visible edges: clear that part once.
  if (gif->visible_width > 0)
    memset(resizer_row(gif->resizer) + (size_t)gif->left * 4, 0, (size_t)gif->visible_width * 4);
  for (int i = 0; i < count; i++) resizer_push(gif->resizer);
}

// Paints `count` indices as RGBA words from frame column `column` of the resizer's row.
static void paint(Gif* gif, const uint8_t* indices, int column, int count) {
  uint32_t* out = (uint32_t*)resizer_row(gif->resizer) + gif->left + column;
  const uint32_t* colours = gif->colours;
  for (int i = 0; i < count; i++) out[i] = colours[indices[i]];
}

static void hand_on_even_rows_before(Gif* gif, int row) {
  for (; gif->next_even < row && gif->next_even < gif->visible_height; gif->next_even += 2) {
    paint(gif, gif->even_rows + (size_t)(gif->next_even >> 1) * gif->visible_width, 0, gif->visible_width);
    resizer_push(gif->resizer);
  }
}

// Points the row destinations at the current frame row (nothing when it is off the screen).
static void aim_row(Gif* gif) {
  const int row = gif->frame_row;
  if (row >= gif->visible_height) {
    gif->row_indices = 0;
    gif->row_pixels = 0;
  } else if (gif->interlaced) {
    gif->row_indices = row & 1 ? gif->odd_row : gif->even_rows + (size_t)(row >> 1) * gif->visible_width;
  } else {
    gif->row_pixels = (uint32_t*)resizer_row(gif->resizer) + gif->left;
  }
}

// A visible frame row is complete: hands it on. Returns 1 once every visible row has been.
static int visible_row_done(Gif* gif) {
  const int row = gif->frame_row;
  if (!gif->interlaced) {
    resizer_push(gif->resizer);
    return row == gif->visible_height - 1;
  }
  if (row & 1) {
    // Pass 4 brings the odd rows in order, after passes 1-3 brought every even row.
    hand_on_even_rows_before(gif, row);
    paint(gif, gif->odd_row, 0, gif->visible_width);
    resizer_push(gif->resizer);
    gif->next_even = row + 1;
  }
  return ++gif->rows_received == gif->visible_height;
}

// Moves to the next frame row; 0 past the frame's last.
static int advance_row(Gif* gif) {
  if (!gif->interlaced) {
    gif->frame_row++;
    return gif->frame_row < gif->frame_height;
  }
  gif->frame_row += pass_step[gif->pass];
  while (gif->frame_row >= gif->frame_height) {
    gif->pass++;
    if (gif->pass == 4) return 0;
    gif->frame_row = pass_start[gif->pass];
  }
  return 1;
}

// The end of a frame row: sets `done` when nothing more is needed (every visible row received, or the frame
// ended). Returns `done`.
static int end_row(Gif* gif) {
  gif->column = 0;
  if ((gif->frame_row < gif->visible_height && visible_row_done(gif)) || !advance_row(gif)) {
    gif->done = 1;
    return 1;
  }
  aim_row(gif);
  return 0;
}

// Places the string of `code` at the current position, a row segment at a time, expanding from its end only
// what a visible segment needs.
static void place_string(Gif* gif, int code) {
  const int length = gif->length[code];
  int expanded_from = length;
  int link = code;
  int offset = 0;
  while (offset < length) {
    gif->steps++;
    int count = length - offset;
    if (count > gif->frame_width - gif->column) count = gif->frame_width - gif->column;
    if (gif->frame_row < gif->visible_height && gif->column < gif->visible_width) {
      if (offset < expanded_from) {
        gif->steps += expanded_from - offset;
        for (int at = expanded_from - 1; at >= offset; at--) {
          gif->string[at] = gif->suffix[link];
          link = gif->prefix[link];
        }
        expanded_from = offset;
      }
      int visible = gif->visible_width - gif->column;
      if (visible > count) visible = count;
      if (gif->interlaced) {
        memcpy(gif->row_indices + gif->column, gif->string + offset, (size_t)visible);
      } else {
        for (int i = 0; i < visible; i++) gif->row_pixels[gif->column + i] = gif->colours[gif->string[offset + i]];
      }
    }
    gif->column += count;
    offset += count;
    if (gif->column == gif->frame_width && end_row(gif)) return;
  }
}

// Outputs the string of `code`: straight from its chain into the row when it lies wholly inside the visible
// part of the current row, else a segment at a time.
static inline void output(Gif* gif, int code) {
  const int length = gif->length[code];
  const int end = gif->column + length;
  if (end <= gif->visible_width && gif->frame_row < gif->visible_height) {
    gif->steps += 1 + length;
    int link = code;
    if (gif->interlaced) {
      uint8_t* out = gif->row_indices + end;
      for (int i = 0; i < length; i++) {
        *--out = gif->suffix[link];
        link = gif->prefix[link];
      }
    } else {
      uint32_t* out = gif->row_pixels + end;
      const uint32_t* colours = gif->colours;
      for (int i = 0; i < length; i++) {
        *--out = colours[gif->suffix[link]];
        link = gif->prefix[link];
      }
    }
    gif->column = end;
    if (end == gif->frame_width) end_row(gif);
    return;
  }
  place_string(gif, code);
}

// Starts decoding once gif.ts has filled the palette: hands on the screen rows above the frame, and all rows
// when the frame lies off the screen. Returns GIF_FINISHED then, else GIF_NEED_INPUT.
EXPORT int gif_begin(Gif* gif) {
  if (gif->began) return gif->done ? GIF_FINISHED : GIF_NEED_INPUT;
  gif->began = 1;
  for (int index = 0; index < 256; index++) {
    uint32_t word;
    memcpy(&word, gif->palette + 4 * index, 4);
    gif->colours[index] = index == gif->transparent ? 0 : word;
  }
  memset(resizer_row(gif->resizer), 0, (size_t)gif->screen_width * 4);
  if (gif->visible_height == 0) {
    push_blank_rows(gif, gif->screen_height);
    gif->done = 1;
    return GIF_FINISHED;
  }
  push_blank_rows(gif, gif->top);
  aim_row(gif);
  return GIF_NEED_INPUT;
}

// After the last visible row: the stored even rows not handed on yet, then the rows below the frame.
static void finish(Gif* gif) {
  if (gif->interlaced) hand_on_even_rows_before(gif, gif->visible_height);
  push_blank_rows(gif, gif->screen_height - gif->top - gif->visible_height);
}

// Decodes `size` bytes of whole data sub-blocks (length byte and data, the terminator included) that gif.ts
// put in gif_input. Returns GIF_FINISHED once every screen row has gone to the resizer (the rest of the data
// is not needed), GIF_NEED_INPUT when every byte was used, or a negative GIF_* error.
EXPORT int gif_feed(Gif* gif, int size) {
  if (gif->done) return GIF_FINISHED;
  const uint8_t* data = gif->input;
  const uint8_t* const data_end = data + size;
  uint32_t bits = gif->bits;
  int bit_count = gif->bit_count;
  int status = GIF_NEED_INPUT;
  while (data < data_end) {
    if (gif->block_left == 0) {
      gif->block_left = *data++;
      if (gif->block_left == 0) {
        status = GIF_ENDS_EARLY;  // the terminator, before the last visible row
        break;
      }
      continue;
    }
    int available = (int)(data_end - data);
    if (available > gif->block_left) available = gif->block_left;
    const uint8_t* const block_end = data + available;
    gif->block_left -= available;
    while (data < block_end) {
      bits |= (uint32_t)*data++ << bit_count;
      bit_count += 8;
      while (bit_count >= gif->code_size) {
        const int code = (int)(bits & ((1u << gif->code_size) - 1));
        bits >>= gif->code_size;
        bit_count -= gif->code_size;
        gif->steps++;
        if (code == gif->clear_code) {
          reset_table(gif);
          continue;
        }
        if (code == gif->end_code) {
          status = GIF_ENDS_EARLY;
          goto out;
        }
        const int previous = gif->previous;
        if (previous < 0) {
          if (code >= gif->clear_code) {
            status = GIF_BAD_FIRST_CODE;
            goto out;
          }
        } else {
          int first;
          // next_code itself is the entry being defined: the previous string plus that string's first index.
          if (code < gif->next_code)
            first = gif->first[code];
          else if (code == gif->next_code)
            first = gif->first[previous];
          else {
            status = GIF_UNDEFINED_CODE;
            goto out;
          }
          // A full table keeps decoding without adding, as encoders that defer the clear code expect.
          const int next = gif->next_code;
          if (next < MAX_CODES) {
            gif->prefix[next] = (uint16_t)previous;
            gif->suffix[next] = (uint8_t)first;
            gif->length[next] = gif->length[previous] + 1;
            gif->first[next] = gif->first[previous];
            gif->next_code = next + 1;
          }
        }
        // The code width grows once the next entry needs it, checked after every code as Chromium does: the
        // same as growing after an addition for code sizes 2-8; with code size 0 or 1 the entry after the
        // clear and end codes already needs the wider code, so it grows after the first code.
        if (gif->next_code >= 1 << gif->code_size && gif->code_size < 12) gif->code_size++;
        output(gif, code);
        gif->previous = code;
        if (gif->done) {
          finish(gif);
          status = GIF_FINISHED;
          goto out;
        }
      }
    }
  }
out:
  gif->bits = bits;
  gif->bit_count = bit_count;
  return status;
}
