#!/bin/sh
# Builds src/uploads/convert/progressive.wasm from wasm/progressive/progressive.c (Debian: apt-get install clang lld binaryen).
# The module must import its memory (the conversion arena) and own nothing in it: no data section, no
# globals, no shadow stack. The checks below refuse a build that would.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../src/uploads/convert/progressive.wasm"
CLANG=${CLANG:-$(command -v clang || command -v clang-14)}
# -Wframe-larger-than=0 -Werror: any local that needs memory (a shadow-stack frame) fails the build. (wasm-ld
# places such a frame at a fixed address below 64 KiB, which in the imported arena belongs to libjpeg.)
"$CLANG" --target=wasm32 -O3 -nostdlib -ffreestanding -fno-builtin -mbulk-memory -Wframe-larger-than=0 -Werror \
  -Wl,--no-entry -Wl,--import-memory -Wl,--strip-all \
  -o "$out.tmp" "$here/progressive.c"
# No data segments and no globals either (checked before wasm-opt, which could fold them away).
text=$(wasm-dis "$out.tmp")
if printf '%s' "$text" | grep -q -E '\((data|global) '; then
  echo "progressive.wasm must not have data segments or globals (no shadow stack):" >&2
  printf '%s\n' "$text" | grep -E '\((data|global) ' >&2
  rm -f "$out.tmp"
  exit 1
fi
wasm-opt -O3 --enable-bulk-memory "$out.tmp" -o "$out.tmp"
mv "$out.tmp" "$out"
echo "built $out ($(wc -c < "$out") bytes)"
