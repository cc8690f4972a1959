#!/usr/bin/env bash
# ctest's dist_processes: the DistProcesses suites of test_gpu_dist with each rank a process,
# one a visible GPU, started by scripts/dist-launch.sh. Exits 77 (ctest: skipped) where fewer
# than 2 GPUs are visible.
#   tests/dist_processes.sh path/to/test_gpu_dist
set -uo pipefail
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  gpus=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)
else
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fi
if [ "$gpus" -lt 2 ]; then
  echo "dist_processes: skipped, $gpus GPU(s) visible (needs 2)"
  exit 77
fi
exec "$(dirname "$0")/../scripts/dist-launch.sh" -n "$gpus" "$1" --gtest_filter='DistProcesses*'
