#!/usr/bin/env bash
# The AVX2 targets (issue 11) on this machine: qmm at QMM_CPU_ISA=avx2 next to ggml built for
# AVX2 and OpenBLAS's Haswell kernel, in one run, every qmm row verified; then the ratios
# (bench/avx2_targets.py). Measure on a quiet machine: nothing else running.
#
#   GGML_MMBENCH=/path/ggml_mmbench OPENBLAS_BENCH=/path/openblas_bench \
#     [QMM=build/tools/qmm/qmm] [THREADS=2] [ITERS=9] [VNNI=0|auto] [SHAPES="MxK ..."] [REPEATS=N] \
#     bash bench/avx2_targets.sh OUTDIR          (SHAPES: default the LFM2.5-350M shapes)
#
# GGML_MMBENCH: ../shared/peer/ggml_mmbench.c linked against a ggml configured with
# -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON (no AVX-512, no
# AVX-VNNI); OPENBLAS_BENCH: ../shared/peer/openblas_bench.c (run with OPENBLAS_CORETYPE=Haswell).
# VNNI=0 (default) times the vpmaddubsw kernels that AVX2 CPUs without AVX-VNNI (Zen 2/3/4)
# run; VNNI=auto lets qmm use AVX-VNNI where the CPU has it.
set -euo pipefail
out=${1:?usage: bash bench/avx2_targets.sh OUTDIR}
mkdir -p "$out"
# REPEATS=N (default 1): N whole runs (qmm, ggml, OpenBLAS each time) into OUTDIR/r1..rN, then
# every check judged by its median ratio over the runs (this VM's timings swing by up to 30%
# between runs seconds apart; one run cannot settle a 1.2x check)
if [ "${REPEATS:-1}" -gt 1 ]; then
  for r in $(seq 1 "$REPEATS"); do REPEATS=1 bash "$0" "$out/r$r" > "$out/r$r.log" 2>&1; done
  python3 "$(dirname "$0")/avx2_targets.py" $(seq -f "$out/r%g" 1 "$REPEATS") | tee "$out/summary.md"
  exit 0
fi
QMM=${QMM:-build/tools/qmm/qmm}
THREADS=${THREADS:-2}
ITERS=${ITERS:-9}
VNNI=${VNNI:-0}
: "${GGML_MMBENCH:?set GGML_MMBENCH to ggml_mmbench built for AVX2}"
: "${OPENBLAS_BENCH:?set OPENBLAS_BENCH to openblas_bench}"
quant=q4_0,q4_K,q5_K,q6_K,q8_0
float=f32,f16,bf16
shapes=${SHAPES:-"4608x1024 1024x4608 3072x1024 1024x1024 512x1024"}
{ echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?')"; lscpu | grep -E "Model name|^Flags"; uptime; } > "$out/machine.txt"
export QMM_CPU_ISA=avx2 QMM_CPU_AVX_VNNI=$VNNI
shape_list=$(echo $shapes | tr ' ' ',')
# --caches hot: W reused from cache as ggml_mmbench times it (one tensor for every run), so the
# ratios compare like with like; the 14336x4096 bandwidth row is cold (streamed from memory)
q() { "$QMM" bench --threads "$THREADS" --iters "$ITERS" --warmup 2 "$@"; }
qh() { q --caches hot "$@"; }
echo "== qmm (QMM_CPU_ISA=avx2 QMM_CPU_AVX_VNNI=$VNNI, $THREADS threads)"
qh --types "$quant,$float" --shape "$shape_list" --n 1,16,512 --json "$out/qmm_auto.json" > "$out/qmm_auto.txt"
# the exact (F32) class: gemv at n = 1, fused at n = 512
qh --types "$quant,$float" --shape "$shape_list" --n 1 --strategy gemv --json "$out/qmm_exact1.json" > "$out/qmm_exact1.txt"
qh --types "$quant,$float" --shape "$shape_list" --n 512 --strategy fused --json "$out/qmm_fused.json" > "$out/qmm_fused.txt"
qh --types "$quant" --shape "$shape_list" --n 1,16,512 --batch-invariant --json "$out/qmm_bi.json" > "$out/qmm_bi.txt"
q --caches cold --types "$quant" --shape 14336x4096 --n 1 --json "$out/qmm_big.json" > "$out/qmm_big.txt"
qh --types "$quant" --shape 14336x4096 --n 1 --json "$out/qmm_big_hot.json" > "$out/qmm_big_hot.txt"
grep -E "^memory:" "$out/qmm_auto.txt" > "$out/bandwidth.txt" || true
echo "== ggml ($THREADS threads)"
: > "$out/ggml.txt"
for s in $shapes 14336x4096; do
  m=${s%x*} k=${s#*x}
  ns=1,16,512
  [ "$s" = 14336x4096 ] && ns=1
  "$GGML_MMBENCH" -j "$THREADS" -m "$m" -k "$k" -t "$quant,$float" -n "$ns" -b default,extra -s 0.5 \
    >> "$out/ggml.txt" 2>&1
done
echo "== OpenBLAS (Haswell kernel, $THREADS threads)"
: > "$out/openblas.txt"
for s in $shapes; do
  for n in 1 16 512; do
    env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS="$THREADS" \
      "$OPENBLAS_BENCH" "${s%x*}" "${s#*x}" "$n" >> "$out/openblas.txt" 2>&1
  done
done
python3 "$(dirname "$0")/avx2_targets.py" "$out" | tee "$out/summary.md"
