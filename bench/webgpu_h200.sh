#!/usr/bin/env bash
# webgpu_h200.sh — on the GPU machine (carry [".carry"], made by bench/webgpu_pack.sh): the
# WebGPU backend through the NVIDIA driver's Vulkan ICD with the binaries built on the
# development machine (nothing is built here). Logs and JSON go to $OUT (default ./out).
# Steps (WGPU_STEPS, default "info tests conformance cand bench"):
#   info         the adapter line and features (test_webgpu's first lines)
#   tests        test_webgpu (every WebGPU test)
#   conformance  test_conformance on the webgpu backend alone
#   cand         qmm bench --candidate for each file of WGPU_CAND (default
#                src/webgpu/wgsl/fused_coop.wgsl) against the production fused kernel on
#                WGPU_CAND_TYPES at WGPU_CAND_NS, the LFM2.5-350M shapes; bit-identical unless
#                WGPU_CAND_TOL is set (--tolerance); WGPU_CAND_ARGS: more flags (e.g. --tile-k 16)
#   bench        qmm bench --backend webgpu on WGPU_BENCH_TYPES at WGPU_BENCH_NS (JSON in $OUT)
#   exec         eval "$WGPU_EXEC"
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
STEPS=${WGPU_STEPS:-"info tests conformance cand bench"}
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
B=/tmp/qmm-wgpu-bins
mkdir -p "$B" /tmp/deps
tar -xJf .carry/wgpu_bins.tar.xz -C "$B"
echo "== binaries of $(cat "$B/COMMIT")"; date -u
for f in .carry/deps/*.deb; do dpkg -x "$f" /tmp/deps; done
D=/tmp/deps/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$D:$D/openblas-pthread:${LD_LIBRARY_PATH:-}
for f in .carry/vulkan/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
XDG_RUNTIME_DIR=$(mktemp -d)
export XDG_RUNTIME_DIR QMM_WGPU_LIBRARY=$B/libwgpu_native-release.so
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
Q=$B/qmm

if want info; then
  timeout 60 "$B/test_webgpu" 2>&1 | grep -E "adapter|feature|coop|subgroup" | head -8
fi
if want tests; then
  timeout ${WGPU_TEST_TIMEOUT:-240} "$B/test_webgpu" > "$OUT/test_webgpu.log" 2>&1
  echo "test_webgpu rc=$?"; grep -E "FAILED|PASSED|SKIPPED|error" "$OUT/test_webgpu.log" | head -30
fi
if want conformance; then
  QMM_CONFORMANCE_BACKENDS=webgpu timeout ${WGPU_CONF_TIMEOUT:-240} "$B/test_conformance" \
    > "$OUT/conformance_webgpu.log" 2>&1
  echo "test_conformance (webgpu) rc=$?"; grep -E "backends:|FAILED|PASSED|bad outputs" "$OUT/conformance_webgpu.log" | head -30
fi
if want cand; then
  for f in ${WGPU_CAND:-src/webgpu/wgsl/fused_coop.wgsl}; do
    echo "== candidate $f"
    timeout ${WGPU_CAND_TIMEOUT:-200} "$Q" bench --backend webgpu --candidate "$f" \
      --types "${WGPU_CAND_TYPES:-q4_0,q4_K,q6_K,q8_0,f16}" --preset lfm2.5-350m \
      --n "${WGPU_CAND_NS:-512}" ${WGPU_CAND_TOL:+--tolerance "$WGPU_CAND_TOL"} ${WGPU_CAND_ARGS:-} \
      --iters "${WGPU_ITERS:-10}" --warmup 2 --json "$OUT/cand_$(basename "$f" .wgsl)${WGPU_CAND_TAG:-}.json" 2>&1 | grep -v '^#' | tail -60
    echo "candidate rc=${PIPESTATUS[0]}"
  done
fi
if want bench; then
  timeout ${WGPU_BENCH_TIMEOUT:-240} "$Q" bench --backend webgpu --types "${WGPU_BENCH_TYPES:-q4_0,q4_K,q6_K,q8_0,f16}" \
    --n "${WGPU_BENCH_NS:-1,512,2048}" --iters "${WGPU_ITERS:-10}" --warmup 2 --json "$OUT/bench_webgpu.json" 2>&1 | tail -50
  echo "bench rc=${PIPESTATUS[0]}"
fi
if want exec; then
  echo "== exec: ${WGPU_EXEC:-}"
  eval "${WGPU_EXEC:-true}"
  echo "exec rc=$?"
fi
