#!/usr/bin/env bash
# webgpu_probe.sh — on the GPU machine, inside `bench/gpu_run.sh webgpu_exec` (BUILD, OUT and
# Vulkan set up): what the WebGPU timings depend on, and a candidate kernel against the
# production one.
#   1. repeat: one point (f16 4608x1024 n = 512) timed PROBE_REPEATS times in one process,
#      cold (W rotated through >= 128 MiB) and hot (one copy): do later points run slower?
#   2. candidate: `qmm bench --candidate` with PROBE_CANDIDATE (default
#      bench/candidates/fused_8x8.wgsl) at each geometry of PROBE_GEOMETRIES ("WG_M WG_N
#      TILE_K", ...) on PROBE_TYPES, the LFM2.5-350M shapes, PROBE_NS: the whole output of
#      each compared with the production kernel's, both timed.
# nvidia-smi samples the SM clock, memory use and throttle reasons every 200 ms throughout
# ($OUT/probe_smi.csv), so a slowdown can be matched with the clocks.
set -uo pipefail
Q="$BUILD/tools/qmm/qmm"
REPEATS=${PROBE_REPEATS:-8}
TYPES=${PROBE_TYPES:-q4_0,q4_K,q6_K,q8_0,f16}
NS=${PROBE_NS:-512,2048}
CAND=${PROBE_CANDIDATE:-bench/candidates/fused_8x8.wgsl}
GEOMS=${PROBE_GEOMETRIES:-"16 16 32,32 32 16,32 32 32"}

nvidia-smi -q -d PERFORMANCE,CLOCK | sed -n 1,60p > "$OUT/probe_smi_start.txt" 2>&1
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,memory.used,power.draw,clocks_throttle_reasons.active \
  --format=csv -lms 200 > "$OUT/probe_smi.csv" 2>&1 &
smi=$!
mark() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" | tee -a "$OUT/probe_marks.txt"; }

shapes=$(printf '4608x1024,%.0s' $(seq "$REPEATS")); shapes=${shapes%,}
for caches in cold hot; do
  mark "repeat $caches start"
  timeout ${PROBE_REPEAT_TIMEOUT:-90} "$Q" bench --backend webgpu --types f16 --shape "$shapes" --n 512 \
    --iters 10 --warmup 2 --caches $caches --json "$OUT/probe_repeat_$caches.json" \
    > "$OUT/probe_repeat_$caches.log" 2>&1
  mark "repeat $caches rc=$?"
  grep -E "^f16|rows:" "$OUT/probe_repeat_$caches.log"
done

IFS=, read -r -a geoms <<< "$GEOMS"
for g in "${geoms[@]}"; do
  read -r wm wn tk <<< "$g"
  mark "candidate WG_M=$wm WG_N=$wn TILE_K=$tk start"
  WG_M=$wm WG_N=$wn TILE_K=$tk timeout ${PROBE_CAND_TIMEOUT:-120} "$Q" bench --backend webgpu \
    --candidate "$CAND" --types "$TYPES" --n "$NS" --iters 10 --warmup 2 \
    --json "$OUT/probe_cand_${wm}_${wn}_${tk}.json" > "$OUT/probe_cand_${wm}_${wn}_${tk}.log" 2>&1
  mark "candidate $wm $wn $tk rc=$?"
  grep -vE "^#" "$OUT/probe_cand_${wm}_${wn}_${tk}.log" | tail -60
done
kill "$smi" 2>/dev/null
nvidia-smi -q -d PERFORMANCE,CLOCK | sed -n 1,60p > "$OUT/probe_smi_end.txt" 2>&1
grep -iE "clocks event|throttle|SM  |Active|Idle" "$OUT/probe_smi_end.txt" | head -20
