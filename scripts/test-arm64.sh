#!/usr/bin/env bash
# Cross-build qmm for aarch64 and run its C tests under qemu-aarch64 (Debian 12, as root or
# with sudo): `bash scripts/test-arm64.sh [BUILD_DIR]` (default build-arm64).
#
#   1. packages: gcc-aarch64-linux-gnu, qemu-user, and through `dpkg --add-architecture arm64`
#      the arm64 libraries the build links (libgomp1: OpenMP, libopenblas-dev, libcmocka-dev,
#      libcjson-dev; libopenblas-dev with --no-install-recommends brings the pthread OpenBLAS,
#      which does not pull libgomp1 in);
#   2. the cross build: cmake/aarch64-linux-gnu.cmake (ctest then runs every test program
#      through qemu-aarch64, CMAKE_CROSSCOMPILING_EMULATOR);
#   3. the tests, once per emulated CPU (QEMU_CPU): "max" (every feature qemu has: the levels
#      generic, neon, dotprod, i8mm all run, QMM_CPU_ISA selecting each) and "cortex-a57"
#      (Armv8.0: NEON without dot product or i8mm, so the best level must be neon and the
#      higher ones must be refused); "neoverse-n1" (dot product, no i8mm) checks detection only.
#      QMM_TEST_EXPECT_ISA tells test_cpu_isa which best level each CPU must be detected at.
#
# QMM_ARM64_TESTS=full (default) runs every C test at full size under both CPUs. =quick (CI:
# .ci/run) runs under "max" every C test but test_compare (portable paths at level generic
# only, which the native build runs) with QMM_CONFORMANCE_QUICK=1 (the conformance suite:
# every type, backend level, strategy and fault class, smaller shapes: tests/test_conformance.c
# says which), and under "cortex-a57" the tests whose outcome depends on the CPU model
# (test_cpu_isa, test_arm_int8, test_arm_gemv_float, test_threads, the quick conformance
# suite). The Python tests are not registered in a cross build (tests/CMakeLists.txt says why).
# docs/ARM64.md has the details and the times.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-arm64}
mode=${QMM_ARM64_TESTS:-full}
case "$mode" in full | quick) ;; *) echo "QMM_ARM64_TESTS must be full or quick" >&2; exit 2 ;; esac
start=$(date +%s)
jobs=$(nproc)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
pkgs="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user cmake ninja-build pkgconf
      libgomp1:arm64 libopenblas-dev:arm64 libcmocka-dev:arm64 libcjson-dev:arm64"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "== installing:$missing"
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
qemu-aarch64 -version | head -1

echo "== cross build ($dir)"
mkdir -p "$dir"
# WebGPU off: scripts/deps.sh unpacks the x86-64 wgpu-native only (no aarch64 library to load
# under qemu, and no Vulkan driver there); the WebGPU backend's tests run in the x86-64 stages.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQMM_CUDA=OFF -DQMM_WEBGPU=OFF \
  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake >"$dir/configure.log" 2>&1 ||
  { cat "$dir/configure.log"; exit 1; }
grep "qmm:" "$dir/configure.log" || true
cmake --build "$dir" -j "$jobs"
built=$(date +%s)

# Idle OpenMP threads sleep instead of spinning (every test under the emulator makes many
# small calls on a shared runner).
export OMP_WAIT_POLICY=passive

run_tests() { # QEMU_CPU, expected best level, then ctest arguments
  local cpu=$1 expect=$2 t0
  shift 2
  t0=$(date +%s)
  echo "== tests under qemu-aarch64 -cpu $cpu (best level $expect): ctest $*"
  QEMU_CPU=$cpu QMM_TEST_EXPECT_ISA=$expect ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@"
  echo "== -cpu $cpu: $(( $(date +%s) - t0 )) s"
}

cpu_dependent='^(test_cpu_isa|test_arm_int8|test_arm_gemv_float|test_threads|test_conformance)$'
if [ "$mode" = full ]; then
  run_tests max i8mm
  run_tests cortex-a57 neon
else
  QMM_CONFORMANCE_QUICK=1 run_tests max i8mm -E '^test_compare$'
  QMM_CONFORMANCE_QUICK=1 run_tests cortex-a57 neon -R "$cpu_dependent"
fi
echo "== detection under qemu-aarch64 -cpu neoverse-n1 (best level dotprod)"
QEMU_CPU=neoverse-n1 QMM_TEST_EXPECT_ISA=dotprod QMM_TEST_ISA_ONLY=1 qemu-aarch64 "$dir/tests/test_cpu_isa"

echo "== test-arm64.sh ($mode) done: build $(( built - start )) s, tests $(( $(date +%s) - built )) s, total $(( $(date +%s) - start )) s"
