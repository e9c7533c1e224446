#!/usr/bin/env bash
# mma_run.sh — device checks and timings of the int8 kernels (src/cuda/int8.cu), run by
# bench/gpu_run.sh's exec phase (BUILD, OUT and the .deps environment set there):
#   GPU_RUN_EXEC='bash bench/mma_run.sh' bash bench/gpu_run.sh exec
# MMA_STEPS (default "tests prefill decode1 decode"): tests = test_cuda's int8 tests and the
# batch-invariance test; prefill = cuda_bench int8 (every tile/split variant) and cached_f16 at
# n = 512, 2048 on the LFM shapes; decode1 = gemv and int8 at n = 1, 8 (LFM and decode shapes,
# W may stay in L2); decode = the two decode shapes at n = 1 with W rotated through 4 copies.
# MMA_END (a date +%s time, default 200 s from the start): a step starts only with 15 s left
# and is cut at MMA_END.
set -uo pipefail
steps=" ${MMA_STEPS:-tests prefill decode1 decode} "
T0=$(date +%s)
END=${MMA_END:-$((T0 + 200))}
left() { echo $((END - $(date +%s))); }
lim() { local l; l=$(left); [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; } # min(step limit, time left)
step() { case "$steps" in *" $1 "*) ;; *) return 1;; esac
         if [ "$(left)" -lt 15 ]; then echo "== $1: skipped (deadline)"; return 1; fi
         echo "== $1 ($(( $(date +%s) - T0 )) s, $(left) s left)"; }
# Binaries carried from another machine (BUILD/tests/test_cuda, BUILD/cuda_bench) are used when
# they load here; otherwise test_cuda is built (sm_90a) and cuda_bench linked from libqmm.a.
if [ ! -x "$BUILD/tests/test_cuda" ] || ldd "$BUILD/tests/test_cuda" | grep -q "not found"; then
  echo "== build test_cuda here"
  rm -f "$BUILD/cuda_bench" "$BUILD/tests/test_cuda"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DQMM_CUDA=ON \
    > "$OUT/configure.log" 2>&1 && cmake --build "$BUILD" -j16 --target test_cuda > "$OUT/build.log" 2>&1
  echo "build rc=$?"; grep -E "error|FAILED" "$OUT/build.log" | head -10
else
  echo "== carried binaries load here"
fi
if step tests; then
  for f in 'test_int8*' test_batch_invariant; do
    log="$OUT/test_cuda_${f//[*]/}.log"
    QMM_TEST_CUDA_FILTER="$f" timeout "$(lim 150)" "$BUILD/tests/test_cuda" > "$log" 2>&1
    rc=$?
    echo "test_cuda $f rc=$rc"
    grep -E "^\[ +(FAILED|PASSED|OK) +\]|runs|error|fail" "$log" | head -14
    if [ $rc -ne 0 ] && [ "$f" = 'test_int8*' ] && [ "$(left)" -gt 90 ]; then
      echo "== memcheck of the quick int8 tests (they failed)"
      QMM_TEST_CUDA_QUICK=1 QMM_TEST_CUDA_FILTER='test_int8_order_exact' timeout 60 compute-sanitizer --tool memcheck \
        "$BUILD/tests/test_cuda" > "$OUT/memcheck_int8.log" 2>&1
      grep -E "ERROR SUMMARY|Invalid|at 0x|by thread|Address" "$OUT/memcheck_int8.log" | head -12
    fi
  done
fi
B=$BUILD/cuda_bench
[ -x "$B" ] && ! ldd "$B" | grep -q "not found" || nvcc -O2 -Xcompiler -fopenmp -o "$B" bench/cuda_bench.c -Iinclude "$BUILD/libqmm.a" \
  -lcublas -lcublasLt -lnvrtc -lopenblas -lgomp -lm || echo "cuda_bench build failed"
if step prefill; then
  timeout "$(lim 90)" "$B" --types q4_0,q4_K --ns 512,2048 --strategies int8,cached_f16 --int8-sweep \
    > "$OUT/bench_prefill.log" 2>&1; echo "prefill rc=$?"; cat "$OUT/bench_prefill.log"
fi
if step decode1; then
  timeout "$(lim 60)" "$B" --types q4_0,q4_K --ns 1,8 --strategies gemv,int8 --int8-sweep \
    > "$OUT/bench_decode1.log" 2>&1; echo "decode1 rc=$?"; cat "$OUT/bench_decode1.log"
fi
if step decode; then
  timeout "$(lim 60)" "$B" --decode-only --rotate-w 4 --types q4_0,q4_K,q6_K,q8_0 --strategies gemv,int8 \
    > "$OUT/bench_decode.log" 2>&1; echo "decode rc=$?"; cat "$OUT/bench_decode.log"
fi
echo "== mma_run done ($(( $(date +%s) - T0 )) s)"
