#!/usr/bin/env bash
# i8g_run.sh — device checks and timings of int8 at n <= 8 on the GGUF rows
# (src/cuda/int8_gemv.cu), run on a GPU machine from the repository root with OUT set:
#   bash bench/i8g_run.sh
# Binaries and libraries as bench/half_run.sh (bench/half_pack.sh makes .carry).
# I8G_STEPS (default "tests decode small peer model sanitize full"), I8G_TYPES (default
# q4_0,q4_K,q5_K,q6_K,q8_0), I8G_TESTS (the tests step's test_cuda filters):
#   tests     test_cuda: the int8-order test (every int8 kernel bit-identical to the order),
#             the identity probe, and the cache-policy, residency and auto tests
#   decode    cuda_bench at n = 1 on 4096x14336, 14336x4096, 65536x1024: gemv, int8 on the
#             GGUF rows (shared-memory and global-load variants) and int8 on the repack, with
#             I8G_ROT (default "1 4") weights objects rotated (4: W read from device memory,
#             beyond the L2 cache)
#   small     the same strategies on the LFM shapes at n = 1, 2, 4, 8
#   peer      ggml_mmbench -B CUDA0 -G 100 on the same shapes and n
#   model     qmm bench --backend cuda: the whole LFM2.5-350M decode step (n = 1, JSON in $OUT)
#             and the preset at n = 1, 8
#   ncu       Nsight Compute sections of the GGUF-row kernel: q4_0 and q6_K 4096x14336 n = 1
#   split     ncu: the durations of the X quantizer and the GGUF-row kernel (q4_0 4096x14336 and
#             65536x1024, n = 1) and the kernel's warp stall reasons
#   sanitize  memcheck, racecheck, synccheck over the quick int8 tests (the GGUF-row kernel
#             among them)
#   full      the whole test_cuda, then test_conformance on the CUDA backend
# I8G_END (a date +%s time, default 540 s from the start): a step starts only with 15 s left.
set -uo pipefail
steps=" ${I8G_STEPS:-tests decode small peer model sanitize full} "
T0=$(date +%s)
END=${I8G_END:-$((T0 + 540))}
OUT=${OUT:-$PWD/out}
L=$OUT/logs
mkdir -p "$L"
. "$(dirname "$0")/device_steps.sh"

carried_bins
TYPES=${I8G_TYPES:-q4_0,q4_K,q5_K,q6_K,q8_0}
DEC="4096x14336,14336x4096,65536x1024"
LFM="4608x1024,1024x4608,3072x1024,1024x1024,512x1024"

if step tests; then
  for f in ${I8G_TESTS:-test_int8_order_exact test_int8_rows_graph test_int8_rows_cases test_int8_identity_probe test_cache_none test_residency_lazy \
           test_auto_default_policy test_batch_invariant test_graph_capture test_stream_order}; do
    QMM_TEST_CUDA_FILTER="$f" timeout "$(lim 150)" "$T" > "$L/test_cuda_$f.log" 2>&1
    echo "test_cuda $f rc=$?"; summary "$L/test_cuda_$f.log" 6
  done
fi
if step decode; then
  for r in ${I8G_ROT:-1 4}; do
    timeout "$(lim 150)" "$B" --types "$TYPES" --shapes "$DEC" --ns 1 --strategies gemv,int8 --int8-repack \
      --no-decode --rotate-w $r > "$L/bench_decode_r$r.log" 2>&1
    echo "decode (rotate-w $r) rc=$?"; cat "$L/bench_decode_r$r.log"
  done
fi
if step small; then
  timeout "$(lim 150)" "$B" --types "$TYPES" --shapes "$LFM" --ns 1,2,4,8 --strategies gemv,int8,auto --int8-repack \
    --no-decode > "$L/bench_small.log" 2>&1
  echo "small rc=$?"; cat "$L/bench_small.log"
