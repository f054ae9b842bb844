// zlib's inflate_fast (the loop inflate() spends nearly all its time in) for WebAssembly: the same decoding of
// the same tables zlib's inflate.c builds, the same results and the same errors, faster on this target:
//
// - a 64-bit bit buffer refilled with one unaligned 8-byte load (zlib 1.2.13 keeps an `unsigned long`, 32 bits
//   on wasm32, and reads its input a byte at a time, twice per code): one refill covers a whole length/distance
//   pair (at most 48 bits) or up to three literals;
// - matches copied 16 bytes at a time (wasm SIMD loads and stores), and short distances (1 to 15 bytes,
//   common in PNG data: the previous pixel) by storing the repeating pattern, where zlib copies byte by byte.
//
// Both need room beyond what one step uses: 16 bytes of input for two refills, and a little output past a
// match for the last chunk's spill (always inside the caller's output buffer, overwritten by what follows).
// When a call has less (the last bytes of each input piece, a small output buffer), zlib's own inflate_fast,
// compiled from Debian's inffast.c under the name inflate_fast_bytewise (build.sh), does the step: inflate()
// calls inflate_fast as long as it has 6 bytes of input and 258 of output, so the tail is always decoded.
// On wasm, out-of-range reads are not the question (the module's memory is bounds-checked and every access
// here stays inside the caller's buffers); the same bytes as zlib's are.
//
// Inflating a 12 MP RGB PNG takes ~20 % less CPU than with zlib's loop (Node's profile; docs/conversion.md).

#include <stdint.h>
#include <string.h>
#include <wasm_simd128.h>

#include "zutil.h"
#include "inftrees.h"
#include "inflate.h"
#include "inffast.h"

void ZLIB_INTERNAL inflate_fast_bytewise(z_streamp strm, unsigned start);

// Input kept back so both refills of one step read inside the buffer (each advances at most 7 bytes, reads 8).
#define INPUT_MARGIN 16
// Output kept back: two literals and a 258-byte match, plus the last chunk's spill of up to 15 bytes.
#define OUTPUT_MARGIN (2 + 258 + 16)

// Pattern indices for distances below 16: byte i of a 16-byte chunk repeats byte i % dist of the match.
static const uint8_t kRepeat[16][16] = {
    {0},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1},
    {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0},
    {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3},
    {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0},
    {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3},
    {0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1},
    {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2, 3, 4, 5, 6},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 1, 2, 3, 4},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 1, 2},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0, 1},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0},
};
// How far the pattern chunk moves per store: the largest multiple of the distance that fits in 16 bytes, so
// every store starts at the pattern's first byte.
static const uint8_t kRepeatStep[16] = {0, 16, 16, 15, 16, 15, 12, 14, 16, 9, 10, 11, 12, 13, 14, 15};

// Copies the `len` bytes at `dist` before `out` (all already written, dist <= out - start of output) to `out`;
// may write up to 15 bytes past the copy. Returns the end of the copy.
static inline unsigned char* CopyMatch(unsigned char* out, unsigned dist, unsigned len) {
  unsigned char* const stop = out + len;
  const unsigned char* from = out - dist;
  if (dist >= 16) {
    // Each load reads bytes at least 16 before the store, all final.
    do {
      wasm_v128_store(out, wasm_v128_load(from));
      out += 16;
      from += 16;
    } while (out < stop);
  } else {
    // The load reads past `out` (bytes not yet written); the pattern takes only its first `dist` bytes.
    const v128_t pattern = wasm_i8x16_swizzle(wasm_v128_load(from), wasm_v128_load(kRepeat[dist]));
    const unsigned step = kRepeatStep[dist];
    do {
      wasm_v128_store(out, pattern);
      out += step;
    } while (out < stop);
  }
  return stop;
}

static inline uint64_t Load64(const unsigned char* p) {
  uint64_t value;
  memcpy(&value, p, sizeof(value));  // one unaligned i64.load; wasm is little-endian, as deflate's bit order
  return value;
}

