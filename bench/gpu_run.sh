#!/usr/bin/env bash
# gpu_run.sh — on a GPU machine: build qmm with CUDA (sm_90a), run the whole ctest suite,
# compute-sanitizer (memcheck, racecheck, synccheck) over tests/test_cuda in its reduced mode,
# and the CUDA benchmark; logs go to $OUT (default ./out).
#
# The lent H200 machine has no registry access: build dependencies (OpenBLAS, cmocka, cJSON,
# pkgconf, as Debian 12 .deb files) and the gguf Python package travel in .deps/ (ignored by
# git; see docs/CUDA.md for how to fill it) and are unpacked under /tmp/deps, not into /.
# Usage: bash bench/gpu_run.sh [PHASE...]   PHASE: ctest test_cuda memcheck racecheck synccheck
#        bench bench_quick bench_types plant cuda_tests resid resid_sanitize bench_graph
#        auto_sweep exec webgpu webgpu_bench webgpu_exec (default: ctest memcheck racecheck synccheck bench).
#        bench_types: qmm bench --backend cuda on BENCH_TYPES at BENCH_NS.
#        resid: the residency / cache-policy / graph tests of test_cuda one by one (each line
#        says what it checks), then the memory report of qmm bench under each cache policy.
#        resid_sanitize: memcheck and racecheck over those tests (quick mode).
#        bench_graph: qmm bench --backend cuda with device time (graph) and single-call
#        latency: the LFM preset at n = 1 and 512, the whole model (q4_K, q4_0) under the
#        default policy and QMM_CACHE_UNLIMITED. auto_sweep: the measurement auto_table.c
#        names (every native and cached strategy, n = 1..512), JSON in $OUT.
#        exec: eval "$GPU_RUN_EXEC" (after the build and the .deps setup).
#        cuda_tests: only the GPU tests of the suite. QMM_BENCH=0 skips `qmm bench` in bench. The build
#        always runs. Phases share one 10-minute device call: pick what fits.
#        CUDA_BENCH_ARGS: arguments for bench/cuda_bench (e.g. "--types q4_0 --ns 1,512");
#        plant: tests/plant/cuda_plant.sh (planted defects must be caught by test_conformance;
#        PLANT_ONLY=REGEX plants only the defects whose names match). QMM_NO_BUILD=1 skips
#        the build (for phases that build their own, like plant).
#        webgpu: the WebGPU backend on the GPU through Vulkan (wgpu-native from .deps/wgpu-native,
#        put there by scripts/deps.sh; the Vulkan loader and GL vendor-neutral libraries as
#        Debian 12 .debs in .deps/vulkan, unpacked into / as docs/WEBGPU.md "On the H200" says):
#        its tests (test_webgpu, test_webgpu_candidate, the conformance suite on webgpu alone)
#        and qmm bench --backend webgpu (WEBGPU_BENCH_TYPES at WEBGPU_BENCH_NS, then
#        4096x14336 q4_0 at n = 1). webgpu_bench: only the bench part. webgpu_exec: eval
#        "$WEBGPU_EXEC" with Vulkan set up (e.g. bash bench/webgpu_probe.sh).
set -uo pipefail
PHASES=${*:-ctest memcheck racecheck synccheck bench}
want() { case " $PHASES " in *" $1 "*) return 0;; esac; return 1; }
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
SRC=$(pwd)
BUILD=${BUILD:-/tmp/qmm-build}
export OUT BUILD # for the scripts the exec phases run
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
# QMM_GPU_RUN_CUDA=OFF: a build without the CUDA backend (the WebGPU phases alone build in
# a fraction of the time)
cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQMM_CUDA="${QMM_GPU_RUN_CUDA:-ON}" > "$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
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
    -lcublas -lcublasLt -lnvrtc -lopenblas -lcjson -lgomp -lm && \
    timeout ${CUDA_BENCH_TIMEOUT:-240} "$BUILD/cuda_bench" $(want bench_quick && echo --quick) ${CUDA_BENCH_ARGS:-} \
      > "$OUT/cuda_bench.log" 2>&1
  echo "cuda_bench rc=$?"; cat "$OUT/cuda_bench.log"
fi

