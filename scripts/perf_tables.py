#!/usr/bin/env python3
"""Prints docs/performance.md's tables from a results CSV (docs/results/<gpu>.csv):
one table per key/value type, a row per n, each algorithm's median time and rate."""
import csv
import sys
from collections import defaultdict

ORDER = ["bitonic", "cub_radix", "cub_merge", "thrust", "classic_bitonic", "std_sort"]


def pow2(n):
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else f"2^{(n - 1).bit_length() - 1}+{n - (1 << ((n - 1).bit_length() - 1))}"


def main(path):
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
        print("| n | " + " | ".join(algos) + " | bitonic vs cub_merge |")
        print("|---" * (len(algos) + 2) + "|")
        for n in sizes:
            line = [pow2(n)]
            for a in algos:
                r = group.get((n, a))
                line.append(f"{float(r['median_ms']):.3f} ms ({float(r['keys_per_s']) / 1e9:.2f})" if r else "-")
            b, m = group.get((n, "bitonic")), group.get((n, "cub_merge"))
            line.append(f"{float(m['median_ms']) / float(b['median_ms']):.2f}x" if b and m else "-")
            print("| " + " | ".join(line) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/results/h100.csv")
