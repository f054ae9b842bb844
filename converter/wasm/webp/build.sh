#!/usr/bin/env bash
# Builds converter/src/convert/webp-codec.wasm: libwebp (Debian bookworm's source package, 1.2.4), zlib's
# inflate (Debian's source package, 1.2.13, its first-level literal table one bit wider: see below), Little CMS
# (Debian's source package, 2.14) and libjpeg-turbo's decoder (Debian's source package, 1:2.1.5-2) plus our
# code (codec.c: WebP glue; encode-simd.c: WebAssembly SIMD versions of some of libwebp's dsp functions, installed over its function pointers; small-copy.h: short
# memcpy in libwebp's files; png.c: PNG image data; inflate-fast.c: zlib's inner inflate loop for wasm; gif.c: GIF image data; jpeg.c, jpeg-simd.c: baseline JPEG;
# resize.c: the streaming downscaler; colour.c: ICC profiles to sRGB), as one standalone WebAssembly module with
# no JS runtime. Idempotent: every run fetches the source once into the build directory (reused later),
# compiles everything again and overwrites the output.
#
# Sources: libwebp, zlib, lcms2 and libjpeg-turbo only ever come from `apt-get source` (Debian's archive, with
# Debian's patches, among them libwebp's CVE-2023-4863 fix), emcc only from Debian's `emscripten` package, the
# fallback CMYK profile from Debian's nip2 package (`apt-get download`). Nothing is fetched from anywhere
# else, and no libwebp, zlib, lcms2 or libjpeg-turbo file is committed.
#
# libjpeg-turbo is built without its CMake: its three configuration headers are written here (8-bit samples,
# no arithmetic coding: jpeg-header.ts refuses such files first, no getenv or putenv). Its SIMD code is x86
# assembly or NEON, so it is built on its portable path (jsimd_none.c), with the hooks jpeg-simd.c fills with
# WebAssembly SIMD renamed away (the IDCTs and colour conversion of the scales the pipeline uses: bit for bit
# the C code's results). One change is made to copies of its Huffman decoder in the build directory: jdhuff.h
# gives the bit buffer 64 bits only where size_t has 64 (wasm32's has 32), and the decoder refills a 64-bit
# buffer 6 bytes at a time instead of 2; the copies give wasm the 64-bit buffer, as libjpeg-turbo does for x32
# (measured: decoding 10-13 % faster, the same pixels).
#
# Usage: npm run build:wasm   (needs root for apt, or a libwebp-1.2.4 tree already in $WEBP_BUILD_DIR)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT="$ROOT/src/convert/webp-codec.wasm"
BUILD=${WEBP_BUILD_DIR:-${TMPDIR:-/tmp}/storefront-webp-codec}
VERSION=1.2.4
ZLIB_VERSION=1.2.13
LCMS_VERSION=2.14
JPEG_VERSION=2.1.5
# libvips's built-in CMYK profile ("Chemical proof", Graeme W. Gill, released into the public domain), which
# Debian ships in nip2 (libvips's GUI) as /usr/share/nip2/data/cmyk.icm; pinned by its digest.
CMYK_PROFILE_SHA256=156e7c14f244cfc4ed83a755ca4803d80e15dd249b40fae82cb127d3902e15c7
# Heap limit baked into the module: past it malloc returns 0 (a refusal) instead of the isolate being killed.
MAX_MEMORY=${WEBP_MAX_MEMORY:-83886080}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v emcc >/dev/null; then
  as_root apt-get update
  as_root apt-get install -y emscripten
fi
echo "emcc: $(emcc --version | head -1)"

mkdir -p "$BUILD"
# `apt-get source` needs a deb-src entry for Debian's archive (the same host as the binary packages): added
# unless apt already knows the source package at the pinned version ($1 and its version prefix $2), before
# a source package is fetched and unpacked (dpkg-source applies Debian's patches). The entry is written whole
# each time, so running this again changes nothing.
ensure_source() {
  if ! apt-cache showsrc "$1" 2>/dev/null | grep -q "^Version: $2"; then
    as_root tee /etc/apt/sources.list.d/debian-bookworm-src.sources >/dev/null <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    as_root apt-get update
  fi
  command -v dpkg-source >/dev/null || as_root apt-get install -y dpkg-dev
}
SRC=$(find "$BUILD" -maxdepth 1 -type d -name "libwebp-$VERSION" | head -1)
if [ -z "$SRC" ]; then
  ensure_source libwebp "$VERSION-"
  (cd "$BUILD" && apt-get source libwebp)
  SRC=$(find "$BUILD" -maxdepth 1 -type d -name "libwebp-$VERSION" | head -1)
  [ -n "$SRC" ] || { echo "apt-get source did not unpack libwebp-$VERSION (is this Debian bookworm?)" >&2; exit 1; }