if want resid; then
  echo "== resid: residency, cache policy and graph tests (tests/test_cuda.c; docs/CUDA.md \"Memory\")"
  # name | what passing it means
  for t in \
    "test_residency_lazy|new weights hold only their GGUF bytes; each copy is made by its strategy's first call, of the reported size" \
    "test_cache_none|QMM_CACHE_NONE refuses cached_f16/fp8/int8 (Y untouched), auto runs gemv/fused, nothing held" \
    "test_auto_default_policy|default policy: auto never cached_f16/fp8/dequant_sgemm; copies <= 1.25x GGUF; every type passes" \
    "test_cache_limit_unlimited|QMM_CACHE_UNLIMITED / LIMIT 4, 2, 1: auto's choice and copy, forced strategies beyond the limit refused" \
    "test_graph_api|qmm_graph_begin/end/replay; lazy work refused during capture, auto avoids it" \
    "test_lazy_copy_oom|device filled on purpose: forced cached_f16 -> QMM_ERR_OUT_OF_MEMORY, auto falls back to fused" \
    "test_graph_capture|caller's own capture of every strategy after one call each" \
    "test_f16_range|values beyond f16: f16 paths refused, fp8 takes finite W, NaN W refused by fp8" \
    "test_stream_order|first (lazy) calls still wait for the caller's stream"; do
    name=${t%%|*}; what=${t#*|}
    QMM_TEST_CUDA_FILTER=$name timeout 300 "$BUILD/tests/test_cuda" > "$OUT/resid_$name.log" 2>&1
    rc=$?
    if [ $rc = 0 ] && grep -q "PASSED  \] 1 test" "$OUT/resid_$name.log"; then v=PASS; else v="FAIL (rc=$rc)"; fi
    echo "$v  $name: $what"
    [ "$v" = PASS ] || grep -vE "^\[ RUN" "$OUT/resid_$name.log" | tail -15 | sed 's/^/      /'
  done
  grep -h "test_lazy_copy_oom:" "$OUT"/resid_test_lazy_copy_oom.log 2>/dev/null | sed 's/^/      /'
  echo "== resid: resident bytes per cache policy (qmm bench --backend cuda, 4608x1024, n = 512, q4_0 q4_K q8_0; res_MiB / xGGUF columns)"
  for cache in default none 2.5 unlimited; do
    echo "-- --cache $cache"
    timeout 120 "$BUILD/tools/qmm/qmm" bench --backend cuda --cache $cache --shape 4608x1024 \
      --types q4_0,q4_K,q8_0 --n 512 --strategy auto,cached_f16,int8 --iters 3 \
      --json "$OUT/resid_bench_$cache.json" > "$OUT/resid_bench_$cache.log" 2>&1
    echo "   rc=$?"; grep -E "^(type|q4_0|q4_K|q8_0) |  \^|rows:|cache policy" "$OUT/resid_bench_$cache.log"
  done
fi

if want resid_sanitize; then
  echo "== resid_sanitize: compute-sanitizer over the residency tests (QMM_TEST_CUDA_QUICK=1; test_lazy_copy_oom skips)"
  for tool in memcheck racecheck; do
    for name in test_residency_lazy test_cache_none test_auto_default_policy test_cache_limit_unlimited test_graph_api; do
      QMM_TEST_CUDA_QUICK=1 QMM_TEST_CUDA_FILTER=$name timeout ${SANITIZER_TIMEOUT:-150} compute-sanitizer \
        --tool $tool --error-exitcode 99 "$BUILD/tests/test_cuda" > "$OUT/resid_${tool}_$name.log" 2>&1
      echo "$tool $name rc=$? (0 = clean and passed, 99 = sanitizer error): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$OUT/resid_${tool}_$name.log" | tr '\n' ' ')"
    done
  done
fi

if want bench_graph; then
  # ms(graph) = device time per call of back-to-back calls (CUDA graph replay); ms(1call) =
  # one call alone. Every row verified against qmm_matmul_ref before it counts.
  Q=$BUILD/tools/qmm/qmm
  echo "== bench_graph 1/3: qmm bench --backend cuda, LFM2.5-350M shapes, q4_0 q4_K q6_K q8_0, n = 1 and 512, auto (default cache policy)"
  timeout 150 "$Q" bench --backend cuda --types q4_0,q4_K,q6_K,q8_0 --n 1,512 --iters 5 \
    --json "$OUT/bench_graph_lfm.json" > "$OUT/bench_graph_lfm.log" 2>&1
  echo "rc=$?"; cat "$OUT/bench_graph_lfm.log"
  for cache in default unlimited; do
    echo "== bench_graph: --whole-model (92 GEMMs, sums of device time and of latency), q4_K q4_0, n = 512, --cache $cache"
    timeout 150 "$Q" bench --backend cuda --whole-model --types q4_K,q4_0 --n 512 --iters 5 --cache $cache \
      --json "$OUT/bench_graph_whole_$cache.json" > "$OUT/bench_graph_whole_$cache.log" 2>&1
    echo "rc=$?"; grep -E "timing|ms\(|resident|^type|total|  \^|rows:" "$OUT/bench_graph_whole_$cache.log"
  done
fi

if want auto_sweep; then
  echo "== auto_sweep: the crossovers of src/cuda/auto_table.c (every strategy, copies allowed)"
  timeout ${SWEEP_TIMEOUT:-300} "$BUILD/tools/qmm/qmm" bench --backend cuda --cache unlimited \
    --types ${SWEEP_TYPES:-q4_0,q4_K,q6_K,q8_0} --strategy gemv,int8,fused,dequant_hgemm,cached_f16,fp8 \
    --n ${SWEEP_NS:-1,2,4,8,9,16,32,64,128,256,512} --iters 5 --csv > "$OUT/auto_sweep.csv" 2> "$OUT/auto_sweep.err"
  echo "auto_sweep rc=$? ($(($(wc -l < "$OUT/auto_sweep.csv") - 1)) rows in auto_sweep.csv)"
  # per (type, shape, n): the fastest verified strategy by device time (column ms)
  python3 - "$OUT/auto_sweep.csv" <<'PY'
