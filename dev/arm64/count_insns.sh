#!/usr/bin/env bash
# Instructions per 32-weight block of the aarch64 int8 decode gemv (n = 1) of qmm and of
# ggml's NEON dot products for the same types, counted by qemu-aarch64 with a TCG plugin
# (qemu_insn_plugin.c): the difference of two runs with m1 and m2 rows of k elements, divided
# by (m2 - m1) k / 32. Dynamic counts of executed instructions, loop overhead included; not a
# speed (qemu does not model a core). docs/ARM64.md has the table.
#   bash dev/arm64/count_insns.sh BUILD_ARM64_DIR GGML_SOURCE_DIR [SECTIONS]
# BUILD_ARM64_DIR: a cross build (scripts/test-arm64.sh); GGML_SOURCE_DIR: a ggml checkout
# (its src/ggml-cpu/arch/arm/quants.c is compiled here at -march=armv8-a and +dotprod).
# SECTIONS (default "decode gemm packed ggml_i8mm"): which tables to count: decode (n = 1,
# qmm and ggml), gemm (n = 8, dotprod gemv and SMMLA), packed (SMMLA on the GGUF blocks and on
# the repacked copy at n = 8 and 16, and the packing once), ggml_i8mm (ggml's SMMLA path,
# nrc = 2, for the types that have one).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
ggml=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=aarch64-linux-gnu-gcc
gcc -shared -fPIC -O2 -o "$tmp/libinsn.so" "$here/qemu_insn_plugin.c"
$cc -O2 -std=c11 -D_GNU_SOURCE -I"$root/include" -I"$root/src" "$here/count_qmm.c" "$build/libqmm.a" \
  -fopenmp $(PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig pkg-config --libs openblas libcjson) -lm \
  -o "$tmp/count_qmm"
for march in armv8-a armv8.2-a+dotprod armv8.2-a+dotprod+i8mm; do
  tag=${march//[.+]/_}
  $cc -O3 -march=$march -std=gnu11 -DNDEBUG -I"$ggml/include" -I"$ggml/src" -I"$ggml/src/ggml-cpu" \
    -c "$ggml/src/ggml-cpu/arch/arm/quants.c" -o "$tmp/quants_$tag.o"
  $cc -O2 -march=$march "$here/count_ggml.c" "$tmp/quants_$tag.o" -lm -o "$tmp/count_ggml_$tag"
done
# The median of 3 runs: an occasional run of this qemu counts a few hundred thousand
# instructions off (translation-block flushes), never the same twice.
count1() { qemu-aarch64 -plugin "$tmp/libinsn.so" -d plugin "$@" 2>&1 >/dev/null | awk '/^insns/ {print $2}'; }
count() { { count1 "$@"; count1 "$@"; count1 "$@"; } | sort -n | sed -n 2p; }
m1=64 m2=192 k=4096
per_block() { # command prefix [, then arguments after m k]; prints instructions per 32-weight block
  local a b
  a=$(count "$@" $m1 $k $extra)
  b=$(count "$@" $m2 $k $extra)
  awk -v a="$a" -v b="$b" -v d=$(( (m2 - m1) * k / 32 )) 'BEGIN { printf "%.1f", (b - a) / d }'
}
extra=""
sections=${3:-decode gemm packed ggml_i8mm}
types="q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs mxfp4 nvfp4"
if [[ " $sections " == *" decode "* ]]; then
echo "n = 1 (decode): instructions per 32-weight block"
printf "%-8s %12s %15s %12s %15s\n" type qmm_neon ggml_armv8-a qmm_dotprod ggml_dotprod
for t in $types; do
  printf "%-8s %12s %15s %12s %15s\n" "$t" "$(per_block "$tmp/count_qmm" neon "$t" 1)" \
    "$(per_block "$tmp/count_ggml_armv8-a" "$t")" "$(per_block "$tmp/count_qmm" dotprod "$t" 1)" \
    "$(per_block "$tmp/count_ggml_armv8_2-a_dotprod" "$t")"
done
fi
if [[ " $sections " == *" gemm "* ]]; then
echo "n = 8: instructions per 32-weight block and X row"
printf "%-8s %12s %12s\n" type qmm_dotprod qmm_i8mm
for t in $types; do
  a=$(per_block "$tmp/count_qmm" dotprod "$t" 8)
  b=$(per_block "$tmp/count_qmm" i8mm "$t" 8)
  printf "%-8s %12s %12s\n" "$t" "$(awk -v v="$a" 'BEGIN { printf "%.1f", v / 8 }')" "$(awk -v v="$b" 'BEGIN { printf "%.1f", v / 8 }')"
done
fi
if [[ " $sections " == *" packed "* ]]; then
# the repacked copy: kernel = (pack + 1 call) - (pack alone); pack: per W row and 32-block
echo "SMMLA on the GGUF blocks (otf) and on the repacked copy: per 32-weight block and X row; pack: per 32-weight block, once"
printf "%-8s %10s %10s %10s %10s %8s\n" type otf_n8 packed_n8 otf_n16 packed_n16 pack
for t in $types; do
  row="$t"
  for n in 8 16; do
    a=$(per_block "$tmp/count_qmm" i8mm "$t" $n)
    extra=1; b1=$(per_block "$tmp/count_qmm" i8mm_packed "$t" $n)
    extra=0; b0=$(per_block "$tmp/count_qmm" i8mm_packed "$t" $n); extra=""
    row="$row $(awk -v v="$a" -v n=$n 'BEGIN { printf "%.1f", v / n }') $(awk -v a="$b1" -v b="$b0" -v n=$n 'BEGIN { printf "%.1f", (a - b) / n }')"
    pack=$b0
  done
  # shellcheck disable=SC2086
  printf "%-8s %10s %10s %10s %10s %8s\n" $row "$pack"
done
fi
if [[ " $sections " == *" ggml_i8mm "* ]]; then
echo "ggml's SMMLA path (nrc = 2: 2 W rows x 2 activation rows per call): per 32-weight block and X row"
printf "%-8s %12s\n" type ggml_i8mm
for t in q4_0 q4_1 q8_0 q4_K q6_K; do
  extra=2; a=$(per_block "$tmp/count_ggml_armv8_2-a_dotprod_i8mm" "$t"); extra=""
  printf "%-8s %12s\n" "$t" "$(awk -v v="$a" 'BEGIN { printf "%.1f", v / 2 }')"
done
fi
