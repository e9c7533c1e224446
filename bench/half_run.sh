#!/usr/bin/env bash
# half_run.sh — device checks and timings of fused on the int8 repack (src/cuda/half.cu), run
# on a GPU machine from the repository root with OUT set (the device tool's $OUT):
#   bash bench/half_run.sh
# Binaries: $BINS (default .carry/bins: test_cuda, test_conformance, cuda_bench built for
# sm_90a elsewhere, carried as .carry/bins.tar.xz; bench/half_pack.sh makes it);
# the runtime libraries from .deps/*.deb or .carry/deps/*.deb (docs/CUDA.md "The GPU run script"). ggml's CUDA
# backend as the peer, when .carry/ggml.tar.xz holds ggml_mmbench and its libraries
# (../shared/peer/README.md; built outside the repository).
# HALF_STEPS (default "tests sweep prefill peer sanitize full"):
#   tests     test_cuda: the fused-repack test and the residency, cache-policy, graph,
#             batch-invariance and out-of-memory tests that fused's copy touches
#   sweep     cuda_bench on the LFM shapes: fused with every forced tile configuration and
#             split, int8 and cached_f16 (cuBLAS f16) for SWEEP_TYPES (q4_0,q4_K) at n = 64, 512
#   prefill   fused (its own choice), int8, cached_f16 for q4_0, q4_K, q6_K, q8_0 at n = 16, 64,
#             512, 2048
#   small     gemv, int8 and fused at n = 2, 4, 8, 9 (the gemv_max_n crossover of auto)
#   hgemm     dequant_hgemm against fused, int8 and cached_f16 for q4_0, q4_K, q5_K, q6_K, q8_0
#             at n = 16 .. 2048 (the hgemm_min_n crossover of auto)
#   f16dec    dequant_hgemm's W to f16 by the unit decoders against the groups of 8: the
#             bit-exact test of both decoders and the hgemm chunk test, then dequant_hgemm with each
#             decoder and cached_f16 (the same cuBLAS GEMM on a kept f16 W) for F16DEC_TYPES
#             (default q4_0,q4_K,q5_K,q6_K,q8_0) at F16DEC_NS (default 128,512,2048); the
#             difference is the W conversion
#   model     qmm bench --backend cuda: the whole LFM2.5-350M prefill (n = 512) under the default
#             and unlimited cache policies, and the preset at n = 1, 512 (JSON in $OUT)
#   peer      ggml_mmbench -B CUDA0 -G 100 on the same shapes, types and n
#   ncu       Nsight Compute sections of the X conversion and GEMM kernels: q4_0 4608x1024 n = 512,
#             1024x1024 n = 64, for each configuration in NCU_CFGS (default -1: the library's choice)
#   sanitize  memcheck and racecheck over the quick test SAN_FILTER (default test_fused_repack;
#             SAN_TOOLS, default "memcheck racecheck"; SAN_LIMIT s each, default 90)
#   full      the whole test_cuda, then test_conformance on the CUDA backend
#   rest      the test_cuda tests after test_matmul_all, one at a time (a full run that meets its
#             200 s cap stops in or after test_matmul_all)
# HALF_END (a date +%s time, default 540 s from the start): a step starts only with 15 s left.
set -uo pipefail
steps=" ${HALF_STEPS:-tests sweep prefill peer sanitize full} "
T0=$(date +%s)
END=${HALF_END:-$((T0 + 540))}
OUT=${OUT:-$PWD/out}
L=$OUT/logs
mkdir -p "$L"
. "$(dirname "$0")/device_steps.sh"

carried_bins
# test_cuda tests one at a time: cuda_tests LIMIT NAME...
cuda_tests() {
  local limit=$1 f; shift
  for f in "$@"; do
    QMM_TEST_CUDA_FILTER="$f" timeout "$(lim "$limit")" "$T" > "$L/test_cuda_$f.log" 2>&1
    echo "test_cuda $f rc=$?"; summary "$L/test_cuda_$f.log" 6
  done
}

if step tests; then
  cuda_tests 150 test_fused_repack test_residency_lazy test_graph_api test_cache_none test_cache_limit_unlimited \
    test_auto_default_policy test_batch_invariant test_lazy_copy_oom test_dequant_hgemm_chunks
fi
if step sweep; then
  timeout "$(lim 200)" "$B" --types ${SWEEP_TYPES:-q4_0,q4_K} --ns 64,512 --strategies fused,int8,cached_f16 --fused-sweep \
    --no-decode > "$L/bench_sweep.log" 2>&1
  echo "sweep rc=$?"; cat "$L/bench_sweep.log"
