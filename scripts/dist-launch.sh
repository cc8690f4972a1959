#!/usr/bin/env bash
# Starts PROGRAM once per GPU of this host, as torchrun would: each process gets RANK,
# WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE, and all share a fresh GPUSORT_NCCL_ID_FILE, so
# that gpusort::dist::communicator_from_environment() finds its rank, its GPU and the NCCL id
# (docs/distributed.md). Waits for every rank; exits with the first failing rank's code, and
# stops the others 30 s after a failure (a rank that failed outside the library's checks can
# leave them waiting in NCCL).
#   scripts/dist-launch.sh [-n RANKS] PROGRAM [ARGS...]   (-n: default, one a visible GPU)
set -uo pipefail
ranks=""
if [ "${1:-}" = "-n" ]; then ranks=$2; shift 2; fi
if [ $# -eq 0 ]; then
  echo "usage: scripts/dist-launch.sh [-n RANKS] PROGRAM [ARGS...]" >&2
  exit 2
fi
# By default one rank a visible GPU: CUDA_VISIBLE_DEVICES's list where it is set.
if [ -z "$ranks" ] && [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  ranks=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)
fi
[ -n "$ranks" ] || ranks=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if ! [ "$ranks" -ge 1 ] 2>/dev/null; then
  echo "dist-launch: no GPU found; give the number of ranks with -n" >&2
  exit 2
fi
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
id_dir=$(mktemp -d)
trap 'rm -rf "$id_dir"' EXIT
pids=()
for ((r = 0; r < ranks; r++)); do
  RANK=$r WORLD_SIZE=$ranks LOCAL_RANK=$r LOCAL_WORLD_SIZE=$ranks \
    GPUSORT_NCCL_ID_FILE="$id_dir/nccl-id" "$@" &
  pids+=($!)
done
status=0
running=("${pids[@]}")
while [ ${#running[@]} -gt 0 ]; do
  wait -n -p ended "${running[@]}"  # bash 5.1: the pid that ended
  code=$?
  remaining=()
  for pid in "${running[@]}"; do [ "$pid" != "$ended" ] && remaining+=("$pid"); done
  running=("${remaining[@]}")
  if [ "$code" -ne 0 ] && [ "$status" -eq 0 ]; then
    status=$code
    ( sleep 30; kill "${running[@]}" 2>/dev/null ) &
  fi
done
exit "$status"
