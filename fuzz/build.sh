#!/usr/bin/env bash
# Build the libFuzzer targets: `bash fuzz/build.sh [BUILD_DIR]` (default build-fuzz).
# The library is built by CMake with clang, ASan and UBSan (QMM_SANITIZE) and
# -fsanitize=fuzzer-no-link (coverage instrumentation), CPU only; each fuzz/fuzz_*.c is then
# linked with -fsanitize=fuzzer,address,undefined into BUILD_DIR/fuzz_<name>.
# Needs clang (14 here) with compiler-rt (libclang-rt-14-dev) and libomp (libomp-14-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-fuzz}
cc=${CLANG:-$(command -v clang || command -v clang-14)}
jobs=${FUZZ_BUILD_JOBS:-2}
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

mkdir -p "$dir"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="$cc" \
  -DQMM_SANITIZE=ON -DQMM_CUDA=OFF -DQMM_BUILD_TESTS=OFF -DQMM_BUILD_TOOLS=OFF \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >"$dir/configure.log" 2>&1 ||
  { cat "$dir/configure.log"; exit 1; }
cmake --build "$dir" --target qmm_static -j "$jobs"

libs=$(pkg-config --libs openblas libcjson)
for src in fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  # shellcheck disable=SC2086
  "$cc" -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer $san -Iinclude -Isrc "$src" \
    "$dir/libqmm.a" -fopenmp $libs -lpthread -lm -o "$dir/$name"
  echo "built $dir/$name"
done
