#!/usr/bin/env bash
# tune_confirm.sh — step 4 of bench/tune_check.sh, also on its own for a finished run:
#   bash bench/tune_confirm.sh OUTDIR   [QMM=build/tools/qmm/qmm] [THREADS=nproc] [CACHES=hot]
#                                       [CONFIRM=5] [CONFIRM_ITERS=15]
# Every point of OUTDIR/misses.txt (type m k n auto's-strategy and the strategies it was
# slower than, written by bench/tune_check.py) timed again head to head: CONFIRM rounds, each
# strategy in a `qmm bench` process of its own with CONFIRM_ITERS calls (every row verified),
# the order rotating between rounds, into OUTDIR/confirm/rR-STRATEGY-TYPE-MxK-nN.json (and the
# number of rounds into OUTDIR/confirm/rounds); then tune_check.py judges the run again
# (OUTDIR/check.md; exit status 1 when a miss stands).
set -euo pipefail
out=${1:?usage: bash bench/tune_confirm.sh OUTDIR}
QMM=${QMM:-build/tools/qmm/qmm}
THREADS=${THREADS:-$(nproc)}
CACHES=${CACHES:-hot}
[ -f "$out/misses.txt" ] || { echo "tune_confirm.sh: no $out/misses.txt (run bench/tune_check.py first)"; exit 2; }
export XDG_CACHE_HOME=$out/cache
unset QMM_TUNE_FILE QMM_STRATEGY
rm -rf "$out/confirm"
mkdir -p "$out/confirm"
echo "${CONFIRM:-5}" > "$out/confirm/rounds"
echo "== $(wc -l < "$out/misses.txt") miss(es) in the sweep: each timed again, ${CONFIRM:-5} rounds"
while read -r t m k n strategies; do
  read -r -a order <<< "$strategies"
  for r in $(seq 1 "${CONFIRM:-5}"); do
    for s in "${order[@]}"; do
      # a round whose JSON is missing or unverified is reported by tune_check.py (a rival
      # with fewer rounds than asked makes the miss stand)
      "$QMM" bench --threads "$THREADS" --types "$t" --shape "${m}x$k" --n "$n" \
        --iters "${CONFIRM_ITERS:-15}" --caches "$CACHES" --strategy "$s" \
        --json "$out/confirm/r$r-$s-$t-${m}x$k-n$n.json" < /dev/null > /dev/null ||
        echo "qmm bench exited with $? ($t ${m}x$k n=$n $s, round $r)"
    done
    order=("${order[@]:1}" "${order[0]}") # rotate: each strategy first in turn
  done
done < "$out/misses.txt"
python3 "$(dirname "$0")/tune_check.py" --slack "${SLACK:-1.10}" "$out" | tee "$out/check.md"
