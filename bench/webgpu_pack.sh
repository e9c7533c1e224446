#!/usr/bin/env bash
# webgpu_pack.sh — on the development machine: builds the WebGPU binaries (qmm, test_webgpu,
# test_conformance; no CUDA) in $BUILD (default /tmp/qmm-wgpu) and packs them, stripped, with
# wgpu-native's library as .carry/wgpu_bins.tar.xz (with the commit they were built from),
# the Vulkan loader .debs (.deps/vulkan, docs/WEBGPU.md "On the H200") as .carry/vulkan and
# the runtime .debs (OpenBLAS, cmocka, cJSON) as .carry/deps, for bench/webgpu_h200.sh on the
# GPU machine (run with carry [".carry"]): nothing is built there.
set -euo pipefail
BUILD=${BUILD:-/tmp/qmm-wgpu}
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DQMM_CUDA=OFF -DQMM_WEBGPU=ON > /dev/null
cmake --build "$BUILD" -j2 --target qmm_cli test_webgpu test_conformance
S=$(mktemp -d)
cp "$BUILD/tests/test_webgpu" "$BUILD/tests/test_conformance" "$BUILD/tools/qmm/qmm" "$S/"
strip -g "$S"/*
cp .deps/wgpu-native/lib/libwgpu_native-release.so "$S/"
git describe --always --dirty > "$S/COMMIT"
mkdir -p .carry/vulkan .carry/deps
EXCL=$(git rev-parse --git-path info/exclude)
grep -qx '/.carry/' "$EXCL" 2>/dev/null || echo '/.carry/' >> "$EXCL"
tar -cf - -C "$S" . | xz -6 -T2 > .carry/wgpu_bins.tar.xz
rm -rf "$S"
cp .deps/vulkan/*.deb .carry/vulkan/
for d in libopenblas0_ libopenblas0-pthread_ libgfortran5_ libquadmath0_ libcmocka0_ libcjson1_; do
  cp .deps/$d*.deb .carry/deps/ || echo "webgpu_pack: no $d*.deb in .deps (scripts/deps.sh, docs/CUDA.md)" >&2
done
du -sh .carry/wgpu_bins.tar.xz .carry/vulkan .carry/deps
