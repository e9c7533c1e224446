#!/usr/bin/env bash
# cuda_plant.sh — plant one defect at a time into a COPY of the CUDA sources and check that
# the CUDA backend of tests/test_conformance catches it (the test fails). For a GPU machine;
# the repository itself is never modified.
#
# Usage: bash tests/plant/cuda_plant.sh SRC_DIR BUILD_DIR
#   SRC_DIR    a qmm source tree (the repository root)
#   BUILD_DIR  a scratch build directory (created; reused between runs, rebuilt incrementally)
# PLANT_ONLY=REGEX: plant only the defects whose names match (grep -E), baseline included.
# PLANT_DRY_RUN=1: only check that every substitution of every defect applies to SRC_DIR's
#   files (no copy, build or GPU; usable anywhere, e.g. after editing a planted file).
# Environment: ARCH (CMAKE_CUDA_ARCHITECTURES, default 90a), JOBS (default 16), and whatever
#   the build needs to find cmocka/OpenBLAS (bench/gpu_run.sh sets PKG_CONFIG_PATH etc. from
#   .deps: run this after it, in the same shell, or export the same variables).
#
# Steps: copy SRC_DIR (without .git and build dirs) to BUILD_DIR/src; configure BUILD_DIR/build
# once; build test_conformance and run the baseline (every filtered test group must pass, else
# exit 3). Then for each planted defect: restore the pristine file, apply the sed, check that
# it changed the file (else NOT APPLIED: the code moved; the sed needs updating), rebuild the
# test binary (ninja rebuilds only what the file touches), run test_conformance with
# QMM_CASES_FILTER set to the class's tests and QMM_CONFORMANCE_BACKENDS=cuda (the CPU levels
# are not what is planted), and record CAUGHT (test failed) or MISSED.
# Exit: 0 all applied defects caught; 1 some defect missed; 2 none missed but some not
# applied; 3 baseline failed or build broken.
set -uo pipefail
SRC=${1:?usage: cuda_plant.sh SRC_DIR BUILD_DIR}
WORK=${2:?usage: cuda_plant.sh SRC_DIR BUILD_DIR}
ARCH=${ARCH:-90a}
JOBS=${JOBS:-16}
SRC=$(cd "$SRC" && pwd)
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
COPY=$WORK/src
BUILD=$WORK/build
LOG=$WORK/logs
mkdir -p "$LOG"
T0=$(date +%s)

