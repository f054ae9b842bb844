#!/bin/sh
# Builds converter/src/convert/progressive.wasm from converter/wasm/progressive/progressive.c (Debian: apt-get install clang lld binaryen).
# The module must import its memory (the conversion arena) and own nothing in it: no data section, no
# globals, no shadow stack. The checks below refuse a build that would.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../src/convert/progressive.wasm"
if ! { command -v clang || command -v clang-14; } >/dev/null || ! command -v wasm-opt >/dev/null; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq clang lld binaryen >/dev/null; else sudo apt-get update && sudo apt-get install -y clang lld binaryen; fi
fi
CLANG=${CLANG:-$(command -v clang || command -v clang-14)}
# -Wframe-larger-than=0 -Werror: any local that needs memory (a shadow-stack frame) fails the build. (wasm-ld
# places such a frame at a fixed address below 64 KiB, which in the imported arena belongs to libjpeg.)
# Compiled and linked in two steps: clang's own link step runs any wasm-opt on PATH without the SIMD feature
# (-msimd128: the IDCT's row loops are vectorised), which then refuses the module.
"$CLANG" --target=wasm32 -O3 -msimd128 -nostdlib -ffreestanding -fno-builtin -mbulk-memory -Wframe-larger-than=0 -Werror \
  -c -o "$out.o" "$here/progressive.c"
"$("$CLANG" -print-prog-name=wasm-ld)" --no-entry --import-memory --strip-all --export-dynamic -o "$out.tmp" "$out.o"
rm -f "$out.o"
# No data segments, and no global in use (wasm-ld always defines a stack pointer; a frame would use it).
text=$(wasm-dis "$out.tmp")
if printf '%s' "$text" | grep -q -E '\(data |global\.(get|set) '; then
  echo "progressive.wasm must not have data segments or use globals (no shadow stack):" >&2
  printf '%s\n' "$text" | grep -E '\(data |global\.(get|set) ' | head >&2
  rm -f "$out.tmp"
  exit 1
fi
wasm-opt -O3 --enable-bulk-memory --enable-simd "$out.tmp" -o "$out.tmp"
if wasm-dis "$out.tmp" | grep -q -E '\((data|global) '; then
  echo "progressive.wasm still defines a global or data after wasm-opt" >&2
  rm -f "$out.tmp"
  exit 1
fi
mv "$out.tmp" "$out"
echo "built $out ($(wc -c < "$out") bytes)"
