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
$py - "$lines" "$1" "$2" <<'PY'
import sys
import numpy as np
n, shape, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
rng = np.random.default_rng(7)
with open(path, "wb") as f:
    block = 1 << 20
    for start in range(0, n, block):
        count = min(block, n - start)
        if shape == "lines":
            rows = rng.integers(33, 127, (count, 100), dtype=np.uint8)
            rows[:, 99] = 10
            rows.tofile(f)
            continue
        words = rng.integers(97, 123, (count, 16), dtype=np.uint8)
        words[:, 8] = words[:, 15] = 44  # word,word,
        numbers = np.char.mod("%.3f", rng.uniform(-1e6, 1e6, count)).astype("S20")
        out = np.full((count, 100), ord("x"), np.uint8)
        out[:, :16] = words
        digits = numbers.view(np.uint8).reshape(count, 20)
        out[:, 16:36] = np.where(digits == 0, ord(","), digits)  # the number, then commas
        out[:, 99] = 10
        out.tofile(f)
PY
}
echo "shape,bytes,tool,seconds,MB/s"
run() {  # shape file label output command...
  local shape=$1 file=$2 label=$3 output=$4; shift 4
  cat "$file" >/dev/null
  rm -f "$output"
  local start end
  start=$(date +%s%N)
  "$@"
  end=$(date +%s%N)
  $py -c "s=($end-$start)/1e9; print(f'$shape,$(stat -c %s "$file"),$label,{s:.3f},{$(stat -c %s "$file")/s/1e6:.0f}')"
}
for shape in ${SHAPES:-lines csv}; do
  file=$text; keys=()
  [ "$shape" = csv ] && file=$csv keys=(-t, -k3,3n)
  make_input "$shape" "$file"
  run "$shape" "$file" gpusort "$ours" "$tool" sort "${keys[@]}" "$file" -o "$ours"
  run "$shape" "$file" "gnu-sort-$cores" "$gnu" env LC_ALL=C sort --parallel="$cores" -S 50% "${keys[@]}" "$file" -o "$gnu"
  cmp -s "$ours" "$gnu" || { echo "text-bench: $shape outputs differ" >&2; exit 1; }
  rm -f "$file" "$ours" "$gnu"
done
