#!/usr/bin/env bash
# mma_run.sh — device checks and timings of the int8 kernels (src/cuda/int8.cu), run by
# bench/gpu_run.sh's exec phase (BUILD, OUT and the .deps environment set there):
#   GPU_RUN_EXEC='bash bench/mma_run.sh' bash bench/gpu_run.sh exec
# Binaries: BUILD/tests/test_cuda, BUILD/tests/test_conformance, BUILD/cuda_bench (carried from
# another machine when they load here, else built), planted test_conformance binaries
# BUILD/plant/tc_plant_* (optional; see tests/plant/cuda_plant.sh for what each plants).
# MMA_STEPS (default "tests prefill plant sanitize decode full"):
#   tests     test_cuda's int8 tests and the batch-invariance test
#   prefill   cuda_bench: int8 (the library's choice and every tile/split variant) and cached_f16
#             at n = 512 (q4_0, q4_K, q6_K, q8_0) and 64, 2048 (q4_0, q4_K) on the LFM shapes
#   plant     each planted binary must fail its class (PLANT_FILTER_<name>), the clean one pass
#   sanitize  memcheck, racecheck, synccheck over the quick int8 exact test
#   decode    gemv and int8 at n = 1, 8 (LFM and decode shapes), then the decode shapes at n = 1
#             with W rotated through 4 copies
#   decodeq   int8 on the two decode shapes at n = 1 (q4_0, q4_K; W may stay in L2)
#   full      the whole test_cuda, then test_conformance on the CUDA backend
# MMA_END (a date +%s time, default 200 s from the start): a step starts only with 15 s left and
# is cut at MMA_END. Logs: $OUT/logs.tgz (and the summary on stdout).
set -uo pipefail
steps=" ${MMA_STEPS:-tests prefill plant sanitize decode full} "
T0=$(date +%s)
END=${MMA_END:-$((T0 + 200))}
L=$OUT/logs
mkdir -p "$L"
. "$(dirname "$0")/device_steps.sh"
if ! loads "$BUILD/tests/test_cuda"; then
  echo "== build test_cuda, test_conformance here"
  rm -f "$BUILD/cuda_bench" "$BUILD/tests/test_cuda" "$BUILD/tests/test_conformance"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DQMM_CUDA=ON \
    > "$L/configure.log" 2>&1 && cmake --build "$BUILD" -j16 --target test_cuda test_conformance > "$L/build.log" 2>&1
  echo "build rc=$?"; grep -E "error|FAILED" "$L/build.log" | head -10
else
  echo "== carried binaries load here"
fi
T=$BUILD/tests/test_cuda
C=$BUILD/tests/test_conformance
B=$BUILD/cuda_bench
loads "$B" || nvcc -O2 -Xcompiler -fopenmp -o "$B" bench/cuda_bench.c -Iinclude "$BUILD/libqmm.a" \
  -lcublas -lcublasLt -lnvrtc -lopenblas -lcjson -lgomp -lm || echo "cuda_bench build failed"
if step tests; then
  for f in 'test_int8*' test_batch_invariant; do
    log="$L/test_cuda_${f//[*]/}.log"
    QMM_TEST_CUDA_FILTER="$f" timeout "$(lim 120)" "$T" > "$log" 2>&1
    echo "test_cuda $f rc=$?"; summary "$log" 10
  done
fi
if step prefill; then
  timeout "$(lim 70)" "$B" --types q4_0,q4_K,q6_K,q8_0 --ns 512 --strategies int8,cached_f16 --int8-sweep \
    > "$L/bench_prefill.log" 2>&1; echo "prefill rc=$?"; cat "$L/bench_prefill.log"
  timeout "$(lim 50)" "$B" --types q4_0,q4_K --ns 64,2048 --strategies int8,cached_f16 \
    > "$L/bench_prefill2.log" 2>&1; echo "prefill2 rc=$?"; cat "$L/bench_prefill2.log"
fi
if step plant; then
  # name:filter; a planted binary must fail (CAUGHT), the clean one pass on the same filter
  for pf in lanes:'test_D_*' dx:'test_F_m_n*'; do
    name=${pf%%:*}; filt=${pf#*:}; P=$BUILD/plant/tc_plant_$name
    [ -x "$P" ] || { echo "plant $name: no binary"; continue; }
    QMM_CONFORMANCE_BACKENDS=cuda QMM_CASES_FILTER="$filt" timeout "$(lim 40)" "$C" > "$L/plant_base_$name.log" 2>&1
    rb=$?
    QMM_CONFORMANCE_BACKENDS=cuda QMM_CASES_FILTER="$filt" timeout "$(lim 40)" "$P" > "$L/plant_$name.log" 2>&1
    rp=$?
    echo "plant $name ($filt): clean rc=$rb, planted rc=$rp -> $([ $rb -eq 0 ] && [ $rp -ne 0 ] && [ $rp -ne 124 ] && echo CAUGHT || echo NOT-CAUGHT)"
    grep -m2 -E "ERROR|FAIL|error" "$L/plant_$name.log" | cut -c1-200
  done
fi
if step sanitize; then
  for tool in memcheck racecheck synccheck; do
    QMM_TEST_CUDA_QUICK=1 QMM_TEST_CUDA_FILTER='test_int8_order_exact' timeout "$(lim 45)" \
      compute-sanitizer --tool $tool --error-exitcode 99 "$T" > "$L/sanitizer_$tool.log" 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|runs bit|PASSED|FAILED' "$L/sanitizer_$tool.log" | tr '\n' ' ')"
  done
fi
if step decode; then
  timeout "$(lim 40)" "$B" --types q4_0,q4_K --ns 1,8 --strategies gemv,int8 --int8-sweep \
    > "$L/bench_decode1.log" 2>&1; echo "decode1 rc=$?"; cat "$L/bench_decode1.log"
  timeout "$(lim 40)" "$B" --decode-only --rotate-w 4 --types q4_0,q4_K,q6_K,q8_0 --strategies gemv,int8 \
    > "$L/bench_decode.log" 2>&1; echo "decode rc=$?"; cat "$L/bench_decode.log"
fi
if step decodeq; then
  timeout "$(lim 30)" "$B" --decode-only --types q4_0,q4_K --strategies int8 > "$L/bench_decodeq.log" 2>&1
  echo "decodeq rc=$?"; cat "$L/bench_decodeq.log"
fi
if step full; then
  full_step "$T" 150 "$C"
fi
finish mma_run
