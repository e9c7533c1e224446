#!/usr/bin/env bash
# Build qmm and run every test: `bash scripts/test.sh [BUILD_DIR]` (default build).
# Extra CMake arguments come from QMM_CMAKE_ARGS (e.g. "-DQMM_SANITIZE=ON -DQMM_CUDA=OFF").
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
# shellcheck disable=SC2086
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release ${QMM_CMAKE_ARGS:-}
cmake --build "$dir" -j "$(nproc)"
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)"