fi
echo "libwebp: $(head -1 "$SRC/debian/changelog")"
ZSRC=$(find "$BUILD" -maxdepth 1 -type d -name "zlib-$ZLIB_VERSION*" | head -1)
if [ -z "$ZSRC" ]; then
  (cd "$BUILD" && apt-get source zlib)
  ZSRC=$(find "$BUILD" -maxdepth 1 -type d -name "zlib-$ZLIB_VERSION*" | head -1)
  [ -n "$ZSRC" ] || { echo "apt-get source did not unpack zlib-$ZLIB_VERSION (is this Debian bookworm?)" >&2; exit 1; }
fi
echo "zlib: $(head -1 "$ZSRC/debian/changelog")"
LSRC=$(find "$BUILD" -maxdepth 1 -type d -name "lcms2-$LCMS_VERSION" | head -1)
if [ -z "$LSRC" ]; then
  (cd "$BUILD" && apt-get source lcms2)
  LSRC=$(find "$BUILD" -maxdepth 1 -type d -name "lcms2-$LCMS_VERSION" | head -1)
  [ -n "$LSRC" ] || { echo "apt-get source did not unpack lcms2-$LCMS_VERSION (is this Debian bookworm?)" >&2; exit 1; }
fi
echo "lcms2: $(head -1 "$LSRC/debian/changelog")"
JSRC=$(find "$BUILD" -maxdepth 1 -type d -name "libjpeg-turbo-$JPEG_VERSION" | head -1)
if [ -z "$JSRC" ]; then
  ensure_source libjpeg-turbo "1:$JPEG_VERSION-"
  (cd "$BUILD" && apt-get source libjpeg-turbo)
  JSRC=$(find "$BUILD" -maxdepth 1 -type d -name "libjpeg-turbo-$JPEG_VERSION" | head -1)
  [ -n "$JSRC" ] || { echo "apt-get source did not unpack libjpeg-turbo-$JPEG_VERSION (is this Debian bookworm?)" >&2; exit 1; }
fi
echo "libjpeg-turbo: $(head -1 "$JSRC/debian/changelog")"
PROFILE="$BUILD/nip2/usr/share/nip2/data/cmyk.icm"
if [ ! -f "$PROFILE" ]; then
  (cd "$BUILD" && rm -f nip2_*.deb && apt-get download nip2 && dpkg-deb -x nip2_*.deb nip2)
fi
echo "$CMYK_PROFILE_SHA256  $PROFILE" | sha256sum -c --quiet - ||
  { echo "$PROFILE is not the pinned CMYK profile" >&2; exit 1; }

