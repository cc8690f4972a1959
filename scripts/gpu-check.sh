#!/usr/bin/env bash
# On a GPU host: builds everything, runs the GPU test suite (every algorithm and key type)
# and a short benchmark, and prints a one-screen summary. Fails if any test fails or if the
# GPU tests did not run (no GPU).
#   scripts/gpu-check.sh            build in build-gpu/, logs in build-gpu/logs/
#   LOG_DIR=/tmp/x scripts/gpu-check.sh
#   GPUSORT_GTEST_SOURCE_DIR=/path/to/googletest scripts/gpu-check.sh   (no libgtest-dev)
#   scripts/gpu-check.sh --build-only   only the build; a second call then skips it (a cold
#                                       build on 16 cores takes about 6 of a 10-minute slot)
#   scripts/gpu-check.sh --multi        the multi-GPU tests (label multigpu, gpusort::dist over
#                                       NCCL) and a short scaling run instead; needs 2+ GPUs
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
# NVLink multicast can take shared GPUs out of service: never on.
export NCCL_NVLS_ENABLE=0
build=${BUILD_DIR:-build-gpu}
logs=${LOG_DIR:-$build/logs}
mkdir -p "$logs"

gtest_arg=()
[ -n "${GPUSORT_GTEST_SOURCE_DIR:-}" ] && gtest_arg=(-DGPUSORT_GTEST_SOURCE_DIR="$GPUSORT_GTEST_SOURCE_DIR")
# A copy without .git names its commit for the benchmark rows: GPUSORT_COMMIT=<id>.
[ -n "${GPUSORT_COMMIT:-}" ] && gtest_arg+=(-DGPUSORT_COMMIT="$GPUSORT_COMMIT")
# NCCL for gpusort::dist: the CUDA toolkit's, else the nvidia-nccl Python wheel's.
if [ ! -f /usr/local/cuda/include/nccl.h ] && [ -z "${GPUSORT_NCCL_ROOT:-}" ]; then
  GPUSORT_NCCL_ROOT=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
fi
[ -n "${GPUSORT_NCCL_ROOT:-}" ] && gtest_arg+=(-DGPUSORT_NCCL_ROOT="$GPUSORT_NCCL_ROOT")
if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUSORT_BUILD_RECORD_BENCH=ON \
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
if [ "${1:-}" = "--multi" ]; then
  gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
  ctest --test-dir "$build" --output-on-failure -L "^multigpu$" -j 1 >"$logs/tests-multi.log" 2>&1
  tests_rc=$?
  list=1; [ "$gpus" -ge 2 ] && list=1,2; [ "$gpus" -ge 4 ] && list=1,2,4
  "$build/tools/gpusort-dist-bench" --gpus "$list" --per-gpu 2^26 --total 2^28 --reps 3 \
    --csv "$logs/dist-bench.csv" >"$logs/dist-bench.log" 2>&1
  bench_rc=$?
  echo "== gpu-check --multi on $gpus x ${gpu:-no GPU} (${GPUSORT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}) =="
  grep -E "tests passed|tests failed" "$logs/tests-multi.log"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Exception)" "$logs/tests-multi.log"
  skipped=$(grep -c "(Skipped)" "$logs/tests-multi.log")
  echo "skipped tests: $skipped"
  cat "$logs/dist-bench.log"
  if [ "$gpus" -lt 2 ] || [ "$skipped" -gt 0 ] || [ "$tests_rc" -ne 0 ] || [ "$bench_rc" -ne 0 ]; then
    echo "gpu-check --multi: FAILED (GPUs: $gpus, tests rc=$tests_rc, bench rc=$bench_rc; logs in $logs)"
    exit 1
  fi
  echo "gpu-check --multi: PASSED"
  exit 0
fi
# CPU tests four at a time: on a GPU host the tool tests sort on the GPU, and sixteen of them
# at once made no progress for eight minutes in one run (2026-11-24). GPU tests two at a time
# (the n >= 2^31 ones need most of the memory of an 80 GB card). A test that hangs is stopped
# and named (--timeout) instead of stalling the run.
ctest --test-dir "$build" --output-on-failure -L "^cpu$" -j 4 --timeout 300 >"$logs/tests.log" 2>&1
tests_rc=$?
ctest --test-dir "$build" --output-on-failure -L "^gpu$" -j 2 --timeout 900 >>"$logs/tests.log" 2>&1 || tests_rc=1
"$build/tools/gpusort" bench --algos bitonic,sample_sort,sample_sort_random,adaptive_bitonic,quicksort,cub_radix,cub_merge,thrust,classic_bitonic \
  --types u32,u64 --dists uniform --sizes 2^16,2^20,2^24,2^26 --reps 10 \
  --csv "$logs/bench.csv" >"$logs/bench.log" 2>&1
bench_rc=$?
"$build/tools/gpusort" bench --algos approx,approx_sampled,approx_refine,top_k,cub_radix \
  --types u32,f32 --dists uniform,zipf --sizes 2^20,2^24 --reps 10 \
  --csv "$logs/bench-approx.csv" >>"$logs/bench.log" 2>&1 || bench_rc=1
# Records with a user comparator against thrust::sort and CUB's merge sort with it.
"$build/tools/gpusort" bench --types rec16,rec32,u64pair --sizes 2^20,2^24 --reps 5 \
  --csv "$logs/records.csv" >"$logs/records.log" 2>&1 || bench_rc=1
# The Python package's tests (PyTorch and CuPy on the GPU) when the module was built.
pytest_rc=0
if ls "$build"/python/_gpusort*.so >/dev/null 2>&1; then
  # FindPython caches the interpreter as Python_EXECUTABLE or, in newer CMake, _Python_EXECUTABLE.
  py=$(sed -n 's/^_\{0,1\}Python_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" | head -1)
  GPUSORT_MODULE_DIR="$build/python" "$py" -m pytest -q -p no:cacheprovider python/tests \
    >"$logs/pytest.log" 2>&1 || pytest_rc=$?
else
  echo "python module not built (GPUSORT_BUILD_PYTHON off)" >"$logs/pytest.log"
fi

echo "== gpu-check on ${gpu:-no GPU} (${GPUSORT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}) =="
grep -E "tests passed|tests failed" "$logs/tests.log"
grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Exception)" "$logs/tests.log"
skipped=$(grep -c "(Skipped)" "$logs/tests.log")
echo "skipped tests: $skipped"
cat "$logs/bench.log"
cat "$logs/records.log"
echo "pytest: $(tail -1 "$logs/pytest.log")"
if [ -z "$gpu" ] || [ "$skipped" -gt 0 ]; then
  echo "gpu-check: FAILED (no GPU, or GPU tests skipped)"
  exit 1
fi
if [ "$tests_rc" -ne 0 ] || [ "$bench_rc" -ne 0 ] || [ "$pytest_rc" -ne 0 ]; then
  echo "gpu-check: FAILED (tests rc=$tests_rc, bench rc=$bench_rc, pytest rc=$pytest_rc; logs in $logs)"
  exit 1
fi
echo "gpu-check: PASSED"
