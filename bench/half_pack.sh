#!/usr/bin/env bash
# half_pack.sh — on the development machine: builds test_cuda, test_conformance, qmm and
# bench/cuda_bench for sm_90a in $BUILD (default /tmp/qmm-h200) and packs them, stripped, as
# .carry/bins.tar.xz (with the commit they were built from) for bench/half_run.sh on the GPU
# machine; with GGML_BUILD set (a ggml build with -DGGML_CUDA=ON, outside the repository) and
# GGML_MMBENCH (its ggml_mmbench binary, ../shared/peer/README.md), also .carry/ggml.tar.xz.
# .carry/deps gets the runtime .debs from .deps (docs/CUDA.md "The GPU run script"), so that
# .carry alone is carried. .carry/ is kept out of git by .git/info/exclude (git rev-parse --git-path info/exclude).
set -euo pipefail
BUILD=${BUILD:-/tmp/qmm-h200}
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DQMM_CUDA=ON -DQMM_WEBGPU=OFF > /dev/null
cmake --build "$BUILD" -j2 --target test_cuda test_conformance qmm_static qmm_cli
nvcc -O2 -Xcompiler -fopenmp -o "$BUILD/cuda_bench" bench/cuda_bench.c -Iinclude "$BUILD/libqmm.a" \
  -lcublas -lcublasLt -lnvrtc -lopenblas -lcjson -lgomp -lm
S=$(mktemp -d)
cp "$BUILD/tests/test_cuda" "$BUILD/tests/test_conformance" "$BUILD/cuda_bench" "$BUILD/tools/qmm/qmm" "$S/"
strip -g "$S"/*
git describe --always --dirty > "$S/COMMIT"
mkdir -p .carry
EXCL=$(git rev-parse --git-path info/exclude) # .git/info/exclude; in a worktree, the main one's
mkdir -p "$(dirname "$EXCL")"
grep -qx '/.carry/' "$EXCL" 2>/dev/null || echo '/.carry/' >> "$EXCL"
tar -cf - -C "$S" . | xz -9e -T2 > .carry/bins.tar.xz
rm -rf "$S"
# the runtime libraries the binaries need there (OpenBLAS, cmocka, cJSON), from .deps
mkdir -p .carry/deps
for d in libopenblas0_ libopenblas0-pthread_ libgfortran5_ libquadmath0_ libcmocka0_ libcjson1_; do
  cp .deps/$d*.deb .carry/deps/ || echo "half_pack: no $d*.deb in .deps (scripts/deps.sh, docs/CUDA.md)" >&2
done
if [ -n "${GGML_BUILD:-}" ] && [ -n "${GGML_MMBENCH:-}" ]; then
  G=$(mktemp -d)
  cp "$GGML_MMBENCH" "$G/ggml_mmbench"
  find "$GGML_BUILD" -name 'libggml*.so*' -exec cp -P {} "$G/" \;
  strip -g "$G"/* 2>/dev/null || true
  tar -cJf .carry/ggml.tar.xz -C "$G" .
  rm -rf "$G"
fi
ls -la .carry
