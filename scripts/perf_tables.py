#!/usr/bin/env python3
"""Prints docs/performance.md's tables from a results CSV (docs/results/<gpu>.csv):
one table per key/value type, a row per n, each algorithm's median time and rate; then,
for the segmented rows (segment_size a number or "powerlaw", 0 being a single array), one
table per key/value type, a row per (n, segment size), our sort against CUB's two."""
import csv
import sys
from collections import defaultdict

ORDER = ["bitonic", "sample_sort", "sample_sort_random", "adaptive_bitonic", "quicksort", "cub_radix",
         "cub_merge", "thrust", "classic_bitonic", "std_sort", "cpu_parallel"]
OURS = ["bitonic", "sample_sort", "adaptive_bitonic", "quicksort"]  # each gets a "vs cub_merge" column


def pow2(n):
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else f"2^{(n - 1).bit_length() - 1}+{n - (1 << ((n - 1).bit_length() - 1))}"


def main(path):
    single_array_tables(path)
    segmented_tables(path)


def single_array_tables(path):
    cells = defaultdict(dict)  # (key, value) -> {(n, algo): row}
    for row in csv.DictReader(open(path)):
        if row["distribution"] != "uniform" or row["segment_size"] != "0":
            continue
        cells[(row["key_type"], row["value_type"])][(int(row["n"]), row["algorithm"])] = row
    for (key, value), group in cells.items():
        algos = [a for a in ORDER if any(a == al for _, al in group)]
        sizes = sorted({n for n, _ in group})
        title = key if value == "none" else f"{key} keys, {value} values"
        print(f"\n### {title} (uniform), median ms and Gkeys/s\n")
        ours = [a for a in OURS if a in algos]
        print("| n | " + " | ".join(algos) + "".join(f" | {a} vs cub_merge" for a in ours) + " |")
        print("|---" * (len(algos) + len(ours) + 1) + "|")
        for n in sizes:
            line = [pow2(n)]
            for a in algos:
                r = group.get((n, a))
                line.append(f"{float(r['median_ms']):.3f} ms ({float(r['keys_per_s']) / 1e9:.2f})" if r else "-")
            m = group.get((n, "cub_merge"))
            for a in ours:
                b = group.get((n, a))
                line.append(f"{float(m['median_ms']) / float(b['median_ms']):.2f}x" if b and m else "-")
            print("| " + " | ".join(line) + " |")


def segment_order(size):
    """Fixed sizes in increasing order, then powerlaw."""
    return (1, 0) if size == "powerlaw" else (0, int(size))


def segmented_tables(path):
    cells = defaultdict(dict)  # (key, value) -> {(n, segment_size, algo): row}
    for row in csv.DictReader(open(path)):
        if row["distribution"] != "uniform" or row["segment_size"] == "0":
            continue
        cells[(row["key_type"], row["value_type"])][
            (int(row["n"]), row["segment_size"], row["algorithm"])] = row
    for (key, value), group in cells.items():
        points = sorted({(n, size) for n, size, _ in group},
                        key=lambda p: (p[0], segment_order(p[1])))
        title = key if value == "none" else f"{key} keys, {value} values"
        print(f"\n### {title} (uniform), segmented: median ms; vs X: X's ms / ours\n")
        print("| n | segment size | sort_segmented | Gkeys/s | cub_segmented_radix | cub_segmented_sort"
              " | vs cub_segmented_radix | vs cub_segmented_sort |")
        print("|---" * 8 + "|")
        for n, size in points:
            ours = group.get((n, size, "sort_segmented"))
            line = [pow2(n), size,
                    f"{float(ours['median_ms']):.3f}" if ours else "-",
                    f"{float(ours['keys_per_s']) / 1e9:.2f}" if ours else "-"]
            refs = [group.get((n, size, a)) for a in ("cub_segmented_radix", "cub_segmented_sort")]
            line += [f"{float(r['median_ms']):.3f}" if r else "-" for r in refs]
            line += [f"{float(r['median_ms']) / float(ours['median_ms']):.2f}x" if r and ours else "-"
                     for r in refs]
            print("| " + " | ".join(line) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/results/h100.csv")
