#!/usr/bin/env bash
# gpusort sort against GNU sort on text (issue 75): generates a file of 100-byte lines and a
# CSV with a numeric third column, sorts each with both (whole lines; -t, -k3,3n), checks the
# outputs are byte-identical, and prints one line per run:
#   shape,bytes,tool,seconds,MB/s
#   scripts/text-bench.sh [GIB=1] [TOOL=build/tools/gpusort] [DIR=/tmp]
#   SHAPES=lines scripts/text-bench.sh 50    (one shape: each shape's file is made before its
#                                             runs and removed after, for large sizes on a
#                                             small disk)
# GNU sort runs with every core and half the memory (LC_ALL=C sort --parallel=N -S 50%); the
# file is read once before each run, so both start from the page cache; each writes a new file.
# COLD=1 adds a cold run of gpusort and of cp + sync (see below); GPUSORT_OPTIONS are gpusort's
# alone (GPUSORT_OPTIONS="-S 12G" sorts 10 GiB out of core).
set -euo pipefail
gib=${1:-1}
tool=${2:-build/tools/gpusort}
dir=${3:-/tmp}
cores=$(nproc)
py=python3; $py -c 'import numpy' 2>/dev/null || py=/usr/bin/python3  # one with NumPy
bytes=$($py -c "print(int(float('$gib') * 2**30))")
lines=$((bytes / 100))
text=$dir/gpusort-bench-lines.txt csv=$dir/gpusort-bench.csv
ours=$dir/gpusort-bench-ours.out gnu=$dir/gpusort-bench-gnu.out
trap 'rm -f "$text" "$csv" "$ours" "$gnu"' EXIT
# make_input SHAPE FILE: 99 printable bytes and a newline a line; the CSV: word,word,signed
# decimal,padding to 100.
make_input() {
$py - "$lines" "$1" "$2" "$cores" <<'PY'
import os, sys
from multiprocessing import Pool
import numpy as np
n, shape, path, cores = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
block = 1 << 20

def write_block(index):  # one block of lines, seeded by its index, at its own offset
    rng = np.random.default_rng([7, index])
    count = min(block, n - index * block)
    if shape == "lines":
        out = rng.integers(33, 127, (count, 100), dtype=np.uint8)
    else:
        words = rng.integers(97, 123, (count, 16), dtype=np.uint8)
        words[:, 8] = words[:, 15] = 44  # word,word,
        numbers = np.char.mod("%.3f", rng.uniform(-1e6, 1e6, count)).astype("S20")
        out = np.full((count, 100), ord("x"), np.uint8)
        out[:, :16] = words
        digits = numbers.view(np.uint8).reshape(count, 20)
        out[:, 16:36] = np.where(digits == 0, ord(","), digits)  # the number, then commas
    out[:, 99] = 10
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, out.tobytes(), index * block * 100)
    finally:
        os.close(fd)

with open(path, "wb") as f:
    f.truncate(n * 100)
with Pool(cores) as pool:
    pool.map(write_block, range((n + block - 1) // block))
PY
}
echo "shape,bytes,tool,seconds,MB/s"
# evict FILE: drops the file's clean pages from the page cache (no root needed).
evict() {
  sync "$1"
  $py -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}
run() {  # shape file label output warm|cold command...
  local shape=$1 file=$2 label=$3 output=$4 cache=$5; shift 5
  rm -f "$output"
  if [ "$cache" = cold ]; then evict "$file"; else cat "$file" >/dev/null; fi
  local start end
  start=$(date +%s%N)
  "$@"
  end=$(date +%s%N)
  $py -c "s=($end-$start)/1e9; print(f'$shape,$(stat -c %s "$file"),$label,{s:.3f},{$(stat -c %s "$file")/s/1e6:.0f}')"
}
read -r -a ours_options <<< "${GPUSORT_OPTIONS:-}"  # e.g. "-S 12G": out of core
for shape in ${SHAPES:-lines csv}; do
  file=$text; keys=()
  [ "$shape" = csv ] && file=$csv keys=(-t, -k3,3n)
  make_input "$shape" "$file"
  run "$shape" "$file" gpusort "$ours" warm "$tool" sort "${ours_options[@]}" "${keys[@]}" "$file" -o "$ours"
  run "$shape" "$file" "gnu-sort-$cores" "$gnu" warm env LC_ALL=C sort --parallel="$cores" -S 50% "${keys[@]}" "$file" -o "$gnu"
  cmp -s "$ours" "$gnu" || { echo "text-bench: $shape outputs differ" >&2; exit 1; }
  rm -f "$gnu"
  # COLD=1: the input evicted from the page cache before each run, and each run's output put
  # on disk (sync) inside its time: gpusort against cp + sync of the same file.
  if [ "${COLD:-0}" = 1 ]; then
    run "$shape" "$file" gpusort-cold "$ours" cold sh -c '"$@" && sync "$0"' "$ours" "$tool" sort "${ours_options[@]}" "${keys[@]}" "$file" -o "$ours"
    run "$shape" "$file" cp-sync-cold "$gnu" cold sh -c 'cp "$1" "$0" && sync "$0"' "$gnu" "$file"
  fi
  rm -f "$file" "$ours" "$gnu"
done
