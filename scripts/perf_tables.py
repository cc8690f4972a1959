#!/usr/bin/env python3
"""Prints docs/performance.md's tables from a results CSV (docs/results/<gpu>.csv):
one table per key/value type, a row per n, each algorithm's median time and rate; then,
for the segmented rows (segment_size a number or "powerlaw", 0 being a single array), one
table per key/value type, a row per (n, segment size), our sort against CUB's two.
Where a CSV holds several rows of one point, the last one wins.

  scripts/perf_tables.py [--single | --segmented] [CSV]   print the tables (default CSV:
                                                          docs/results/h100.csv)
  scripts/perf_tables.py --scaling-model [ARGS]           scripts/scaling_model.py's output
  scripts/perf_tables.py --update FILE...                 rewrite FILE's generated regions
  scripts/perf_tables.py --check FILE...                  exit 1 if a region is out of date

A generated region is everything between a line
  <!-- perf_tables: ARGS -->
and the next line
  <!-- /perf_tables -->
where ARGS are this script's printing arguments (e.g. `--single docs/results/h100.csv`);
--update replaces the region's lines with what `scripts/perf_tables.py ARGS` prints.
CSV paths are taken relative to the current directory, else to the repository root."""
import csv
import os
import re
import sys
from collections import defaultdict

ORDER = ["bitonic", "sample_sort", "sample_sort_random", "adaptive_bitonic", "quicksort", "cub_radix",
         "cub_merge", "thrust", "classic_bitonic", "std_sort", "cpu_parallel"]
OURS = ["bitonic", "sample_sort", "adaptive_bitonic", "quicksort"]  # each gets a "vs cub_merge" column
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = re.compile(r"^<!-- perf_tables: (.+?) -->$")
END = "<!-- /perf_tables -->"


def pow2(n):
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else f"2^{(n - 1).bit_length() - 1}+{n - (1 << ((n - 1).bit_length() - 1))}"


def rows(path):
    if not os.path.exists(path) and not os.path.isabs(path):
        path = os.path.join(ROOT, path)
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def tables(args):
    """The lines that `perf_tables.py ARGS` prints, for ARGS = [--single | --segmented] [CSV],
    or --scaling-model ARGS: scripts/scaling_model.py's (docs/distributed.md)."""
    if args and args[0] == "--scaling-model":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import scaling_model
        return scaling_model.lines(args[1:])
    parts = {"--single": [single_array_tables], "--segmented": [segmented_tables]}
    make = [single_array_tables, segmented_tables]
    path = "docs/results/h100.csv"
    for arg in args:
        if arg in parts:
            make = parts[arg]
        elif arg.startswith("-"):
            raise SystemExit(f"perf_tables.py: unknown option {arg}")
        else:
            path = arg
    data = rows(path)
    out = []
    for f in make:
        out += f(data)
    return out


def single_array_tables(data):
    out = []
    cells = defaultdict(dict)  # (key, value) -> {(n, algo): row}
    for row in data:
        if row["distribution"] != "uniform" or row["segment_size"] != "0":
            continue
        cells[(row["key_type"], row["value_type"])][(int(row["n"]), row["algorithm"])] = row
    for (key, value), group in cells.items():
        algos = [a for a in ORDER if any(a == al for _, al in group)]
        sizes = sorted({n for n, _ in group})
        title = key if value == "none" else f"{key} keys, {value} values"
        out += ["", f"### {title} (uniform), median ms and Gkeys/s", ""]
        ours = [a for a in OURS if a in algos]
        out.append("| n | " + " | ".join(algos) + "".join(f" | {a} vs cub_merge" for a in ours) + " |")
        out.append("|---" * (len(algos) + len(ours) + 1) + "|")
        for n in sizes:
            line = [pow2(n)]
            for a in algos:
                r = group.get((n, a))
                line.append(f"{float(r['median_ms']):.3f} ms ({float(r['keys_per_s']) / 1e9:.2f})" if r else "-")
            m = group.get((n, "cub_merge"))
            for a in ours:
                b = group.get((n, a))
                line.append(f"{float(m['median_ms']) / float(b['median_ms']):.2f}x" if b and m else "-")
            out.append("| " + " | ".join(line) + " |")
    return out


def segment_order(size):
    """Fixed sizes in increasing order, then powerlaw."""
    return (1, 0) if size == "powerlaw" else (0, int(size))


def segmented_tables(data):
    out = []
    cells = defaultdict(dict)  # (key, value) -> {(n, segment_size, algo): row}
    for row in data:
        if row["distribution"] != "uniform" or row["segment_size"] == "0":
            continue
        cells[(row["key_type"], row["value_type"])][
            (int(row["n"]), row["segment_size"], row["algorithm"])] = row
    for (key, value), group in cells.items():
        points = sorted({(n, size) for n, size, _ in group},
                        key=lambda p: (p[0], segment_order(p[1])))
        title = key if value == "none" else f"{key} keys, {value} values"
        out += ["", f"### {title} (uniform), segmented: median ms; vs X: X's ms / ours", ""]
        out.append("| n | segment size | sort_segmented | Gkeys/s | cub_segmented_radix | cub_segmented_sort"
                   " | vs cub_segmented_radix | vs cub_segmented_sort |")
        out.append("|---" * 8 + "|")
        for n, size in points:
            ours = group.get((n, size, "sort_segmented"))
            line = [pow2(n), size,
                    f"{float(ours['median_ms']):.3f}" if ours else "-",
                    f"{float(ours['keys_per_s']) / 1e9:.2f}" if ours else "-"]
            refs = [group.get((n, size, a)) for a in ("cub_segmented_radix", "cub_segmented_sort")]
            line += [f"{float(r['median_ms']):.3f}" if r else "-" for r in refs]
            line += [f"{float(r['median_ms']) / float(ours['median_ms']):.2f}x" if r and ours else "-"
                     for r in refs]
            out.append("| " + " | ".join(line) + " |")
    return out


def regenerate(text):
    """text with every generated region replaced by the script's output for its arguments."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        end = i
        while end < len(lines) and lines[end] != END:
            if BEGIN.match(lines[end]):
                raise SystemExit(f"perf_tables.py: region opened at line {i} has no {END}")
            end += 1
        if end == len(lines):
            raise SystemExit(f"perf_tables.py: region opened at line {i} has no {END}")
        out += tables(m.group(1).split()) + ["", END]
        i = end + 1
    return "\n".join(out)


def update(files, check):
    stale = []
    for name in files:
        with open(name) as f:
            old = f.read()
        new = regenerate(old)
        if new == old:
            continue
        stale.append(name)
        if not check:
            with open(name, "w") as f:
                f.write(new)
    for name in stale:
        print(f"{name}: " + (f"tables out of date (scripts/perf_tables.py --update {name})"
                              if check else "regenerated"), file=sys.stderr)
    return 1 if check and stale else 0


def main(argv):
    if argv and argv[0] in ("--update", "--check"):
        if len(argv) < 2:
            raise SystemExit(f"usage: perf_tables.py {argv[0]} FILE...")
        return update(argv[1:], argv[0] == "--check")
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    for line in tables(argv):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
