#!/usr/bin/env bash
# Short, time-bounded fuzz run for CI: `bash fuzz/run_ci.sh [SECONDS]` (default 60 in all:
# half for the GGUF reader, a third for matmul, a sixth for the tuning-file checker). Builds the targets (fuzz/build.sh),
# writes the seed corpus (tests/gguf_corpus/make_corpus.py --seeds), and fails on the first
# crash, sanitizer report or abort; a crashing input is left in BUILD_DIR/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
total=${1:-60}
dir=${FUZZ_BUILD_DIR:-build-fuzz}
bash fuzz/build.sh "$dir"

seeds="$dir/seeds-gguf"
python3 tests/gguf_corpus/make_corpus.py --seeds "$seeds"
mkdir -p "$dir/corpus-gguf" "$dir/corpus-matmul" "$dir/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=1

t_gguf=$(( total / 2 ))
t_tune=$(( total / 6 ))
t_mm=$(( total - t_gguf - t_tune ))
echo "== fuzz_gguf for ${t_gguf} s"
"$dir/fuzz_gguf" -max_total_time="$t_gguf" -max_len=8192 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$dir/corpus-gguf" "$seeds"
echo "== fuzz_matmul for ${t_mm} s"
"$dir/fuzz_matmul" -max_total_time="$t_mm" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$dir/corpus-matmul"
echo "== fuzz_tune for ${t_tune} s"
mkdir -p "$dir/corpus-tune" "$dir/seeds-tune"
# a valid file for the target's identity (cpu "Fuzz CPU", amx, 2 threads; its machine id is
# the FNV-1a hash of "cpu\nFuzz CPU\namx\n2\n")
id=$(python3 -c 'h=0xcbf29ce484222325
for b in b"cpu\nFuzz CPU\namx\n2\n": h=((h^b)*0x100000001b3)&(2**64-1)
print("%016x"%h)')
ver=$(sed -n 's/^project(qmm VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
printf '{"format": "qmm-tune", "format_version": 1, "qmm_version": "%s", "backend": "cpu", "machine": {"id": "%s", "cpu": "Fuzz CPU", "isa": "amx", "threads": 2}, "rows": [{"type": "q4_0", "m": [64, 64], "k": [256, 256], "int8_n": [1, 32], "gemv_max_n": 4}, {"type": "q4_K", "int8_n": null, "gemv_max_n": 0}], "measurements": [{"type": "q4_0", "m": 64, "k": 256, "n": 1, "strategy": "gemv", "kernel": "g", "ms": 0.1, "spread": null, "status": "ok"}]}' \
  "$ver" "$id" >"$dir/seeds-tune/good.json"
"$dir/fuzz_tune" -max_total_time="$t_tune" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$dir/corpus-tune" "$dir/seeds-tune"
echo "== fuzz: no crash"
