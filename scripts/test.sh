#!/usr/bin/env bash
# Builds everything (CUDA code included) and runs the tests. GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
# Python: the interpreter that has NumPy and pytest builds the module and runs its tests.
python=()
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import numpy, pytest' 2>/dev/null; then
    python=("-DPython_EXECUTABLE=$(command -v "$py")")
    break
  fi
done
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${python[@]}" >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j "$(nproc)"

# pytest after ctest, so that its summary ends the log (GPU tests skip without a GPU).
if ls build/python/_gpusort*.so >/dev/null 2>&1; then
  py=$(sed -n 's/^Python_EXECUTABLE:[A-Z]*=//p' build/CMakeCache.txt)
  rc=0
  GPUSORT_MODULE_DIR=build/python "$py" -m pytest -q -p no:cacheprovider python/tests || rc=$?
  if [ "$rc" -eq 5 ]; then rc=0; fi  # 5: no tests collected
  exit "$rc"
else
  echo "pytest: not run (the Python module was not built: GPUSORT_BUILD_PYTHON is off)"
fi