import csv, sys, collections
best = collections.OrderedDict()
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] != "ok" or not r["ms"]:
        continue
    key = (r["type"], r["m"] + "x" + r["k"], int(r["n"]))
    best.setdefault(key, []).append((float(r["ms"]) * 1000, r["strategy"], float(r["latency_ms"] or 0) * 1000))
print("type   shape      n   fastest (device us)      all: strategy device-us / 1call-us")
for (t, sh, n), v in best.items():
    v.sort()
    print(f"{t:6} {sh:10} {n:4} {v[0][1]:11} {v[0][0]:8.2f}   " + "  ".join(f"{s} {d:.2f}/{l:.2f}" for d, s, l in v))
PY
  grep -v "^#" "$OUT/auto_sweep.err" | tail -5
fi

if want exec; then
  # exec: GPU_RUN_EXEC, a command string run here (BUILD, OUT and the .deps environment set)
  echo "== exec: ${GPU_RUN_EXEC:-}"
  eval "${GPU_RUN_EXEC:-true}"
  echo "exec rc=$?"
fi

if want webgpu || want webgpu_bench || want webgpu_exec; then
  echo "== webgpu: Vulkan through the NVIDIA driver"
  if [ -d .deps/vulkan ]; then
    for f in .deps/vulkan/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
  XDG_RUNTIME_DIR=$(mktemp -d) # 0700: libwayland wants a private one
  export XDG_RUNTIME_DIR
  ls -la "$VK_DRIVER_FILES" /usr/lib/x86_64-linux-gnu/libvulkan.so.1 2>&1 | sed 's/^/  /'
  if want webgpu_exec; then # WEBGPU_EXEC: a command string run here with Vulkan set up
    echo "== webgpu_exec: ${WEBGPU_EXEC:-}"
    eval "${WEBGPU_EXEC:-true}"
    echo "webgpu_exec rc=$?"
  fi
fi
if want webgpu || want webgpu_bench; then
  if want webgpu; then
    timeout 120 "$BUILD/tests/test_webgpu" > "$OUT/test_webgpu.log" 2>&1
    echo "test_webgpu rc=$?"; grep -E "adapter:|timer:|OK|FAILED|PASSED|SKIPPED|skipped" "$OUT/test_webgpu.log" | head -20
    if [ "${WEBGPU_CTEST:-1}" != 0 ]; then # WEBGPU_CTEST=0: without the candidate and install tests
      (cd "$BUILD" && timeout 240 ctest --output-on-failure -R 'webgpu_candidate|install' --timeout 230) \
        > "$OUT/ctest_webgpu.log" 2>&1
      echo "ctest (webgpu_candidate, install) rc=$?"; grep -E "tests passed|Test +#|FAIL|webgpu program" "$OUT/ctest_webgpu.log" | head -20
    fi
    QMM_CONFORMANCE_BACKENDS=webgpu OMP_WAIT_POLICY=passive timeout ${WEBGPU_CONFORMANCE_TIMEOUT:-240} \
      "$BUILD/tests/test_conformance" > "$OUT/conformance_webgpu.log" 2>&1
    echo "test_conformance (webgpu) rc=$?"; grep -E "backends:|FAILED|PASSED|bad outputs" "$OUT/conformance_webgpu.log" | head -20
  fi
  timeout ${WEBGPU_BENCH_TIMEOUT:-150} "$BUILD/tools/qmm/qmm" bench --backend webgpu \
    --types "${WEBGPU_BENCH_TYPES:-q4_0,q4_K,q6_K,q8_0,f16}" --n "${WEBGPU_BENCH_NS:-1,512,2048}" \
    --iters 10 --warmup 2 --json "$OUT/qmm_bench_webgpu.json" > "$OUT/qmm_bench_webgpu.log" 2>&1
  echo "qmm bench --backend webgpu rc=$?"; cat "$OUT/qmm_bench_webgpu.log"
  timeout 60 "$BUILD/tools/qmm/qmm" bench --backend webgpu --types q4_0 --shape 4096x14336 --n 1 \
    --iters 20 --warmup 3 --json "$OUT/qmm_bench_webgpu_4096x14336.json" > "$OUT/qmm_bench_webgpu_big.log" 2>&1
  echo "qmm bench --backend webgpu 4096x14336 rc=$?"; grep -E "q4_0|passed" "$OUT/qmm_bench_webgpu_big.log"
fi

if want plant; then
  echo "== planted defects (tests/plant/cuda_plant.sh)"
  timeout ${PLANT_TIMEOUT:-240} bash tests/plant/cuda_plant.sh "$SRC" /tmp/qmm-plant > "$OUT/plant.log" 2>&1
  echo "plant rc=$?"; tail -30 "$OUT/plant.log"
fi