void ZLIB_INTERNAL inflate_fast(z_streamp strm, unsigned start) {
  if (strm->avail_in < INPUT_MARGIN + 1 || strm->avail_out < OUTPUT_MARGIN + 1) {
    inflate_fast_bytewise(strm, start);
    return;
  }
  struct inflate_state FAR* const state = (struct inflate_state FAR*)strm->state;
  const unsigned char* in = strm->next_in;
  const unsigned char* const in_end = in + strm->avail_in;
  const unsigned char* const last = in_end - INPUT_MARGIN;  // steps start while in <= last
  unsigned char* out = strm->next_out;
  unsigned char* const out_end = out + strm->avail_out;
  unsigned char* const beg = out - (start - strm->avail_out);  // inflate()'s first output byte of this call
  unsigned char* const end = out_end - OUTPUT_MARGIN;  // steps start while out < end
  const unsigned wsize = state->wsize;
  const unsigned whave = state->whave;
  const unsigned wnext = state->wnext;
  const unsigned char FAR* const window = state->window;
  // The bits above `bits` are the input's next bits or zero (never other data), so a refill may OR over them.
  uint64_t hold = state->hold;
  unsigned bits = state->bits;
  const code FAR* const lcode = state->lencode;
  const code FAR* const dcode = state->distcode;
  const uint64_t lmask = ((uint64_t)1 << state->lenbits) - 1;
  const uint64_t dmask = ((uint64_t)1 << state->distbits) - 1;
  code here;
  unsigned op, len, dist;

// Fills the buffer to 56..63 bits, advancing `in` by the whole bytes taken (the load's remaining bits are the
// same input bits the next refill loads again).
#define REFILL()                       \
  do {                                 \
    hold |= Load64(in) << bits;        \
    in += (63 - bits) >> 3;            \
    bits |= 56;                        \
  } while (0)
#define DROP(n)    \
  do {             \
    hold >>= (n);  \
    bits -= (n);   \
  } while (0)

  do {
    REFILL();
    here = lcode[hold & lmask];
    if (here.op == 0) {
      // Up to three literals on one refill: at least 26 bits remain before the third code is looked at.
      DROP(here.bits);
      *out++ = (unsigned char)here.val;
      here = lcode[hold & lmask];
      if (here.op == 0) {
        DROP(here.bits);
        *out++ = (unsigned char)here.val;
        here = lcode[hold & lmask];
        if (here.op == 0) {
          DROP(here.bits);
          *out++ = (unsigned char)here.val;
          continue;
        }
      }
      REFILL();  // the code looked at is in the low bits, which a refill leaves as they are
    }
  dolen:
    op = here.bits;
    DROP(op);
    op = here.op;
    if (op == 0) {  // a literal from a second-level table
      *out++ = (unsigned char)here.val;
    } else if (op & 16) {  // length base
      len = here.val;
      op &= 15;  // extra bits
      len += (unsigned)hold & ((1U << op) - 1);
      DROP(op);
      here = dcode[hold & dmask];
    dodist:
      op = here.bits;
      DROP(op);
      op = here.op;
      if (op & 16) {  // distance base
        dist = here.val;
        op &= 15;
        dist += (unsigned)hold & ((1U << op) - 1);
        DROP(op);
        op = (unsigned)(out - beg);  // bytes of this call's output behind `out`
        if (dist > op) {
          // Some of the match is in the sliding window (the output of earlier calls): zlib's cases, with the
          // window's contiguous parts copied whole (window and output never overlap).
          op = dist - op;  // distance back in the window
          if (op > whave && state->sane) {
            strm->msg = (char*)"invalid distance too far back";
            state->mode = BAD;
            break;
          }
          const unsigned char FAR* from;
          if (wnext == 0) {
            from = window + wsize - op;
          } else if (wnext < op) {  // wraps around the window's end
            from = window + wsize + wnext - op;
            op -= wnext;
            if (op < len) {
              memcpy(out, from, op);
              out += op;
              len -= op;
              from = window;
              op = wnext;
            }
          } else {
            from = window + wnext - op;
          }
          const unsigned take = op < len ? op : len;
          memcpy(out, from, take);
          out += take;
          len -= take;
          if (len) out = CopyMatch(out, dist, len);  // the rest from this call's output
        } else {
          out = CopyMatch(out, dist, len);
        }
      } else if ((op & 64) == 0) {  // second-level distance code
        here = dcode[here.val + (hold & ((1U << op) - 1))];
        goto dodist;
      } else {
        strm->msg = (char*)"invalid distance code";
        state->mode = BAD;
        break;
      }
    } else if ((op & 64) == 0) {  // second-level length code
      here = lcode[here.val + (hold & ((1U << op) - 1))];
      goto dolen;
    } else if (op & 32) {  // end of block
      state->mode = TYPE;
      break;
    } else {
      strm->msg = (char*)"invalid literal/length code";
      state->mode = BAD;
      break;
    }
  } while (in <= last && out < end);
#undef REFILL
#undef DROP

  // Gives back the whole bytes the buffer holds unused (on entry it held fewer than 8 bits, so `in` never goes
  // before where it started), as zlib's loop does.
  len = bits >> 3;
  in -= len;
  bits -= len << 3;
  hold &= ((uint64_t)1 << bits) - 1;
  strm->next_in = (z_const unsigned char FAR*)in;
  strm->next_out = out;
  strm->avail_in = (unsigned)(in_end - in);
  strm->avail_out = (unsigned)(out_end - out);
  state->hold = (unsigned long)hold;
  state->bits = bits;
}
