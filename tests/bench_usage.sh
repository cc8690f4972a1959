#!/usr/bin/env bash
# The benchmarks' argument checks, which run before any CUDA call (so on a host without a GPU
# too): each bad option exits 2 with a message that names it; --help exits 0.
#   tests/bench_usage.sh path/to/gpusort-dist-bench (or gpusort-radix-hybrid)
set -u
bench=$1
name=$(basename "$bench")
failed=0
expect() {  # expect EXIT TEXT ARGS...: the run of ARGS exits EXIT and prints TEXT
  local want=$1 text=$2
  shift 2
  local out got
  out=$("$bench" "$@" 2>&1)
  got=$?
  if [ "$got" -ne "$want" ] || ! grep -qF -- "$text" <<<"$out"; then
    echo "FAILED: $name $*: exit $got (want $want), output:"
    echo "$out"
    failed=1
  fi
}
case "$name" in
gpusort-dist-bench)
expect 0 "--merge L" --help
expect 0 "--fan-in L" --help
expect 2 "--fan-in: from 2 to 8, not '9'" --fan-in 2,9
expect 2 "--fan-in: from 2 to 8, not '1'" --fan-in 1
expect 2 "--merge: run counts from 2 to 64, not '65'" --merge 3,65
expect 0 "--split L" --help
expect 2 "one of --processes, --one-gpu, --merge, --split and --overlap" --merge 3 --one-gpu
expect 2 "one of --processes, --one-gpu, --merge, --split and --overlap" --processes --one-gpu
expect 2 "one of --processes, --one-gpu, --merge, --split and --overlap" --merge 3 --split 2
expect 2 "--split: bucket counts from 2 to 255, not '256'" --split 2,256
expect 2 "--split: bucket counts from 2 to 255, not '1'" --split 1
expect 2 "--split: key types u32, u64 and f32, not i64" --split 2 --types i64
expect 2 "--split: --values 0 or 4" --split 8 --values 8
expect 2 "--merge: key types u32, u64 and f32, not i32" --merge 3 --types u32,i32
expect 2 "--merge: --values 0 or 4" --merge 3 --values 0,8
expect 0 "--overlap" --help
expect 2 "one of --processes, --one-gpu, --merge, --split and --overlap" --overlap --split 2
expect 2 "--overlap: keys alone (--values 0)" --overlap --values 0,4
expect 2 "--overlap: key types u32, u64 and f32, not i32" --overlap --types i32
expect 2 "--sub-buckets: with --partition-first" --sub-buckets 2
expect 2 "--copy-engines: ranks that are threads on their own GPUs, not with --processes" --copy-engines --processes
expect 2 "--copy-engines: ranks that are threads on their own GPUs, not with --one-gpu" --one-gpu --copy-engines
expect 2 "--sub-buckets: from 0 to 8, not '9'" --partition-first --sub-buckets 1,9
expect 2 "--values: 0, 4 or 8, not '3'" --values 3
expect 2 "--gpus: a GPU count from 1 to 1024, not '0'" --gpus 1,0
expect 2 "unknown key type 'u16'" --types u16
;;
gpusort-radix-hybrid)
expect 0 "--bits 16,20,24" --help
expect 2 "--bits: from 1 to 28" --bits 16,29
expect 2 "--sizes: from 2 to 2^32 - 1 keys" --sizes 2^32
expect 2 "--dists: no distribution 'normal'" --dists uniform,normal
expect 2 "--reps: from 1 to 1000" --reps 0
expect 2 "--types: u64, i64, u64+u32 or i64+u32, not f64" --types u64,f64
expect 2 "options only" 2^24
;;
*)
echo "FAILED: no checks for $name"
failed=1
;;
esac
[ "$failed" -eq 0 ] && echo "$name refused every bad option"
exit "$failed"
