#!/usr/bin/env bash
# Builds the gpusort tool and runs its demo: one array sorted by every algorithm, each result
# verified, the timings side by side. Arguments go to `gpusort demo` (e.g. --n 2^26).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
# A new build folder gets one CUDA architecture, the GPU's here (as scripts/test.sh's, which
# shares it; scripts/cuda_build_flags.sh), and no gpusort::dist, which the demo does not use
# (a tenth of the build; scripts/test.sh turns it back on where NCCL is); an existing folder
# keeps its own.
config=()
if [ ! -f build/CMakeCache.txt ]; then
  source scripts/cuda_build_flags.sh
  config=(-DCMAKE_CUDA_ARCHITECTURES="$archs" -DCMAKE_CUDA_FLAGS="$cuda_flags"
          -DGPUSORT_BUILD_DIST=OFF)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${config[@]}" >/dev/null
# The tool needs CLI11; without it the build has no such target.
if ! cmake --build build --target help | grep -q '^gpusort_tool:'; then
  echo "demo: the gpusort tool is not built: it needs CLI11 (apt-get install libcli11-dev," \
       "or GPUSORT_CLI11_DIR=<a folder holding CLI/CLI.hpp>)" >&2
  exit 1
fi
cmake --build build --target gpusort_tool
build/tools/gpusort demo "$@"
