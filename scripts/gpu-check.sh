#!/usr/bin/env bash
# On a GPU host: builds everything, runs the GPU test suite (every algorithm and key type)
# and a short benchmark, installs the Python package from that build into a venv and runs
# pytest against it, and prints a one-screen summary. Fails if any test fails, if the GPU
# tests did not run (no GPU), or if the Python module was not built or pytest ran no test.
#   scripts/gpu-check.sh            build in build-gpu/, logs in build-gpu/logs/
#   LOG_DIR=/tmp/x scripts/gpu-check.sh
#   GPUSORT_GTEST_SOURCE_DIR=/path/to/googletest scripts/gpu-check.sh   (no libgtest-dev)
#   GPUSORT_CLI11_DIR=/path/holding/CLI scripts/gpu-check.sh   (no libcli11-dev; the tool needs it)
#   scripts/gpu-check.sh --build-only   only the build; a second call then skips it (a cold
#                                       build on 16 cores takes about 6 of a 10-minute slot);
#                                       BUILD_TARGETS="t1 t2" builds those targets alone
#   scripts/gpu-check.sh --multi        the multi-GPU tests (label multigpu, gpusort::dist over
#                                       NCCL; again over NCCL's sockets on the loopback; again
#                                       on 3 GPUs where there are 4 or more), the Python
#                                       gpusort.distributed tests and benchmark, and a
#                                       short scaling run (threads, then processes) instead;
#                                       needs 2+ GPUs. Builds only
#                                       what those run (about 60 of 140 steps)
#   GPUSORT_CUDA_ARCHITECTURES=90 scripts/gpu-check.sh   (default: native, this host's GPU)
#   BUILD_JOBS=16 scripts/gpu-check.sh   fewer parallel compiles than cores (default: nproc)
#   GPU_CHECK_EXCLUDE=REGEX scripts/gpu-check.sh   leaves out the ctest tests whose names match
#                                             (ctest -E), say ones a run already saw fail
#   GPUSORT_LINEINFO=1 scripts/gpu-check.sh   kernels with source lines (-lineinfo: the same
#                                             code) for Nsight Compute's source view
# The venv ($build/venv) is made from python3 with the system's packages visible (PyTorch,
# CuPy), and the build is configured with its interpreter.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
# NVLink multicast can take shared GPUs out of service: never on.
export NCCL_NVLS_ENABLE=0
build=${BUILD_DIR:-build-gpu}
case "$build" in /*) ;; *) build=$PWD/$build ;; esac
logs=${LOG_DIR:-$build/logs}
exclude=()
[ -n "${GPU_CHECK_EXCLUDE:-}" ] && exclude=(-E "$GPU_CHECK_EXCLUDE")
mkdir -p "$logs"

gtest_arg=()
[ -n "${GPUSORT_GTEST_SOURCE_DIR:-}" ] && gtest_arg=(-DGPUSORT_GTEST_SOURCE_DIR="$GPUSORT_GTEST_SOURCE_DIR")
[ -n "${GPUSORT_CLI11_DIR:-}" ] && gtest_arg+=(-DGPUSORT_CLI11_DIR="$GPUSORT_CLI11_DIR")
# A copy without .git names its commit for the benchmark rows: GPUSORT_COMMIT=<id>.
[ -n "${GPUSORT_COMMIT:-}" ] && gtest_arg+=(-DGPUSORT_COMMIT="$GPUSORT_COMMIT")
# NCCL for gpusort::dist: the CUDA toolkit's, else the nvidia-nccl Python wheel's.
if [ ! -f /usr/local/cuda/include/nccl.h ] && [ -z "${GPUSORT_NCCL_ROOT:-}" ]; then
  GPUSORT_NCCL_ROOT=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
fi
[ -n "${GPUSORT_NCCL_ROOT:-}" ] && gtest_arg+=(-DGPUSORT_NCCL_ROOT="$GPUSORT_NCCL_ROOT")
[ "${GPUSORT_LINEINFO:-0}" = 1 ] && gtest_arg+=(-DCMAKE_CUDA_FLAGS=-lineinfo)
# This host's GPU alone (the default list compiles the device code for five architectures
# with CUDA 13.0); 90 where no GPU answers.
archs=${GPUSORT_CUDA_ARCHITECTURES:-native}
if [ "$archs" = native ] && ! nvidia-smi -L >/dev/null 2>&1; then archs=90; fi
# The venv the package is installed in; the module is built for its interpreter.
venv=$build/venv
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  rm -rf "$venv"
  python3 -m venv --system-site-packages "$venv" >"$logs/venv.log" 2>&1 ||
    { rm -rf "$venv" && python3 -m venv --system-site-packages --without-pip "$venv" >>"$logs/venv.log" 2>&1; }
  # Where python3 is itself a venv (the GPU hosts' /opt/torch/.venv), --system-site-packages
  # shows the base interpreter's packages, not that venv's PyTorch and CuPy: name them too.
  python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
    >"$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/gpusort-base.pth"
fi
for library in torch cupy; do
  if python3 -c "import $library" 2>/dev/null && ! "$venv/bin/python" -c "import $library" 2>/dev/null; then
    echo "gpu-check: BUILD FAILED ($library imports in python3 but not in $venv)"
    exit 1
  fi
done
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  cat "$logs/venv.log"
  echo "gpu-check: BUILD FAILED (no venv with pip from python3 in $venv)"
  exit 1
fi
# --multi runs the binaries holding the multigpu label and the scaling run's: only those.
targets=()
[ "${1:-}" = "--multi" ] &&
  targets=(--target test_gpu_dist test_cpu_external_api test_cpu_host_arrays gpusort_dist_bench
           gpusort_host_keys _gpusort _gpusort_dist)
# --build-only with BUILD_TARGETS="a b": those targets alone (a benchmark before the rest).
[ "${1:-}" = "--build-only" ] && [ -n "${BUILD_TARGETS:-}" ] && targets=(--target $BUILD_TARGETS)
if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUSORT_BUILD_RECORD_BENCH=ON \
         -DCMAKE_CUDA_ARCHITECTURES="$archs" -DPython_EXECUTABLE="$venv/bin/python" \
         "${gtest_arg[@]}" &&
       cmake --build "$build" -j "${BUILD_JOBS:-$(nproc)}" "${targets[@]}"; } >"$logs/build.log" 2>&1; then
  # ninja's first failures with their messages (other jobs' lines come after them), then the end.
  grep -m 3 -A 25 '^FAILED:' "$logs/build.log"
  tail -15 "$logs/build.log"
  echo "gpu-check: BUILD FAILED (log: $logs/build.log)"
  exit 1
fi
# Without CLI11 the build has no tool (tools/CMakeLists.txt): a failure here.
if ! cmake --build "$build" --target help 2>/dev/null | grep -q '^gpusort_tool:'; then
  echo "gpu-check: BUILD FAILED (no gpusort tool: CLI11 not found; set GPUSORT_CLI11_DIR to a" \
       "folder holding CLI/CLI.hpp)"
  exit 1
fi
if [ "${1:-}" = "--build-only" ]; then
  echo "gpu-check: built in $build"
  exit 0
fi

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# Where the run's time goes (seconds since the start, after each part), for the summary.
mark() { echo "$1 $SECONDS" >>"$logs/times.log"; }
: >"$logs/times.log"
mark built
if [ "${1:-}" = "--multi" ]; then
  gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
  # A test that hangs (a rank waiting for one that failed) is stopped and named after 5
  # minutes instead of stalling the run.
  ctest --test-dir "$build" --output-on-failure "${exclude[@]}" -L "^multigpu$" -j 1 --timeout 300 \
    >"$logs/tests-multi.log" 2>&1
  tests_rc=$?
  # With 4 or more GPUs, again on three of them: a rank count that is not a power of two.
  if [ "$gpus" -ge 4 ]; then
    CUDA_VISIBLE_DEVICES=0,1,2 ctest --test-dir "$build" --output-on-failure "${exclude[@]}" -L "^multigpu$" -j 1 \
      --timeout 300 >>"$logs/tests-multi.log" 2>&1 || tests_rc=1
  fi
  # Again over NCCL's network transport (sockets on the loopback interface), the path of
  # ranks on hosts without NVLink between them (issue 74).
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo \
    ctest --test-dir "$build" --output-on-failure "${exclude[@]}" -L "^multigpu$" -j 1 --timeout 300 \
    >"$logs/tests-multi-sockets.log" 2>&1 || tests_rc=1
  # gpusort.distributed (Python, torch.distributed) on every GPU: its tests, then its benchmark
  # beside the same keys in C++ (the native path, then the group's own collectives).
  (GPUSORT_MODULE_DIR="$build/python" "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider \
     python/tests/test_distributed.py) >"$logs/pytest-distributed.log" 2>&1 || tests_rc=1
  # (and the native path with partition_first, which skips the shard's copy, and with
  # overwrite_input, which sorts the shard itself)
  for run in "1" "0" "1 --partition-first" "1 --overwrite-input"; do
    read -r native extra <<<"$run"
    GPUSORT_DISTRIBUTED_NATIVE=$native PYTHONPATH="$PWD/python:$build/python" \
      "$venv/bin/python" -m torch.distributed.run --nproc-per-node "$gpus" scripts/dist-bench.py \
      --per-rank 2^26 --dtype float32 --reps 3 $extra || tests_rc=1  # each run counts
  done >"$logs/dist-bench-python.log" 2>&1
  list=1; [ "$gpus" -ge 2 ] && list=1,2; [ "$gpus" -ge 4 ] && list=1,2,4
  "$build/tools/gpusort-dist-bench" --gpus "$list" --per-gpu 2^26 --total 2^28 --reps 3 --fan-in 2,4,8 \
    --values 0,4 --partition-first --csv "$logs/dist-bench.csv" >"$logs/dist-bench.log" 2>&1
  bench_rc=$?
  # The same in processes, one a GPU, as a launcher starts them (issue 74): beside the threads.
  scripts/dist-launch.sh -n "$gpus" "$build/tools/gpusort-dist-bench" --processes --per-gpu 2^26 \
    --total 2^28 --reps 3 --values 0 >"$logs/dist-bench-processes.log" 2>&1 || bench_rc=1
  # A host array spread over the GPUs (2 GiB: above the spread's 1 GiB), against the link rate.
  "$build/tools/gpusort_host_keys" 29 0 u32 "$list" nocpu >"$logs/host-keys.log" 2>&1 || bench_rc=1
  # The exchange's GB/s over sockets, beside NCCL's own all-to-all on the same transport.
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo \
    "$build/tools/gpusort-dist-bench" --gpus "$gpus" --per-gpu 2^24 --total 2^25 --reps 3 \
    --values 0 >"$logs/dist-bench-sockets.log" 2>&1 || bench_rc=1
  echo "== gpu-check --multi on $gpus x ${gpu:-no GPU} (${GPUSORT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}) =="
  grep -E "tests passed|tests failed" "$logs/tests-multi.log"
  echo "over sockets: $(grep -E "tests passed|tests failed" "$logs/tests-multi-sockets.log")"
  echo "gpusort.distributed: $(tail -1 "$logs/pytest-distributed.log")"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Exception)" "$logs/tests-multi.log"
  skipped=$(grep -c "(Skipped)" "$logs/tests-multi.log")
  echo "skipped tests: $skipped"
  cat "$logs/dist-bench.log"
  grep -E "^(weak|strong) " "$logs/dist-bench-sockets.log" | sed 's/^/sockets: /'
  grep -E "^(weak|strong)-proc " "$logs/dist-bench-processes.log" | sed 's/^/processes: /'
  grep -E "^# [0-9]+ GPU" "$logs/host-keys.log"
  grep -E "^dist-bench " "$logs/dist-bench-python.log" | sed 's/^/python: /'
  if [ "$gpus" -lt 2 ] || [ "$skipped" -gt 0 ] || [ "$tests_rc" -ne 0 ] || [ "$bench_rc" -ne 0 ]; then
    echo "gpu-check --multi: FAILED (GPUs: $gpus, tests rc=$tests_rc, bench rc=$bench_rc; logs in $logs)"
    exit 1
  fi
  echo "gpu-check --multi: PASSED"
  exit 0
fi
# The parts in the order that a short device slot needs them most: the GPU tests, pytest on
# the wheel, the benchmarks, then the CPU tests (CI runs them too; here the tool's tests sort
# on the GPU). GPU tests two at a time (the n >= 2^31 ones need most of the memory of an
# 80 GB card); CPU tests four at a time (sixteen tool tests at once made no progress for
# eight minutes in one run, 2026-11-24). A test that hangs is stopped and named (--timeout)
# instead of stalling the run. CPU tests that need what a host may not allow (a new PID
# namespace, a memory control group) skip and are named; a skipped GPU test fails the check.
tests_rc=0
ctest --test-dir "$build" --output-on-failure "${exclude[@]}" -L "^gpu$" -j 2 --timeout 900 >"$logs/tests.log" 2>&1 || tests_rc=1
mark gpu-tests
# The Python package's tests (PyTorch and CuPy on the GPU): the wheel from this build (nothing
# recompiles) installed in the venv, tested from an empty folder so that python/gpusort
# cannot be imported instead.
pytest_rc=0
root=$PWD
if ls "$build"/python/_gpusort*.so >/dev/null 2>&1; then
  rm -rf "$build/wheel"
  mkdir -p "$build/pytest-cwd"
  if "$venv/bin/python" -m pip wheel --no-build-isolation --no-deps --no-cache-dir \
       --config-settings "build-dir=$build" -w "$build/wheel" ./python >"$logs/pip.log" 2>&1 &&
     "$venv/bin/python" -m pip install --no-deps --force-reinstall --no-cache-dir \
       "$build"/wheel/gpusort-*.whl >>"$logs/pip.log" 2>&1; then
    (cd "$build/pytest-cwd" &&
     GPUSORT_TEST_INSTALLED=1 "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider \
       "$root/python/tests") >"$logs/pytest.log" 2>&1 || pytest_rc=$?
    # 5: no tests collected; a run that passed no test did not test the package either.
    grep -qE "^[=]* ?[0-9]+ passed" "$logs/pytest.log" || [ "$pytest_rc" -ne 0 ] || pytest_rc=5
  else
    pytest_rc=1
    { tail -20 "$logs/pip.log"; echo "pip could not build or install the package (log: $logs/pip.log)"; } >"$logs/pytest.log"
  fi
else
  pytest_rc=1
  echo "python module not built (GPUSORT_BUILD_PYTHON off: Python's headers or pybind11 missing?)" >"$logs/pytest.log"
fi
mark pytest
"$build/tools/gpusort" bench --algos bitonic,sample_sort,sample_sort_random,adaptive_bitonic,quicksort,cub_radix,cub_merge,thrust,classic_bitonic \
  --types u32,u64 --dists uniform --sizes 2^16,2^20,2^24,2^26 --reps 10 \
  --csv "$logs/bench.csv" >"$logs/bench.log" 2>&1
bench_rc=$?
"$build/tools/gpusort" bench --algos approx,approx_sampled,approx_refine,top_k,select_k,cub_radix \
  --types u32,f32 --dists uniform,zipf --sizes 2^20,2^24 --reps 10 \
  --csv "$logs/bench-approx.csv" >>"$logs/bench.log" 2>&1 || bench_rc=1
# Records with a user comparator against thrust::sort and CUB's merge sort with it.
"$build/tools/gpusort" bench --types rec16,rec32,u64pair --sizes 2^20,2^24 --reps 5 \
  --csv "$logs/records.csv" >"$logs/records.log" 2>&1 || bench_rc=1
# A host array on one GPU (1 GiB of u32 keys, pageable) against the link rate, and pairs.
# dist's phases with 2, 4 and 8 thread ranks on this one GPU (the merge of p runs among them).
"$build/tools/gpusort-dist-bench" --one-gpu --gpus 2,4,8 --per-gpu 2^24 --total 2^26 --reps 3 --fan-in 2,4,8 \
  --types u32,u64 --values 0,4 --csv "$logs/dist-one-gpu.csv" >"$logs/dist-one-gpu.log" 2>&1 || bench_rc=1
# dist's merge alone, one stream: R runs by rounds of CUB's two-way merge against the one pass.
"$build/tools/gpusort-dist-bench" --merge 2,3,4,8,16 --fan-in 2,4,8 --total 2^26 --reps 10 \
  --types u32,u64 --values 0,4 --csv "$logs/dist-merge.csv" >"$logs/dist-merge.log" 2>&1 || bench_rc=1
# Issue 77: automatic's MSD split of 8-byte integer keys (options::msd_split) and the split
# at three windows (16 bits: two digit passes, the split left in place), against CUB's radix
# sort and automatic without it; few distinct keys: large buckets of equal keys.
"$build/tools/gpusort-radix-hybrid" --sizes 2^24,2^28 --bits 16,22,24 \
  --dists uniform,zipf,few_unique --types u64,i64,u64+u32 \
  --reps 5 --csv "$logs/radix-hybrid.csv" >"$logs/radix-hybrid.log" 2>&1 || bench_rc=1
{ "$build/tools/gpusort_host_keys" 28 0 u32 1 nocpu &&
  "$build/tools/gpusort_host_keys" 27 0 u32+u32 1 nocpu; } >"$logs/host-keys.log" 2>&1 || bench_rc=1
mark benchmarks
ctest --test-dir "$build" --output-on-failure "${exclude[@]}" -L "^cpu$" -j 4 --timeout 300 >"$logs/tests-cpu.log" 2>&1 || tests_rc=1
mark cpu-tests

echo "== gpu-check on ${gpu:-no GPU} (${GPUSORT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}) =="
for log in "$logs/tests-cpu.log" "$logs/tests.log"; do
  echo "$(basename "$log" .log): $(grep -E "tests passed|tests failed" "$log")"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Exception)" "$log"
done
grep -E "^\s+[0-9]+ - .*\(Skipped\)" "$logs/tests-cpu.log" | sed 's/^/cpu test skipped here: /'
skipped=$(grep -c "(Skipped)" "$logs/tests.log")
echo "skipped GPU tests: $skipped"
cat "$logs/bench.log"
cat "$logs/records.log"
grep -E "^# [0-9]+ GPU|^# link" "$logs/host-keys.log"
grep -E "^(weak|strong)-1gpu " "$logs/dist-one-gpu.log" | sed 's/^/dist on one GPU: /'
grep -E "^merge" "$logs/dist-merge.log" | sed 's/^/dist merge alone: /'
grep -v "^gpu," "$logs/radix-hybrid.log" | sed 's/^/radix hybrid: /'
echo "pytest: $(tail -1 "$logs/pytest.log")"
echo "seconds from the start: $(tr '\n' ' ' <"$logs/times.log")"
if [ -z "$gpu" ] || [ "$skipped" -gt 0 ]; then
  echo "gpu-check: FAILED (no GPU, or GPU tests skipped)"
  exit 1
fi
if [ "$tests_rc" -ne 0 ] || [ "$bench_rc" -ne 0 ] || [ "$pytest_rc" -ne 0 ]; then
  echo "gpu-check: FAILED (tests rc=$tests_rc, bench rc=$bench_rc, pytest rc=$pytest_rc; logs in $logs)"
  exit 1
fi
echo "gpu-check: PASSED"
