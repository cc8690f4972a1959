#!/usr/bin/env bash
# Builds the gpusort tool and runs its demo: one array sorted by every algorithm, each result
# verified, the timings side by side. Arguments go to `gpusort demo` (e.g. --n 2^26).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
# A new build folder gets one CUDA architecture (Hopper, as scripts/test.sh's, which shares
# it); the project's default list compiles the device code for five (CUDA 13.0).
archs=()
[ -f build/CMakeCache.txt ] || archs=(-DCMAKE_CUDA_ARCHITECTURES=90)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${archs[@]}" >/dev/null
cmake --build build --target gpusort_tool
build/tools/gpusort demo "$@"
