#!/usr/bin/env bash
# Short, time-bounded fuzz run for CI: `bash fuzz/run_ci.sh [SECONDS]` (default 60 in all:
# two thirds for the GGUF reader, one third for matmul). Builds the targets (fuzz/build.sh),
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

t_gguf=$(( total * 2 / 3 ))
t_mm=$(( total - t_gguf ))
echo "== fuzz_gguf for ${t_gguf} s"
"$dir/fuzz_gguf" -max_total_time="$t_gguf" -max_len=8192 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$dir/corpus-gguf" "$seeds"
echo "== fuzz_matmul for ${t_mm} s"
"$dir/fuzz_matmul" -max_total_time="$t_mm" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$dir/corpus-matmul"
echo "== fuzz: no crash"