# -msse4.1 (implies SSE2) makes libwebp compile its SSE2/SSE4.1 code, which emscripten's x86 intrinsics
# headers translate to wasm SIMD (-msimd128). The NEON/MIPS/MSA files only hold stubs on this target.
# CMS_NO_PTHREADS: lcms2 guards its plugin registry with a mutex; the module is single-threaded.
# -mbulk-memory: memcpy and memset become WebAssembly's memory.copy and memory.fill (the engine's own
# memmove), not emscripten's byte- and word-loop memcpy: zlib copies half of all it inflates into its window
# (a 12 MP RGB PNG converts ~15 ms faster inside workerd; the output is the same).
# zlib's inflate with a 10-bit first-level table for literals and lengths instead of 9 bits: in PNG data nearly
# every code is a literal, and the literals of 10 bits took a second lookup (a 12 MP RGB PNG inflates ~10 %
# faster). The table a block needs can then grow to 1332 entries, which is what zlib's examples/enough.c
# computes for 286 symbols, a 10-bit root and 15-bit codes (`enough 286 10 15`), against 852 for 9 bits. The
# change is made to copies in a folder of a fixed name (see the objects' names below); the files that include
# inftrees.h are copied with it, since a quoted include looks beside its includer first, and the folder comes
# before zlib's own in the include path for inflate-fast.c.
ZLEN="$BUILD/zlib-lenbits"
rm -rf "$ZLEN"
mkdir -p "$ZLEN"
sed 's/^            state->lenbits = 9;$/            state->lenbits = 10;/' "$ZSRC/inflate.c" >"$ZLEN/inflate.c"
sed 's/^#define ENOUGH_LENS 852$/#define ENOUGH_LENS 1332/' "$ZSRC/inftrees.h" >"$ZLEN/inftrees.h"
cp "$ZSRC/inftrees.c" "$ZSRC/inffast.c" "$ZLEN/"
[ "$(grep -c 'lenbits = 10;' "$ZLEN/inflate.c")" = 1 ] && [ "$(grep -c 'lenbits = 9;' "$ZLEN/inflate.c")" = 1 ] &&
  [ "$(grep -c '^#define ENOUGH_LENS 1332$' "$ZLEN/inftrees.h")" = 1 ] ||
  { echo "zlib's inflate.c or inftrees.h is not the one the table change was written for" >&2; exit 1; }
CFLAGS=(-O3 -msimd128 -mbulk-memory -msse4.1 -DNDEBUG -DCMS_NO_PTHREADS=1 -I"$SRC" -I"$ZLEN" -I"$ZSRC" -I"$LSRC/include" -Wall)
CFLAGS_CODEC=("${CFLAGS[@]}")
OBJ="$BUILD/obj"
rm -rf "$OBJ"
mkdir -p "$OBJ"
# The CMYK profile as a C array (read only, in the module's data), for colour.c. Written to a folder of a fixed
# name: an object's name carries its folder's, and the link takes the objects in name order, so a folder named
# after $BUILD would make the module depend on where it was built.
mkdir -p "$BUILD/generated"
NODE=$(command -v node || echo "$ROOT/../node_modules/.bin/node")
"$NODE" -e '
  const bytes = require("fs").readFileSync(process.argv[1]);
  const rows = [];
  for (let i = 0; i < bytes.length; i += 32) rows.push(Array.from(bytes.subarray(i, i + 32)).join(","));
  process.stdout.write(`const unsigned char cmyk_fallback_profile[] = {\n${rows.join(",\n")}\n};\n` +
    `const unsigned int cmyk_fallback_profile_size = ${bytes.length};\n`);
' "$PROFILE" >"$BUILD/generated/cmyk_profile.c"
# libjpeg-turbo's configuration (what its CMake would write for this target) and the 64-bit bit buffer's copies,
# in folders of fixed names (see above: an object's name carries its folder's).
JCONF="$BUILD/jpeg-config"
JBITS="$BUILD/jpeg-bitbuffer"
rm -rf "$JCONF" "$JBITS"
mkdir -p "$JCONF" "$JBITS"
cat >"$JCONF/jconfig.h" <<JCONFIG
#define JPEG_LIB_VERSION 62
#define LIBJPEG_TURBO_VERSION $JPEG_VERSION
#define LIBJPEG_TURBO_VERSION_NUMBER 2001005
#define MEM_SRCDST_SUPPORTED 1
#define BITS_IN_JSAMPLE 8
JCONFIG
cat >"$JCONF/jconfigint.h" <<JCONFIGINT
#define BUILD "debian"
#undef inline
#define INLINE __inline__ __attribute__((always_inline))
#define THREAD_LOCAL
#define PACKAGE_NAME "libjpeg-turbo"
#define VERSION "$JPEG_VERSION"
#define SIZEOF_SIZE_T 4
#define HAVE_BUILTIN_CTZL
#define FALLTHROUGH __attribute__((fallthrough));
JCONFIGINT
sed 's/@COPYRIGHT_YEAR@/2023/' "$JSRC/jversion.h.in" >"$JCONF/jversion.h"
# The x32 conditions (64-bit registers, 32-bit size_t) are the wasm32 case too: one in jdhuff.h (the buffer's
# type) and one in jdhuff.c (how many bytes a refill takes); jdphuff.c only includes jdhuff.h.
X32='defined(__x86_64__) \&\& defined(__ILP32__)'
for file in jdhuff.h jdhuff.c jdphuff.c; do
  sed "s/$X32/($X32) || defined(__wasm__)/" "$JSRC/$file" >"$JBITS/$file"
