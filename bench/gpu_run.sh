#!/usr/bin/env bash
# gpu_run.sh — on a GPU machine: build qmm with CUDA (sm_90a), run the whole ctest suite,
# compute-sanitizer (memcheck, racecheck, synccheck) over tests/test_cuda in its reduced mode,
# and the CUDA benchmark; logs go to $OUT (default ./out).
#
# The lent H200 machine has no registry access: build dependencies (OpenBLAS, cmocka, cJSON,
# pkgconf, as Debian 12 .deb files) and the gguf Python package travel in .deps/ (ignored by
# git; see docs/CUDA.md for how to fill it) and are unpacked under /tmp/deps, not into /.
# Usage: bash bench/gpu_run.sh [PHASE...]   PHASE: ctest test_cuda memcheck racecheck synccheck
#        bench bench_quick bench_types plant cuda_tests exec (default: ctest memcheck racecheck
#        synccheck bench). bench_types: qmm bench --backend cuda on BENCH_TYPES at BENCH_NS.
#        cuda_tests: only the GPU tests of the suite. exec: eval "$GPU_RUN_EXEC" (after the build and
#        the .deps setup). QMM_BENCH=0 skips `qmm bench` in bench. The build
#        always runs. Phases share one 10-minute device call: pick what fits.
#        CUDA_BENCH_ARGS: arguments for bench/cuda_bench (e.g. "--types q4_0 --ns 1,512");
#        plant: tests/plant/cuda_plant.sh (planted defects must be caught by test_conformance;
#        PLANT_ONLY=REGEX plants only the defects whose names match). QMM_NO_BUILD=1 skips
#        the build (for phases that build their own, like plant).
set -uo pipefail
PHASES=${*:-ctest memcheck racecheck synccheck bench}
want() { case " $PHASES " in *" $1 "*) return 0;; esac; return 1; }
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
SRC=$(pwd)
BUILD=${BUILD:-/tmp/qmm-build}
exec > >(tee "$OUT/gpu_run.log") 2>&1

echo "== machine"; date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
nvcc --version | tail -1; cmake --version | head -1; gcc --version | head -1

if [ -d .deps ] && ! pkg-config --exists cmocka 2>/dev/null; then
  echo "== unpacking .deps into /tmp/deps"
  for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
  D=/tmp/deps/usr/lib/x86_64-linux-gnu
  export PKG_CONFIG_PATH=$D/pkgconfig:$D/openblas-pthread/pkgconfig
  # Point the unpacked .pc files at /tmp/deps (a PKG_CONFIG_SYSROOT_DIR would also prefix the
  # paths of qmm's own installed qmm.pc, which test_install reads).
  find /tmp/deps -name '*.pc' -exec sed -i -E -e 's#^([a-z_]+)=/usr#\1=/tmp/deps/usr#' -e 's# -([LI])/usr# -\1/tmp/deps/usr#g' {} +
  export LD_LIBRARY_PATH=$D:$D/openblas-pthread:${LD_LIBRARY_PATH:-}
  export LIBRARY_PATH=$D:$D/openblas-pthread
  export PATH=/tmp/deps/usr/bin:$PATH
  export PYTHONPATH=$SRC/.deps/py:${PYTHONPATH:-}
fi

if [ "${QMM_NO_BUILD:-0}" != 1 ]; then
echo "== configure + build"
cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQMM_CUDA=ON > "$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
# QMM_BUILD_TARGETS (e.g. "test_cuda test_conformance qmm_cli") builds only those
# shellcheck disable=SC2086
cmake --build "$BUILD" -j16 ${QMM_BUILD_TARGETS:+--target $QMM_BUILD_TARGETS} -- -k 0 > "$OUT/build.log" 2>&1
echo "build rc=$? (errors, if any:)"; grep -E "error|FAILED" "$OUT/build.log" | head -20
fi

if want ctest; then
  echo "== ctest (whole suite)"
  (cd "$BUILD" && timeout 300 ctest --output-on-failure -j8 --timeout 280) > "$OUT/ctest.log" 2>&1
  echo "ctest rc=$?"; grep -E "tests passed|Test +#|Failed|Skipped|\*\*\*" "$OUT/ctest.log" | tail -40
  echo "== test_cuda lines"
  grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) +\]|checked runs|error:|nmse" "$OUT/ctest.log" | head -40
