// jpeg-simd.c: WebAssembly SIMD routines for libjpeg-turbo's decoder.
#ifndef STOREFRONT_JPEG_SIMD_H
#define STOREFRONT_JPEG_SIMD_H

// After jpeg_start_decompress: the 6x6 and 12x12 inverse DCTs it chose become their SIMD versions.
void jpeg_simd_take_over(j_decompress_ptr cinfo);

#endif