fi
if step peer; then
  if [ -f .carry/ggml.tar.xz ]; then
    G=/tmp/ggml && mkdir -p $G && tar -xJf .carry/ggml.tar.xz -C $G
    for s in ${DEC//,/ }; do
      LD_LIBRARY_PATH=$G:${LD_LIBRARY_PATH:-} timeout "$(lim 60)" $G/ggml_mmbench -B CUDA0 -G 100 -m "${s%x*}" -k "${s#*x}" \
        -t "$TYPES" -n 1
    done > "$L/ggml.log" 2>&1
    for s in ${LFM//,/ }; do
      LD_LIBRARY_PATH=$G:${LD_LIBRARY_PATH:-} timeout "$(lim 60)" $G/ggml_mmbench -B CUDA0 -G 100 -m "${s%x*}" -k "${s#*x}" \
        -t "$TYPES" -n 1,2,4,8
    done >> "$L/ggml.log" 2>&1
    echo "ggml rc=$?"; cat "$L/ggml.log"
  else
    echo "no .carry/ggml.tar.xz: ggml not measured"
  fi
fi
if step model; then
  Q=$BINS/qmm
  timeout "$(lim 90)" "$Q" bench --backend cuda --whole-model --types q4_K,q4_0,q6_K,q8_0 --n 1 \
    --json "$OUT/whole-n1.json" > "$L/whole_n1.log" 2>&1
  echo "whole model n = 1 rc=$?"; cat "$L/whole_n1.log"
  timeout "$(lim 90)" "$Q" bench --backend cuda --types q4_K,q4_0,q6_K,q8_0 --n 1,8 --json "$OUT/lfm-n1-8.json" \
    > "$L/lfm.log" 2>&1
  echo "lfm preset n = 1, 8 rc=$?"; cat "$L/lfm.log"
fi
if step ncu; then
  NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for t in q4_0 q6_K; do
    timeout "$(lim 90)" "$NCU" --kernel-name regex:i8g_kernel --launch-skip 2 --launch-count 1 --section SpeedOfLight \
      --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats \
      --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      --metrics dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum \
      "$B" --types $t --shapes 4096x14336 --ns 1 --strategies int8 --no-decode > "$L/ncu_$t.log" 2>&1
    echo "ncu $t rc=$?"; grep -vE "^==PROF==|^ *$|^-+$" "$L/ncu_$t.log" | cut -c1-110 | head -100
  done
fi
if step split; then
  # where a call's time goes: the duration of the X quantizer and of the GGUF-row kernel
  # (ncu serializes launches: PDL overlap is not seen), and the kernel's warp stall reasons
  NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for s in 4096x14336 65536x1024; do
    timeout "$(lim 90)" "$NCU" --kernel-name regex:"i8g_kernel|int8_quantize_x_kernel" --launch-skip 6 --launch-count 4 \
      --section WarpStateStats --section LaunchStats --section Occupancy \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__cycles_active.avg,sm__cycles_elapsed.avg \
      "$B" --types q4_0 --shapes $s --ns 1 --strategies int8 --no-decode > "$L/split_$s.log" 2>&1
    echo "split q4_0 $s rc=$?"; grep -E "^  [a-z_]+.*\(|gpu__time_duration|dram__bytes|cycles_active|cycles_elapsed|Stall|Warp Cycles|Achieved Occ|Block Limit|Registers Per|Grid Size|Block Size|Dynamic Shared" "$L/split_$s.log" | cut -c1-120 | head -80
  done
fi
if step sanitize; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck synccheck; do
    QMM_TEST_CUDA_QUICK=1 QMM_TEST_CUDA_FILTER='test_int8_*' timeout "$(lim 120)" \
      "$CS" --tool $tool --error-exitcode 99 "$T" > "$L/sanitizer_$tool.log" 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$L/sanitizer_$tool.log" | tr '\n' ' ')"
  done
fi
if step full; then
  full_step "$T" 200 "$C"
fi
finish i8g_run