done
[ "$(cat "$JBITS"/jdhuff.h "$JBITS"/jdhuff.c | grep -c 'defined(__wasm__)')" = 2 ] ||
  { echo "libjpeg-turbo's Huffman decoder is not the one the bit-buffer change was written for" >&2; exit 1; }
# The decoder's files only (the linker drops what jpeg.c does not reach), jdhuff/jdphuff from their copies;
# jsimd_none.c apart, below.
JFILES=$(printf "$JSRC/%s.c\n" jcomapi jdapimin jdapistd jdatasrc jdcoefct jdcolor jddctmgr jdicc jdinput jdmainct \
  jdmarker jdmaster jdmerge jdpostct jdsample jidctflt jidctfst jidctint jidctred jmemmgr jmemnobs jquant1 jquant2 \
  jutils)
JFILES="$JFILES $JBITS/jdhuff.c $JBITS/jdphuff.c"
JCFLAGS=(-O3 -msimd128 -mbulk-memory -DNDEBUG -DNO_GETENV -DNO_PUTENV -I"$JCONF" -I"$JSRC")
# The jsimd.h hooks jpeg-simd.c defines, renamed in jsimd_none.c (its own always-0/empty versions).
JSIMD_RENAMES=()
for hook in can_idct_4x4 idct_4x4 can_idct_islow idct_islow can_ycc_rgb ycc_rgb_convert; do
  JSIMD_RENAMES+=(-Djsimd_$hook=jsimd_none_$hook)