fi
if step prefill; then
  timeout "$(lim 150)" "$B" --types q4_0,q4_K,q6_K,q8_0 --ns 16,64,512,2048 --strategies fused,int8,cached_f16 \
    --no-decode > "$L/bench_prefill.log" 2>&1
  echo "prefill rc=$?"; cat "$L/bench_prefill.log"
fi
if step small; then
  timeout "$(lim 90)" "$B" --types q4_0,q4_K,q6_K,q8_0 --ns 2,4,8,9 --strategies gemv,int8,fused --no-decode \
    > "$L/bench_small.log" 2>&1
  echo "small rc=$?"; cat "$L/bench_small.log"
fi
if step hgemm; then
  timeout "$(lim 150)" "$B" --types q4_0,q4_K,q5_K,q6_K,q8_0 --ns 16,32,64,128,256,512,2048 \
    --strategies dequant_hgemm,fused,int8,cached_f16 --no-decode > "$L/bench_hgemm.log" 2>&1
  echo "hgemm rc=$?"; cat "$L/bench_hgemm.log"
fi
if step f16dec; then
  cuda_tests 100 test_dequantize_f16_bit_exact test_dequant_hgemm_chunks
  timeout "$(lim 240)" "$B" --types "${F16DEC_TYPES:-q4_0,q4_K,q5_K,q6_K,q8_0}" --ns "${F16DEC_NS:-128,512,2048}" \
    --strategies dequant_hgemm,cached_f16 --f16-groups --no-decode > "$L/bench_f16dec.log" 2>&1
  echo "f16dec rc=$?"; cat "$L/bench_f16dec.log"
fi
if step model; then
  Q=$BINS/qmm
  for cache in default unlimited; do
    timeout "$(lim 90)" "$Q" bench --backend cuda --whole-model --types q4_K,q4_0,q6_K,q8_0 --n 512 --cache $cache \
      --json "$OUT/whole-$cache.json" > "$L/whole_$cache.log" 2>&1
    echo "whole model ($cache) rc=$?"; cat "$L/whole_$cache.log"
  done
  timeout "$(lim 90)" "$Q" bench --backend cuda --types q4_K,q4_0,q6_K,q8_0 --n 1,512 --json "$OUT/lfm.json" \
    > "$L/lfm.log" 2>&1
  echo "lfm preset rc=$?"; cat "$L/lfm.log"
fi
if step peer; then
  if [ -f .carry/ggml.tar.xz ]; then
    G=/tmp/ggml && mkdir -p $G && tar -xJf .carry/ggml.tar.xz -C $G
    for s in 4608x1024 1024x4608 3072x1024 1024x1024 512x1024; do
      LD_LIBRARY_PATH=$G:${LD_LIBRARY_PATH:-} timeout "$(lim 60)" $G/ggml_mmbench -B CUDA0 -G 100 -m "${s%x*}" -k "${s#*x}" \
        -t q4_0,q4_K,q6_K,q8_0 -n 16,64,512,2048
    done > "$L/ggml.log" 2>&1
    echo "ggml rc=$?"; cat "$L/ggml.log"
  else
    echo "no .carry/ggml.tar.xz: ggml not measured"
  fi
fi
if step ncu; then
  # NCU_CFGS: the fused configurations profiled (QMM_BENCH_FUSED_CFG; "-1": the library's choice)
  NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for cfg in ${NCU_CFGS:--1}; do
    for c in "4608x1024 512" "1024x1024 64"; do
      f="$L/ncu_c${cfg}_${c% *}_${c#* }.log"
      QMM_BENCH_FUSED_CFG=$cfg timeout "$(lim 90)" "$NCU" --kernel-name regex:h16_ --launch-skip 4 --launch-count 2 \
        --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats \
        --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis "$B" --types q4_0 --shapes "${c% *}" \
        --ns "${c#* }" --strategies fused --no-decode > "$f" 2>&1
      echo "ncu cfg $cfg $c rc=$?"; grep -vE "^==PROF==|^ *$|^-+$" "$f" | cut -c1-110 | head -${NCU_LINES:-90}
    done
  done
fi
if step sanitize; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in ${SAN_TOOLS:-memcheck racecheck}; do
    QMM_TEST_CUDA_QUICK=1 QMM_TEST_CUDA_FILTER="${SAN_FILTER:-test_fused_repack}" timeout "$(lim ${SAN_LIMIT:-90})" \
      "$CS" --tool $tool --error-exitcode 99 "$T" > "$L/sanitizer_$tool.log" 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$L/sanitizer_$tool.log" | tr '\n' ' ')"
  done
fi
if step full; then
  full_step "$T" 200 "$C"
fi
if step rest; then
  cuda_tests 200 test_matmul_lfm test_large_extents test_residency_lazy test_cache_none test_auto_default_policy \
    test_cache_limit_unlimited test_graph_api test_lazy_copy_oom test_dequant_hgemm_chunks
fi
finish half_run
