#!/usr/bin/env bash
# webgpu_probe.sh — on the GPU machine, inside `bench/gpu_run.sh webgpu_exec` (BUILD, OUT and
# Vulkan set up): what the WebGPU timings depend on, and a candidate kernel against the
# production one.
#   1. repeat: one point (f16 4608x1024 n = 512) timed PROBE_REPEATS times in one process,
#      cold (W rotated through >= 128 MiB) and hot (one copy): do later points run slower?
#   2. bench: qmm bench --backend webgpu on PROBE_TYPES, the LFM shapes, n = 1 and PROBE_NS,
#      then 4096x14336, 14336x4096 and 65536x1024 at n = 1 (PROBE_BIG_TYPES);
#   3. candidate: `qmm bench --candidate` with PROBE_CANDIDATE (default the production
#      src/webgpu/wgsl/fused.wgsl itself: a self-check; the candidates tried are diffs in
#      bench/results/h200-webgpu-clocks/, `patch` them onto a copy) at each geometry of PROBE_GEOMETRIES ("WG_M WG_N
#      TILE_K", ...) on PROBE_TYPES, the LFM2.5-350M shapes, PROBE_NS: the whole output of
#      each compared with the production kernel's, both timed.
#   4. gemv: PROBE_GEMV_CANDIDATE (default src/webgpu/wgsl/gemv.wgsl) against the
#      production gemv on the LFM shapes and 4096x14336, 14336x4096, 65536x1024 at PROBE_GEMV_NS;
# PROBE_STEPS picks among repeat, bench, candidate, gemv (default the first three).
# nvidia-smi samples the SM clock, memory use and throttle reasons every 200 ms throughout
# ($OUT/probe_smi.csv), so a slowdown can be matched with the clocks. Files: probe_smi.csv,
# probe_repeat.json, probe_bench.json, probe_big.json (the rest is on stdout: the device returns few files).
set -uo pipefail
Q="${BUILD:?BUILD: the build directory (gpu_run.sh exports it)}/tools/qmm/qmm"
: "${OUT:?OUT: where the files go (gpu_run.sh exports it)}"
REPEATS=${PROBE_REPEATS:-8}
TYPES=${PROBE_TYPES:-q4_0,q4_K,q6_K,q8_0,f16}
NS=${PROBE_NS:-512,2048}
CAND=${PROBE_CANDIDATE:-src/webgpu/wgsl/fused.wgsl}
GEOMS=${PROBE_GEOMETRIES:-"16 16 32,32 32 16,16 16 16"}
STEPS=${PROBE_STEPS:-"repeat bench candidate"}
GEMV_CAND=${PROBE_GEMV_CANDIDATE:-src/webgpu/wgsl/gemv.wgsl}
step() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }

nvidia-smi -q -d PERFORMANCE,CLOCK | grep -E "SM  |Idle|Power Cap|Slowdown" | head -12
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,memory.used,power.draw,clocks_throttle_reasons.active \
  --format=csv -lms 200 > "$OUT/probe_smi.csv" 2>&1 &
smi=$!
trap 'kill "$smi" 2>/dev/null' EXIT
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*"; }

shapes=$(printf '4608x1024,%.0s' $(seq "$REPEATS")); shapes=${shapes%,}
for caches in cold hot; do
  step repeat || break
  mark "repeat $caches start"
  timeout ${PROBE_REPEAT_TIMEOUT:-120} "$Q" bench --backend webgpu --types f16 --shape "$shapes" --n 512 \
    --iters 10 --warmup 2 --caches $caches $([ $caches = cold ] && echo --json "$OUT/probe_repeat.json") \
    2>&1 | grep -E "^f16|rows:|timing|ms\(1call\)"
  mark "repeat $caches rc=${PIPESTATUS[0]}"
done

# the LFM shapes of the issue's targets, then the big decode shape
if step bench; then
mark "bench start"
timeout ${PROBE_BENCH_TIMEOUT:-300} "$Q" bench --backend webgpu --types "$TYPES" --n "1,$NS" \
  --iters 10 --warmup 2 --json "$OUT/probe_bench.json" 2>&1 | grep -vE "^#"
mark "bench rc=${PIPESTATUS[0]}"
timeout ${PROBE_BIG_TIMEOUT:-200} "$Q" bench --backend webgpu --types "${PROBE_BIG_TYPES:-q4_0,q4_K,q6_K,q8_0}" \
  --shape 4096x14336,14336x4096,65536x1024 --n 1 --iters 20 --warmup 3 --json "$OUT/probe_big.json" \
  2>&1 | grep -E "^q|rows:"
mark "bench big rc=${PIPESTATUS[0]}"
fi

IFS=, read -r -a geoms <<< "$GEOMS"
step candidate || geoms=()
for g in "${geoms[@]}"; do
  read -r wm wn tk <<< "$g"
  mark "candidate WG_M=$wm WG_N=$wn TILE_K=$tk start"
  WG_M=$wm WG_N=$wn TILE_K=$tk timeout ${PROBE_CAND_TIMEOUT:-300} "$Q" bench --backend webgpu \
    --candidate "$CAND" --types "$TYPES" --n "$NS" --iters 10 --warmup 2 2>&1 | grep -vE "^# (device|verdict)"
  mark "candidate $wm $wn $tk rc=${PIPESTATUS[0]}"
done
if step gemv; then # the gemv candidate: decode sizes, then the big decode shapes
  for shapes in "" "--shape 4096x14336,14336x4096,65536x1024"; do
    mark "gemv candidate $shapes start"
    # shellcheck disable=SC2086
    timeout ${PROBE_CAND_TIMEOUT:-300} "$Q" bench --backend webgpu --candidate "$GEMV_CAND" --kernel gemv \
      --types "$TYPES" $shapes --n "${PROBE_GEMV_NS:-1,2,4,8}" --iters 10 --warmup 2 2>&1 | grep -vE "^# (device|verdict)"
    mark "gemv candidate rc=${PIPESTATUS[0]}"
  done
fi
kill "$smi" 2>/dev/null
nvidia-smi -q -d PERFORMANCE,CLOCK | grep -E "SM  |Idle|Power Cap|Slowdown" | head -12
