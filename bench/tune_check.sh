#!/usr/bin/env bash
# tune_check.sh — does `auto`, with the tuning file `qmm tune --quick` writes on this machine,
# pick the fastest qmm path? (docs/TUNING.md, "Checking the rows")
#
#   bash bench/tune_check.sh OUTDIR
#     [QMM=build/tools/qmm/qmm] [THREADS=nproc] [TYPES=LIST] [NS=1,4,16,64,512] [ITERS=5]
#     [TUNE_ARGS="--quick"] [CACHES=hot with --quick, else cold] [SLACK=1.10] [REPEATS=1]
#     [CONFIRM=5] [CONFIRM_ITERS=15] [TUNE_FILE=FILE]
#
# TUNE_ARGS="" runs the full (cold) `qmm tune`; CACHES then defaults to cold, like with like.
# 1. `qmm tune $TUNE_ARGS` with XDG_CACHE_HOME=OUTDIR/cache: the file goes to the default
#    location of that cache, timed (OUTDIR/tune.txt, tune.err, tune_seconds).
# 2. `qmm bench` on the LFM2.5-350M shapes at n in NS with auto, gemv, int8 and fused, the same
#    cache, so auto reads the file and the header names it (OUTDIR/sweep.json; REPEATS=N:
#    sweep1..N.json), then dequant_sgemm alone in a process of its own (blas.json, blas1..N):
#    OpenBLAS's pthread workers keep spinning after a call and, on a machine with few cores,
#    stall the OpenMP kernels timed next to them (docs/BENCH.md). Every row verified.
# 3. bench/tune_check.py: for each (type, shape, n), the forced time of the strategy auto picked
#    against the fastest strategy; a point where it is more than SLACK slower is a miss
#    (OUTDIR/screen.md, and the points in OUTDIR/misses.txt).
# 4. Each miss timed again head to head (bench/tune_confirm.sh: CONFIRM rounds; a round:
#    auto's strategy and every strategy the screen found faster than it by more than SLACK,
#    each in a `qmm bench` process of its own with CONFIRM_ITERS calls, the order rotating
#    between rounds; OUTDIR/confirm/), then tune_check.py judges again: a miss stands when,
#    against one of them, the median over the rounds of the per-round ratio is above SLACK, or
#    when rounds were lost (OUTDIR/check.md; exit status 1 when one stands). CONFIRM=0: the
#    screen is the verdict.
# TUNE_FILE=FILE: no tune; FILE is copied to the cache's default location instead (to check
# a given file, e.g. one edited to pick a slower path: the check must then fail).
# Measure on a quiet machine.
set -euo pipefail
out=${1:?usage: bash bench/tune_check.sh OUTDIR}
mkdir -p "$out/cache"
out=$(cd "$out" && pwd)
QMM=${QMM:-build/tools/qmm/qmm}
THREADS=${THREADS:-$(nproc)}
NS=${NS:-1,4,16,64,512}
ITERS=${ITERS:-5}
TUNE_ARGS=${TUNE_ARGS---quick}
case " $TUNE_ARGS " in *" --quick "*) CACHES=${CACHES:-hot} ;; *) CACHES=${CACHES:-cold} ;; esac
rm -f "$out"/sweep*.json "$out"/blas*.json "$out"/sweep*.txt "$out"/blas*.txt "$out"/check.md
types=()
[ -n "${TYPES:-}" ] && types=(--types "$TYPES")
export XDG_CACHE_HOME=$out/cache
unset QMM_TUNE_FILE QMM_STRATEGY
{ echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  lscpu | grep -E "Model name|^Flags"; uptime; env | grep -E '^QMM_' || true; } > "$out/machine.txt"
rm -rf "$out/confirm" "$out/misses.txt" "$out/screen.md"
if [ -n "${TUNE_FILE:-}" ]; then
  # the name the context looks for: tune-<machine id>.json (docs/TUNING.md)
  id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["machine"]["id"])' "$TUNE_FILE")
  rm -rf "$out/cache/qmm" # only FILE there
  mkdir -p "$out/cache/qmm"
  cp "$TUNE_FILE" "$out/cache/qmm/tune-$id.json"
  echo "== no tune: $TUNE_FILE as $out/cache/qmm/tune-$id.json"
  rm -f "$out/tune_seconds"
else
  echo "== qmm tune $TUNE_ARGS --threads $THREADS"
  t0=$(date +%s.%N)
  rc=0
  # shellcheck disable=SC2086
  "$QMM" tune $TUNE_ARGS --threads "$THREADS" "${types[@]}" > "$out/tune.txt" 2> "$out/tune.err" || rc=$?
  t1=$(date +%s.%N)
  if [ "$rc" -ne 0 ]; then
    # 1: a candidate failed verification (the file is still written without it); else fatal
    echo "qmm tune exited with $rc:"; tail -5 "$out/tune.err"
    [ "$rc" -eq 1 ] || exit "$rc"
  fi
  python3 -c "print(f'{$t1 - $t0:.1f}')" > "$out/tune_seconds"
  echo "tune took $(cat "$out/tune_seconds") s; $(ls "$out/cache/qmm")"
fi
for r in $(seq 1 "${REPEATS:-1}"); do
  sfx=""
  [ "${REPEATS:-1}" -gt 1 ] && sfx=$r
  for s in "sweep auto,gemv,int8,fused" "blas dequant_sgemm"; do
    f=${s% *}$sfx
    echo "== qmm bench --strategy ${s#* } ($f.json)"
    "$QMM" bench --threads "$THREADS" "${types[@]}" --n "$NS" --iters "$ITERS" --caches "$CACHES" \
      --strategy "${s#* }" --json "$out/$f.json" > "$out/$f.txt" ||
      echo "qmm bench exited with $? (a row failed: tune_check.py lists it)"
  done
  grep -E "^auto:" "$out/sweep$sfx.txt" || true
  if [ -n "${TUNE_FILE:-}" ] && ! grep -qF "tuning file $out/cache/qmm/tune-$id.json" "$out/sweep$sfx.txt"; then
    echo "tune_check.sh: the sweep's auto did not read $TUNE_FILE (a file for another machine?)"; exit 1
  fi
done
judge=(python3 "$(dirname "$0")/tune_check.py" --slack "${SLACK:-1.10}" "$out")
rc=0
"${judge[@]}" > "$out/screen.md" || rc=$?
if [ "$rc" -eq 0 ] || [ "${CONFIRM:-5}" -eq 0 ] || [ ! -s "$out/misses.txt" ]; then
  cp "$out/screen.md" "$out/check.md"
  cat "$out/check.md"
  exit "$rc"
fi
QMM=$QMM THREADS=$THREADS CACHES=$CACHES exec bash "$(dirname "$0")/tune_confirm.sh" "$out"
