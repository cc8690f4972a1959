#!/usr/bin/env bash
# The papers' experiments that docs/performance.md quotes, redone on one GPU with the tool:
#   capannini-fig5.csv   bitonic vs quicksort vs radix (and the rest) over distributions,
#                        5 fresh arrays per point (Capannini et al., Fig. 5)
#   capannini-table1.txt the largest n each algorithm can sort on this GPU (Table 1)
#   peters-fig4.csv      sorting rate vs n, powers of two and not (Peters et al., Fig. 4)
#   cpu.csv              the GPU sorts against std::sort and a parallel CPU sort
#                        (Gress & Zachmann, Tables 2-3)
# The sample sort's and the approximate sort's sweeps have scripts of their own in their
# design notes. Usage: scripts/papers.sh TOOL OUTDIR   (about 6 minutes on an H100)
set -euo pipefail
tool=$1
out=$2
mkdir -p "$out"
gpu_algos=bitonic,quicksort,sample_sort,adaptive_bitonic,cub_radix,cub_merge,thrust

"$tool" bench --algos $gpu_algos,classic_bitonic --types u32 \
  --dists uniform,gaussian,zipf,all_equal,sorted --sizes 2^20,2^23,2^26 --arrays 5 --reps 2 \
  --csv "$out/capannini-fig5.csv" >"$out/capannini-fig5.log"

{ "$tool" largest --all --type u32; "$tool" largest --all --type u64; } >"$out/capannini-table1.txt"

sizes=2^16..2^27
for k in $(seq 16 26); do sizes="$sizes,$((3 << (k - 1)))"; done  # 1.5 x 2^k
sizes="$sizes,2^20+1,2^24-1"
"$tool" bench --algos $gpu_algos,classic_bitonic --types u32 --sizes "$sizes" --reps 5 \
  --csv "$out/peters-fig4.csv" >"$out/peters-fig4.log"

"$tool" bench --algos bitonic,quicksort,adaptive_bitonic,cub_radix,std_sort,cpu_parallel \
  --types u32 --sizes 2^16,2^20,2^24 --reps 3 --csv "$out/cpu.csv" >"$out/cpu.log"
echo "papers.sh: results in $out"
