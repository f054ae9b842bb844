// Streaming area-average downscaler (resize.c): source rows in, target rows written into `out`.
#ifndef STOREFRONT_RESIZE_H
#define STOREFRONT_RESIZE_H

#include <stdint.h>

typedef struct {
  int source_width, source_height, target_width, target_height;
  int opaque, channels;
  uint8_t* out;  // target_width × target_height × 4 bytes (RGBA)
  double ratio_y;
  int32_t* first;  // first source pixel of each target column
  int32_t* count;  // source pixels in each target column
  float* taps;     // their weights, each column's summing to 1
  void* pairs;     // opaque rows: the same in 14-bit fixed point, in pairs (v128_t); else null
  float* sums;     // the target row being accumulated
  float* carried;  // the next one's share of a straddling source row
  int sums_fresh, carried_fresh;  // whether each holds nothing yet (its next contribution is stored, not added)
  uint8_t* row;    // where the caller puts the next source row
  int output_row, rows_pushed, saw_transparency;
} Resizer;

// Returns 0 when the sizes are invalid (upscaling, an empty target) or memory runs out. `channels` is 3
// (RGB rows, opaque only) or 4 (RGBA rows); `opaque` ignores alpha and writes 255.
Resizer* resizer_create(int source_width, int source_height, int target_width, int target_height, uint8_t* out,
                        int opaque, int channels);
void resizer_free(Resizer* r);
// The buffer of source_width × channels bytes the next source row is written to before resizer_push.
uint8_t* resizer_row(Resizer* r);
// Consumes the row in resizer_row; returns the rows consumed so far, or -1 past the source height.
int resizer_push(Resizer* r);
// The same for a row elsewhere in memory, readable for 16 bytes past its last pixel.
int resizer_push_from(Resizer* r, const uint8_t* row);
int resizer_saw_transparency(const Resizer* r);
int resizer_rows_pushed(const Resizer* r);

#endif