# name | test filter (cmocka glob) | file (relative to the tree) | sed substitutions (-E not
# used), separated by " ;; " when a defect needs several (e.g. the same fault in the
# per-element decoder and in the unit decoder): EACH must change the file, else the defect is
# reported NOT APPLIED (a pattern that silently stopped matching would weaken the defect).
PLANTS=(
"D_q4_0_nibble_order|test_D_*|src/cuda/dequant.cuh|s/(j < 16 ? (byte \& 0xF) : (byte >> 4)) - 8;/(j < 16 ? (byte >> 4) : (byte \& 0xF)) - 8;/ ;; s/const int p = 8 \* (j \& 1) + 4 \* half;/const int p = 8 * (j \& 1) + 4 * (1 - half);/"
"D_kquant_min_added|test_D_*|src/cuda/dequant.cuh|s/return __fsub_rn(__fmul_rn(d1, (float)q), m1);/return __fadd_rn(__fmul_rn(d1, (float)q), m1);/ ;; s/f(e0 + 32 \* s + j, __fsub_rn(/f(e0 + 32 * s + j, __fadd_rn(/"
"B_f16_subnormal_scale_flushed|test_B_*|src/cuda/dequant.cuh|s/if (man == 0) return __uint_as_float(sign);/if (exp == 0) return __uint_as_float(sign);/"
"C_q8_0_minus128_clamped|test_C_*|src/cuda/dequant.cuh|s/return __fmul_rn((float)(int8_t)b\[2 + j\]/return __fmul_rn((float)max(-127, (int)(int8_t)b[2 + j])/ ;; s/f(e0 + j, __fmul_rn(qmm_cuda_field(bits, p, 128), qmm_cuda_scale_p(d, p)));/f(e0 + j, __fmul_rn(fmaxf(qmm_cuda_field(bits, p, 128), -127.0f * (float)(1u << p)), qmm_cuda_scale_p(d, p)));/"
"D_int8_kquant_min_sign_flipped|test_D_*|src/cuda/int8.cu|s/mn\[0\] = -__fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b + 2)), (float)m);/mn[0] = __fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b + 2)), (float)m);/"
"C_int8_repack_minus128_clamped|test_C_*|src/cuda/int8.cu|s/q\[j\] = (int8_t)b\[2 + j\];/q[j] = (int8_t)max(-127, (int)(int8_t)b[2 + j]);/"
"A_x_f16_saturated_not_inf|test_A_*|src/cuda/dequant.cu|s/{ return __half_as_ushort(__float2half_rn(v)); }/{ return __half_as_ushort(__float2half_rn(fminf(fmaxf(v, -65504.0f), 65504.0f))); }/"
"G_gemv_order_depends_on_n|test_G_*|src/cuda/gemv.cu|s/acc\[i\]\[t\] = fmaf(wv\[i\], xv, acc\[i\]\[t\]);/acc[i][t] = NT > 1 ? __fadd_rn(acc[i][t], __fmul_rn(wv[i], xv)) : fmaf(wv[i], xv, acc[i][t]);/"
"F_gemv_no_token_grid_loop|test_F_*|src/cuda/gemv.cu|s/g < groups; g += gridDim.y)/g < groups; g += groups)/"
"F_gemv_last_row_skipped_big_m|test_F_*|src/cuda/gemv.cu|s/t0 + lane < n \&\& r\[i\] < m)/t0 + lane < n \&\& r[i] < m - (m > 65536 ? 1 : 0))/"
"H_fp8_padding_columns_stale|test_H_*|src/cuda/fp8.cu|s/for (int64_t i = threadIdx.x; i < quads; i += kThreads) {/for (int64_t i = threadIdx.x; i < (k + 3) \/ 4; i += kThreads) {/"
"M_timer_end_event_on_other_stream|test_M_*|src/cuda/backend.c|s/cudaEventRecord(c->timer_stop, c->stream)/cudaEventRecord(c->timer_stop, 0)/"
"E_gemv_units_past_k|test_E_*|src/cuda/gemv.cu|s/const int kc = (int)(k - c0 < CH ? k - c0 : CH);/const int kc = CH;/"
"D_int8_repack_lanes_swapped|test_D_*|src/cuda/int8.cu|s/at = (4 \* g + t) \* 16 + (2 \* hh + e8) \* 4;/at = (4 * g + (t ^ 1)) * 16 + (2 * hh + e8) * 4;/"
"F_int8_epilogue_dx_of_other_column|test_F_m_n*|src/cuda/int8.cu|s/(e \& 1) ? dxv\[ni\].y : dxv\[ni\].x/(e >> 1) ? dxv[ni].y : dxv[ni].x/ ;; s/(e \& 1) ? dxv.y : dxv.x/(e >> 1) ? dxv.y : dxv.x/"
)

