#!/usr/bin/env bash
# On a GPU host: builds everything, runs the GPU test suite (every algorithm and key type)
# and a short benchmark, and prints a one-screen summary. Fails if any test fails or if the
# GPU tests did not run (no GPU).
#   scripts/gpu-check.sh            build in build-gpu/, logs in build-gpu/logs/
#   LOG_DIR=/tmp/x scripts/gpu-check.sh
#   GPUSORT_GTEST_SOURCE_DIR=/path/to/googletest scripts/gpu-check.sh   (no libgtest-dev)
#   scripts/gpu-check.sh --build-only   only the build; a second call then skips it (a cold
#                                       build on 16 cores takes about 6 of a 10-minute slot)
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
build=${BUILD_DIR:-build-gpu}
logs=${LOG_DIR:-$build/logs}
mkdir -p "$logs"

gtest_arg=()
[ -n "${GPUSORT_GTEST_SOURCE_DIR:-}" ] && gtest_arg=(-DGPUSORT_GTEST_SOURCE_DIR="$GPUSORT_GTEST_SOURCE_DIR")
# A copy without .git names its commit for the benchmark rows: GPUSORT_COMMIT=<id>.
[ -n "${GPUSORT_COMMIT:-}" ] && gtest_arg+=(-DGPUSORT_COMMIT="$GPUSORT_COMMIT")
if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUSORT_BUILD_COMPARATOR_BENCH=ON \
         "${gtest_arg[@]}" &&
       cmake --build "$build" -j "$(nproc)"; } >"$logs/build.log" 2>&1; then
  tail -30 "$logs/build.log"
  echo "gpu-check: BUILD FAILED (log: $logs/build.log)"
  exit 1
fi
if [ "${1:-}" = "--build-only" ]; then
  echo "gpu-check: built in $build"
  exit 0
fi

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# CPU tests on every core; GPU tests two at a time (the n >= 2^31 ones need most of the
# memory of an 80 GB card).
ctest --test-dir "$build" --output-on-failure -L cpu -j "$(nproc)" >"$logs/tests.log" 2>&1
tests_rc=$?
ctest --test-dir "$build" --output-on-failure -L gpu -j 2 >>"$logs/tests.log" 2>&1 || tests_rc=1
"$build/tools/gpusort" bench --algos bitonic,sample_sort,sample_sort_random,adaptive_bitonic,quicksort,cub_radix,cub_merge,thrust,classic_bitonic \
  --types u32,u64 --dists uniform --sizes 2^16,2^20,2^24,2^26 --reps 10 \
  --csv "$logs/bench.csv" >"$logs/bench.log" 2>&1
bench_rc=$?
"$build/tools/gpusort" bench --algos approx,approx_sampled,approx_refine,top_k,cub_radix \
  --types u32,f32 --dists uniform,zipf --sizes 2^20,2^24 --reps 10 \
  --csv "$logs/bench-approx.csv" >>"$logs/bench.log" 2>&1 || bench_rc=1
"$build/tools/gpusort-bench-comparator" 5 "$logs/comparator.csv" >"$logs/comparator.log" 2>&1 || bench_rc=1

echo "== gpu-check on ${gpu:-no GPU} (${GPUSORT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}) =="
grep -E "tests passed|tests failed" "$logs/tests.log"
grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Exception)" "$logs/tests.log"
skipped=$(grep -c "(Skipped)" "$logs/tests.log")
echo "skipped tests: $skipped"
cat "$logs/bench.log"
cat "$logs/comparator.log"
if [ -z "$gpu" ] || [ "$skipped" -gt 0 ]; then
  echo "gpu-check: FAILED (no GPU, or GPU tests skipped)"
  exit 1
fi
if [ "$tests_rc" -ne 0 ] || [ "$bench_rc" -ne 0 ]; then
  echo "gpu-check: FAILED (tests rc=$tests_rc, bench rc=$bench_rc; logs in $logs)"
  exit 1
fi
echo "gpu-check: PASSED"
