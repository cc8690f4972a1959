#!/usr/bin/env bash
# Builds everything (CUDA code included) and runs the tests. Without a GPU the GPU test
# programs are not built (they would only skip; GPUSORT_BUILD_GPU_TESTS=ON builds them).
# Then builds the Python package the way users install it (pip wheel from python/, reusing
# this CMake build), installs the wheel in a venv (build/venv, with the system's packages
# visible) and runs pytest against the installed package.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH="/usr/local/cuda/bin:$PATH"
# ccache keys on paths relative to the checkout, so that a clone elsewhere (CI's) reuses what
# an earlier build on the machine compiled.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}

# The venv's base: the interpreter that has NumPy and pytest (Debian's, where pyenv's python3
# comes first on PATH).
base=""
for py in /usr/bin/python3 python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import numpy, pytest, venv' 2>/dev/null; then
    base=$(command -v "$py")
    break
  fi
done
python=()
venv=build/venv
if [ -n "$base" ]; then
  if ! "$venv/bin/python" -c 'import numpy, pytest, pip' 2>/dev/null; then
    rm -rf "$venv"
    # Without ensurepip (Debian's python3-venv) the venv uses the base's pip.
    "$base" -m venv --system-site-packages "$venv" >/dev/null 2>&1 ||
      { rm -rf "$venv" && "$base" -m venv --system-site-packages --without-pip "$venv"; }
    if ! "$venv/bin/python" -m pip --version >/dev/null; then
      echo "test.sh: no pip in $venv: apt-get install python3-venv python3-pip" >&2
      exit 1
    fi
  fi
  python=("-DPython_EXECUTABLE=$root/$venv/bin/python")
fi
# One architecture: the GPU's here, else PTX of sm_90 (scripts/cuda_build_flags.sh).
source scripts/cuda_build_flags.sh
# -U: gpusort::dist as the default has it (on where NCCL is), whatever scripts/demo.sh left.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$archs" \
  -DCMAKE_CUDA_FLAGS="$cuda_flags" -DGPUSORT_BUILD_GPU_TESTS="$gpu_tests" -UGPUSORT_BUILD_DIST \
  "${python[@]}" >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j "$(nproc)"
# The generated tables of docs/performance.md and docs/distributed.md must be what
# scripts/perf_tables.py prints from
# docs/results (after a new run: scripts/perf_tables.py --update docs/performance.md).
python3 scripts/perf_tables.py --check docs/performance.md docs/distributed.md

# pytest after ctest, so that its summary ends the log (GPU tests skip without a GPU).
if [ -z "$base" ] || ! ls build/python/_gpusort*.so >/dev/null 2>&1; then
  echo "pytest: not run (the Python module was not built: GPUSORT_BUILD_PYTHON is off," \
       "or no python3 with NumPy, pytest and venv)"
  exit 0
fi
# The wheel from this build (nothing recompiles), installed as a user would.
rm -rf build/wheel
"$venv/bin/python" -m pip wheel --no-build-isolation --no-deps --no-cache-dir \
  --config-settings "build-dir=$root/build" -w build/wheel ./python
"$venv/bin/python" -m pip install --no-deps --force-reinstall --no-cache-dir \
  build/wheel/gpusort-*.whl
# From an empty folder, so that python/gpusort cannot be imported by accident (python -m
# puts the working directory first on sys.path).
mkdir -p build/pytest-cwd
cd build/pytest-cwd
"$root/$venv/bin/python" -c 'import gpusort; print("pytest: gpusort from", gpusort.__file__)'
rc=0
GPUSORT_TEST_INSTALLED=1 "$root/$venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$root/python/tests" || rc=$?
if [ "$rc" -eq 5 ]; then rc=0; fi  # 5: no tests collected
exit "$rc"