fi
if want cuda_tests; then
  echo "== ctest: the GPU tests only (test_cuda, test_conformance, test_candidate_cli)"
  (cd "$BUILD" && timeout ${CUDA_TESTS_TIMEOUT:-300} ctest --output-on-failure -R 'cuda|candidate|conformance' --timeout 280) > "$OUT/ctest_cuda.log" 2>&1
  echo "ctest (cuda) rc=$?"; grep -E "tests passed|Test +#|\*\*\*|ERROR" "$OUT/ctest_cuda.log" | head -20
fi
if want bench_types; then
  # qmm bench on chosen types (BENCH_TYPES, default the issue-10 sample) and token counts
  echo "== qmm bench --backend cuda --types ${BENCH_TYPES:-iq4_xs,mxfp4,iq2_xxs} --n ${BENCH_NS:-1,512}"
  timeout ${BENCH_TIMEOUT:-120} "$BUILD/tools/qmm/qmm" bench --backend cuda \
    --types "${BENCH_TYPES:-iq4_xs,mxfp4,iq2_xxs}" --n "${BENCH_NS:-1,512}" \
    --json "$OUT/qmm_bench_types.json" > "$OUT/qmm_bench_types.log" 2>&1
  echo "qmm bench (types) rc=$?"; cat "$OUT/qmm_bench_types.log"
fi

if want test_cuda; then
  echo "== test_cuda (full)"
  timeout 300 "$BUILD/tests/test_cuda" > "$OUT/test_cuda.log" 2>&1
  echo "test_cuda rc=$?"; grep -vE "^\[ RUN" "$OUT/test_cuda.log" | tail -30
fi

want memcheck || want racecheck || want synccheck && echo "== compute-sanitizer (QMM_TEST_CUDA_QUICK=1)"
for tool in memcheck racecheck synccheck; do
  want $tool || continue
  QMM_TEST_CUDA_QUICK=1 timeout ${SANITIZER_TIMEOUT:-150} compute-sanitizer --tool $tool --error-exitcode 99 \
    "$BUILD/tests/test_cuda" > "$OUT/sanitizer_$tool.log" 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$OUT/sanitizer_$tool.log" | tr '\n' ' ')"
done

if want bench || want bench_quick; then
  echo "== bench"
  if [ -x "$BUILD/tools/qmm/qmm" ] && [ "${QMM_BENCH:-1}" != 0 ]; then
    timeout 90 "$BUILD/tools/qmm/qmm" bench --backend cuda --json "$OUT/qmm_bench_cuda.json" \
      > "$OUT/qmm_bench_cuda.log" 2>&1
    echo "qmm bench --backend cuda rc=$?"; cat "$OUT/qmm_bench_cuda.log"
  fi
  nvcc -O2 -Xcompiler -fopenmp -o "$BUILD/cuda_bench" bench/cuda_bench.c -Iinclude "$BUILD/libqmm.a" \
    -lcublas -lcublasLt -lnvrtc -lopenblas -lgomp -lm && \
    timeout ${CUDA_BENCH_TIMEOUT:-240} "$BUILD/cuda_bench" $(want bench_quick && echo --quick) ${CUDA_BENCH_ARGS:-} \
      > "$OUT/cuda_bench.log" 2>&1
  echo "cuda_bench rc=$?"; cat "$OUT/cuda_bench.log"
fi

if want exec; then
  # exec: GPU_RUN_EXEC, a command string run here (BUILD, OUT and the .deps environment set)
  echo "== exec: ${GPU_RUN_EXEC:-}"
  eval "${GPU_RUN_EXEC:-true}"
  echo "exec rc=$?"
fi

if want plant; then
  echo "== planted defects (tests/plant/cuda_plant.sh)"
  timeout ${PLANT_TIMEOUT:-240} bash tests/plant/cuda_plant.sh "$SRC" /tmp/qmm-plant > "$OUT/plant.log" 2>&1
  echo "plant rc=$?"; tail -30 "$OUT/plant.log"
fi