if [ -n "${PLANT_ONLY:-}" ]; then
  kept=()
  for p in "${PLANTS[@]}"; do
    printf '%s\n' "${p%%|*}" | grep -qE "$PLANT_ONLY" && kept+=("$p")
  done
  PLANTS=("${kept[@]}")
  [ ${#PLANTS[@]} -gt 0 ] || { echo "PLANT_ONLY=$PLANT_ONLY matches no defect"; exit 3; }
fi

if [ "${PLANT_DRY_RUN:-0}" = 1 ]; then
  dry_bad=0
  for p in "${PLANTS[@]}"; do
    IFS='|' read -r name filter file script <<< "$p"
    tmp=$WORK/dry.tmp
    cp "$SRC/$file" "$tmp" || { echo "NOT APPLIED  $name ($file missing)"; dry_bad=1; continue; }
    while IFS= read -r sub; do
      before=$(cksum < "$tmp")
      sed -i -e "$sub" "$tmp"
      if [ "$(cksum < "$tmp")" = "$before" ]; then echo "NOT APPLIED  $name: ${sub:0:80}"; dry_bad=1; fi
    done < <(printf '%s\n' "$script" | sed 's/ ;; /\n/g')
    echo "applies      $name ($(diff "$SRC/$file" "$tmp" | grep -c '^>') line(s) in $file)"
  done
  rm -f "$WORK/dry.tmp"
  exit $((dry_bad * 2))
fi

echo "== copy $SRC -> $COPY"
mkdir -p "$COPY"
# tar keeps mtimes of unchanged files, so an existing build stays incremental
(cd "$SRC" && tar -c --exclude=./.git --exclude='./build*' --exclude=./.snap --exclude=./.deps \
   --exclude=./out . ) | (cd "$COPY" && tar -x)

echo "== configure + build test_conformance (sm_$ARCH)"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$COPY" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DQMM_CUDA=ON -DQMM_BUILD_TOOLS=OFF > "$LOG/configure.log" 2>&1 || { tail -30 "$LOG/configure.log"; exit 3; }
fi
build() { cmake --build "$BUILD" --target test_conformance -j"$JOBS" > "$LOG/build_$1.log" 2>&1; }
build baseline || { grep -E "error|FAILED" "$LOG/build_baseline.log" | head -20; exit 3; }
TEST=$BUILD/tests/test_conformance
export QMM_CONFORMANCE_BACKENDS=cuda


echo "== baseline (pristine copy)"
FILTERS=$(printf '%s\n' "${PLANTS[@]}" | cut -d'|' -f2 | sort -u)
base_ok=1
for f in $FILTERS; do
  QMM_CASES_FILTER="$f" timeout 300 "$TEST" > "$LOG/baseline_${f//[*]/}.log" 2>&1
  rc=$?
  echo "baseline $f: rc=$rc"
  if [ $rc -eq 77 ]; then echo "test_conformance skipped (no GPU?)"; exit 3; fi
  [ $rc -eq 0 ] || { base_ok=0; grep -E "ERROR|FAILED" "$LOG/baseline_${f//[*]/}.log" | head -5; }
done
[ $base_ok -eq 1 ] || { echo "baseline fails: planted defects cannot be judged"; exit 3; }

missed=0; notapplied=0; prev=""
declare -a RESULTS
for p in "${PLANTS[@]}"; do
  IFS='|' read -r name filter file script <<< "$p"
  # restore the file the previous defect touched, then plant this one
  [ -n "$prev" ] && [ "$prev" != "$file" ] && cp "$SRC/$prev" "$COPY/$prev"
  if [ ! -f "$SRC/$file" ]; then
    RESULTS+=("NOT APPLIED  $name ($file does not exist)"); notapplied=$((notapplied + 1)); prev=""; continue
  fi
  cp "$SRC/$file" "$COPY/$file"
  prev=$file
  dead=""
  while IFS= read -r sub; do
    before=$(cksum < "$COPY/$file")
    sed -i -e "$sub" "$COPY/$file"
    [ "$(cksum < "$COPY/$file")" = "$before" ] && dead="$sub"
  done < <(printf '%s\n' "$script" | sed 's/ ;; /\n/g')
  if [ -n "$dead" ]; then
    RESULTS+=("NOT APPLIED  $name (pattern not found in $file: ${dead:0:80})"); notapplied=$((notapplied + 1)); continue
  fi
  echo "== $name: $(diff "$SRC/$file" "$COPY/$file" | grep -c '^>') line(s) changed in $file"
  if ! build "$name"; then
    RESULTS+=("BUILD FAILED $name (see $LOG/build_$name.log)"); notapplied=$((notapplied + 1)); continue
  fi
  QMM_CASES_FILTER="$filter" timeout 300 "$TEST" > "$LOG/plant_$name.log" 2>&1
  rc=$?
  first=$(grep -m1 -E "^ERROR|error:" "$LOG/plant_$name.log" | cut -c1-220)
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    RESULTS+=("CAUGHT       $name by $filter (rc=$rc): $first")
  else
    RESULTS+=("MISSED       $name ($filter passed, rc=$rc)"); missed=$((missed + 1))
  fi
done
[ -n "$prev" ] && cp "$SRC/$prev" "$COPY/$prev"

echo "== results ($(( $(date +%s) - T0 )) s)"
printf '%s\n' "${RESULTS[@]}"
if [ $missed -gt 0 ]; then echo "$missed planted defect(s) MISSED"; exit 1; fi
if [ $notapplied -gt 0 ]; then echo "$notapplied planted defect(s) not applied or not built"; exit 2; fi
echo "every planted defect was caught"
exit 0
