// Forced into every libwebp file by build.sh (-include), never included by our own code. With -mbulk-memory
// every memcpy of a size not known at compile time becomes WebAssembly's memory.copy, which V8 runs as a call
// out of the generated code: fine for rows of kilobytes, slow for the 4- to 16-byte copies libwebp's encoder
// makes per macroblock (the iterator copies each 16 x 16 luma and two 8 x 8 chroma blocks row by row into its
// work area: VP8IteratorImport was 6 % of an encode's CPU time in the profile). Copies of up to 32 bytes are
// done here with at most two loads and two stores (overlapping when the size is not a power of two); longer
// ones still go to memory.copy. memcpy's areas never overlap, so the result is the same bytes.
#ifndef STOREFRONT_SMALL_COPY_H
#define STOREFRONT_SMALL_COPY_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <wasm_simd128.h>

static inline __attribute__((always_inline)) void* storefront_small_copy(void* dst, const void* src, size_t n) {
  uint8_t* d = (uint8_t*)dst;
  const uint8_t* s = (const uint8_t*)src;
  if (n > 32) return __builtin_memcpy(dst, src, n);
  if (n >= 16) {
    const v128_t head = wasm_v128_load(s), tail = wasm_v128_load(s + n - 16);
    wasm_v128_store(d, head);
    wasm_v128_store(d + n - 16, tail);
  } else if (n >= 8) {
    uint64_t head, tail;
    __builtin_memcpy(&head, s, 8);
    __builtin_memcpy(&tail, s + n - 8, 8);
    __builtin_memcpy(d, &head, 8);
    __builtin_memcpy(d + n - 8, &tail, 8);
  } else if (n >= 4) {
    uint32_t head, tail;
    __builtin_memcpy(&head, s, 4);
    __builtin_memcpy(&tail, s + n - 4, 4);
    __builtin_memcpy(d, &head, 4);
    __builtin_memcpy(d + n - 4, &tail, 4);
  } else if (n > 0) {
    const uint8_t first = s[0], middle = s[n >> 1], last = s[n - 1];
    d[0] = first;
    d[n >> 1] = middle;
    d[n - 1] = last;
  }
  return dst;
}
#define memcpy(dst, src, n) storefront_small_copy((dst), (src), (n))
#endif
