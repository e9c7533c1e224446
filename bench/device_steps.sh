# device_steps.sh — the step machinery of the device scripts (bench/half_run.sh,
# bench/mma_run.sh, bench/i8g_run.sh), sourced after they set: steps (" name name ... "), T0 and END (date +%s),
# L (the log folder), OUT. A step starts only with 15 s left before END.
left() { echo $((END - $(date +%s))); }
# min(a step's own limit, the time left), at least 1
lim() { local l; l=$(left); [ "$l" -lt 1 ] && l=1; [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }
step() { case "$steps" in *" $1 "*) ;; *) return 1;; esac
         if [ "$(left)" -lt 15 ]; then echo "== $1: skipped (deadline)"; return 1; fi
         echo "== $1 ($(( $(date +%s) - T0 )) s, $(left) s left)"; }
loads() { [ -x "$1" ] && ! ldd "$1" | grep -q "not found"; }
summary() { grep -E "^\[ +(FAILED|PASSED) +\]|^\[  FAILED  \]|runs|agree|identical|rror|fail" "$1" | head -"${2:-8}"; }
# full: the whole test_cuda ($1, limit $2 s), then test_conformance ($3) on the CUDA backend
full_step() {
  timeout "$(lim "$2")" "$1" > "$L/test_cuda_full.log" 2>&1; echo "test_cuda (full) rc=$?"; summary "$L/test_cuda_full.log" 30
  if [ "$(left)" -ge 15 ]; then
    QMM_CONFORMANCE_BACKENDS=cuda timeout "$(lim 150)" "$3" > "$L/conformance_cuda.log" 2>&1
    echo "test_conformance (cuda) rc=$?"; summary "$L/conformance_cuda.log" 20
  else
    echo "== test_conformance: skipped (deadline)"
  fi
}
# the logs as $OUT/logs.tgz
finish() { echo "== $1 done ($(( $(date +%s) - T0 )) s)"; tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$L"; }
# The machine line, the runtime libraries from .deps/*.deb or .carry/deps/*.deb (docs/CUDA.md
# "The GPU run script"), the binaries from .carry/bins.tar.xz into $BINS (default .carry/bins):
# sets T (test_cuda), C (test_conformance), B (cuda_bench); exits when they do not load.
carried_bins() {
  echo "== machine"; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  local debs=.deps f d
  [ -d .deps ] || debs=.carry/deps
  if [ -d "$debs" ]; then
    for f in "$debs"/*.deb; do dpkg -x "$f" /tmp/deps; done
    d=/tmp/deps/usr/lib/x86_64-linux-gnu
    export LD_LIBRARY_PATH=$d:$d/openblas-pthread:${LD_LIBRARY_PATH:-}
  fi
  BINS=${BINS:-.carry/bins}
  [ -f .carry/bins.tar.xz ] && mkdir -p "$BINS" && tar -xJf .carry/bins.tar.xz -C "$BINS"
  T=$BINS/test_cuda C=$BINS/test_conformance B=$BINS/cuda_bench
  if ! loads "$T" || ! loads "$B" || ! loads "$C"; then
    echo "== the binaries in $BINS do not load here (ldd):"; ldd "$T" | grep "not found"; exit 1
  fi
  echo "== binaries: $(cat "$BINS/COMMIT" 2>/dev/null)"
}