done
# sharpyuv/ is part of the encoder in 1.2.4 (its optional sharp RGB->YUV conversion); mux/demux are not needed.
FILES=$(ls "$SRC"/src/dec/*.c "$SRC"/src/dsp/*.c "$SRC"/src/utils/*.c "$SRC"/src/enc/*.c "$SRC"/sharpyuv/*.c |
  grep -v -e '_neon\.c$' -e '_mips' -e '_msa\.c$')
# Little CMS whole (the linker drops what colour.c does not reach).
LFILES=$(ls "$LSRC"/src/*.c | grep -v -e cmscgats -e cmsps2)
# Only zlib's inflate side: PNG image data is read, never written. Its inflate_fast is inflate-fast.c's; zlib's
# own (inffast.c) is compiled apart, renamed, for the steps that one leaves to it (see below).
ZFILES="$(printf "$ZSRC/%s.c\n" adler32 crc32 zutil) $ZLEN/inflate.c $ZLEN/inftrees.c"
# One object per file, as many at a time as there are cores; names keep the directory because dec/ and enc/
# share some file names.
compile() { emcc "${CFLAGS[@]}" -c "$1" -o "$OBJ/$(basename "$(dirname "$1")")_$(basename "$1" .c).o"; }
export -f compile
export OBJ CFLAGS_STRING="${CFLAGS[*]}"
# libwebp's files with small-copy.h forced in: memcpy of up to 32 bytes as loads and stores, not memory.copy
# (the encoder's per-macroblock block copies; see the header).
CFLAGS_STRING="${CFLAGS[*]} -include $HERE/small-copy.h"
printf '%s\n' $FILES | xargs -P "$(nproc)" -I{} bash -c 'CFLAGS=($CFLAGS_STRING); compile "$1"' _ {}
CFLAGS_STRING="${CFLAGS[*]}"
printf '%s\n' $ZFILES $LFILES "$HERE/codec.c" "$HERE/encode-simd.c" "$HERE/png.c" "$HERE/gif.c" "$HERE/resize.c" "$HERE/colour.c" \
  "$HERE/inflate-fast.c" "$BUILD/generated/cmyk_profile.c" |
  xargs -P "$(nproc)" -I{} bash -c 'CFLAGS=($CFLAGS_STRING); compile "$1"' _ {}
# zlib's inflate_fast as inflate_fast_bytewise: inflate-fast.c hands it the steps near the end of a buffer.
CFLAGS=("${CFLAGS_CODEC[@]}" -Dinflate_fast=inflate_fast_bytewise)
compile "$ZLEN/inffast.c"
CFLAGS=("${CFLAGS_CODEC[@]}")
# libjpeg-turbo with its own configuration; jpeg.c with both, and with setjmp/longjmp as WebAssembly exception
# handling (libjpeg's error_exit unwinds to it; no JS glue involved).
CFLAGS_STRING="${JCFLAGS[*]}"
printf '%s\n' $JFILES | xargs -P "$(nproc)" -I{} bash -c 'CFLAGS=($CFLAGS_STRING); compile "$1"' _ {}
CFLAGS=("${JCFLAGS[@]}" "${JSIMD_RENAMES[@]}")
compile "$JSRC/jsimd_none.c"
CFLAGS=("${JCFLAGS[@]}")
compile "$HERE/jpeg-simd.c"
CFLAGS=("${CFLAGS_CODEC[@]}" -I"$JCONF" -I"$JSRC" -sSUPPORT_LONGJMP=wasm)
compile "$HERE/jpeg.c"

# Standalone module: no emscripten JS glue (whose factory is asynchronous and ~20 KB of JS written for
# browsers), so the Worker instantiates it synchronously from the compiled module with a two-function import
# object (webp-codec.ts). Memory grows by exactly the pages malloc asks for (standalone emscripten_resize_heap,
# dlmalloc without mmap), starting from 2 MiB (1.25 MB of it static data, 0.96 MB of which is the fallback
# CMYK profile): the instance's size is the true high-water mark of its heap.
# -sSUPPORT_LONGJMP=wasm: setjmp/longjmp (jpeg.c) as WebAssembly exception handling (try/catch/throw of one
# tag), which V8 runs natively, in workerd as in Node; no invoke_* trampolines through JS.
# The 256 KiB stack is ~40 times what was measured (6.7 KB for a 12 MP encode at method 6, 1.9 KB to decode).
# write_output is meant to stay undefined (an import), so emcc's "undefined symbol: write_output" warning is
# expected; the import check below fails the build on anything else.
emcc -O3 -msimd128 -mbulk-memory "$OBJ"/*.o -o "$BUILD/webp-codec.wasm" \
  --no-entry -sSTANDALONE_WASM=1 -sSUPPORT_LONGJMP=wasm -sALLOW_MEMORY_GROWTH=1 \
  -sINITIAL_MEMORY=2097152 -sMAXIMUM_MEMORY="$MAX_MEMORY" -sTOTAL_STACK=262144 \
  -sERROR_ON_UNDEFINED_SYMBOLS=0 \
  -sEXPORTED_FUNCTIONS=_malloc,_free,_encode_rgba,_rgba_has_transparency,_decode_scaled,_decode_resized,_get_features,_png_create,_png_free,_png_palette,_png_input,_png_input_size,_png_feed,_gif_create,_gif_free,_gif_palette,_gif_input,_gif_input_size,_gif_steps,_gif_begin,_gif_feed,_resizer_create,_resizer_free,_resizer_row,_resizer_push,_resizer_saw_transparency,_resizer_rows_pushed,_colour_create,_colour_apply,_colour_free,_colour_inflate,_lossless_create,_lossless_input,_lossless_room,_lossless_feed,_lossless_free,_jpeg_decode

# ERROR_ON_UNDEFINED_SYMBOLS=0 lets write_output become an import; check that nothing else slipped through
# as one (a missing libwebp file would otherwise only fail when the Worker instantiates the module).
# getTempRet0/setTempRet0 are emscripten's setjmp support passing a second return value (its own JS runtime
# would provide them; webp-codec.ts does, as one variable).
"$NODE" -e '
  const m = new WebAssembly.Module(require("fs").readFileSync(process.argv[1]));
  const got = WebAssembly.Module.imports(m).map((i) => `${i.module}.${i.name}`).sort().join(" ");
  const want = "env.emscripten_notify_memory_growth env.getTempRet0 env.setTempRet0 env.write_output";
  if (got !== want) { console.error(`unexpected imports: ${got}`); process.exit(1); }
' "$BUILD/webp-codec.wasm"
cp "$BUILD/webp-codec.wasm" "$OUT"
echo "wrote $OUT ($(wc -c <"$OUT") bytes, sha256 $(sha256sum "$OUT" | cut -c1-16))"
