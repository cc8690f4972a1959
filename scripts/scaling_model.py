#!/usr/bin/env python3
"""A model of gpusort::dist's time on p GPUs, fit to the phases `gpusort-dist-bench` measured on
1 to 4 GPUs, and its predictions for 8 to 1,024 (issue 74). docs/distributed.md holds its
output in a region that scripts/perf_tables.py keeps current (--check in CI).

  scripts/scaling_model.py [CSV] [--key u32] [--values none] [--held-out 3]

Each phase has the shape the algorithm gives it (docs/distributed.md, "The algorithm"), with
n keys a GPU, b bytes a record, s = oversampling:
  local sort   n / R                          R: one GPU's sort rate
  sampling     a + c p                        a few all-gathers and a sort of p s samples
  exchange     B / W + l (p - 1)              B: bytes a GPU sends, n b (p - 1) / p; W: its
                                              all-to-all bandwidth, l: a cost per peer
  merge        n (m0 + m1 ceil(log2 p))       a copy, then ceil(log2 p) two-way merge passes
Each is fit by least squares to the rows (weak and strong scaling) of every GPU count but the
held-out one, which is then predicted and compared with what was measured.

The predictions add two assumptions, named in the table: GPUs in NVLink domains of D (8 for
an HGX H100/H200 host, 72 for an NVL72 rack, whose NVLink 5 is taken at twice the measured
rate), and InfiniBand between domains at 400 Gb/s a GPU, taken at 45 GB/s with 10 us a peer.
The exchange inside and across domains runs at once, so it costs the slower of the two. The
balance bound (1 + (p + 1) / s, at most that many times n keys on one GPU) is shown beside
them: at s = 1024 it stays near 1 only while p is far below s."""
import csv
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OVERSAMPLING = 1024  # gpusort::dist::options::oversampling's default
IB_BYTES_PER_S = 45e9
IB_SECONDS_PER_PEER = 10e-6
SCENARIOS = [("HGX (D = 8)", 8, 1.0), ("NVL72 (D = 72)", 72, 2.0)]
PREDICTED_GPUS = [8, 16, 64, 72, 256, 1024]
PREDICTED_KEYS_PER_GPU = 2**29


def rows(path, key, values):
    if not os.path.exists(path) and not os.path.isabs(path):
        path = os.path.join(ROOT, path)
    with open(path) as f:
        return [r for r in csv.DictReader(f)
                if r["algorithm"] == "dist_sample_sort" and r["key_type"] == key
                and r["value_type"] == values]


def least_squares(columns, y):
    """The coefficients c minimizing |sum_j c_j columns[j] - y|^2 (normal equations, solved
    by Gaussian elimination: two or three unknowns)."""
    k = len(columns)
    a = [[sum(ci * cj for ci, cj in zip(columns[i], columns[j])) for j in range(k)] +
         [sum(ci * yi for ci, yi in zip(columns[i], y))] for i in range(k)]
    for i in range(k):
        pivot = max(range(i, k), key=lambda r: abs(a[r][i]))
        a[i], a[pivot] = a[pivot], a[i]
        for r in range(k):
            if r != i and a[i][i] != 0:
                factor = a[r][i] / a[i][i]
                a[r] = [x - factor * z for x, z in zip(a[r], a[i])]
    return [a[i][k] / a[i][i] if a[i][i] != 0 else 0.0 for i in range(k)]


def merge_passes(p):
    return math.ceil(math.log2(p)) if p > 1 else 0


class Model:
    """Seconds of each phase for n keys a GPU on p GPUs, fit to measured rows."""

    def __init__(self, fit_rows, record_bytes):
        self.record_bytes = record_bytes
        p = [int(r["gpus"]) for r in fit_rows]
        n = [float(r["max_shard"]) for r in fit_rows]  # the keys the busiest GPU held
        ms = lambda name: [float(r[name]) * 1e-3 for r in fit_rows]  # noqa: E731
        (self.seconds_per_key,) = least_squares([n], ms("local_sort_ms"))
        self.sampling = least_squares([[1.0] * len(p), [float(q) for q in p]], ms("sampling_ms"))
        many = [i for i, q in enumerate(p) if q > 1]
        sent = [float(fit_rows[i]["bytes_sent_per_gpu"]) for i in many]
        exchange = [ms("exchange_ms")[i] for i in many]
        self.seconds_per_byte, self.seconds_per_peer = least_squares(
            [sent, [float(p[i] - 1) for i in many]], exchange)
        self.merge = least_squares([n, [x * merge_passes(q) for x, q in zip(n, p)]], ms("merge_ms"))

    def phases(self, n, p, domain=None, nvlink_speedup=1.0):
        """(local, sampling, exchange, merge) seconds; domain: GPUs per NVLink domain (None:
        all of them in one, as measured)."""
        local = n * self.seconds_per_key
        sampling = self.sampling[0] + self.sampling[1] * p
        inside_peers = p - 1 if domain is None else min(p, domain) - 1
        outside_peers = p - 1 - inside_peers
        per_peer = n * self.record_bytes / p
        exchange = max(inside_peers * per_peer * self.seconds_per_byte / nvlink_speedup,
                       outside_peers * per_peer / IB_BYTES_PER_S)
        exchange += (inside_peers * self.seconds_per_peer + outside_peers * IB_SECONDS_PER_PEER
                     if p > 1 else 0.0)
        merge = n * (self.merge[0] + self.merge[1] * merge_passes(p))
        return local, sampling, exchange, merge


def pow2(n):
    return f"2^{int(math.log2(n))}" if n & (n - 1) == 0 else str(n)


def lines(argv):
    args = list(argv)
    settings = {"--key": "u32", "--values": "none", "--held-out": "3"}
    for name in settings:
        if name in args:
            at = args.index(name)
            settings[name] = args[at + 1]
            del args[at:at + 2]
    path = args[0] if args else "docs/results/h200x4-dist.csv"
    key, values, held_out = settings["--key"], settings["--values"], int(settings["--held-out"])
    measured = rows(path, key, values)
    if not measured:
        raise SystemExit(f"scaling_model.py: no dist_sample_sort rows of {key}/{values} in {path}")
    record_bytes = {"u32": 4, "i32": 4, "f32": 4, "u64": 8, "i64": 8, "f64": 8}[key] + \
        {"none": 0, "u32": 4, "u64": 8}[values]
    model = Model([r for r in measured if int(r["gpus"]) != held_out], record_bytes)
    gpu = measured[0]["gpu"].split(" x")[0]
    largest = max(int(r["gpus"]) for r in measured)
    out = [f"Fit to {os.path.basename(path)} ({largest} x {gpu}, {key} keys, values {values}, GPU counts "
           f"{sorted({int(r['gpus']) for r in measured} - {held_out})}):",
           "",
           f"- local sort: {1e-9 / model.seconds_per_key:.1f} Gkeys/s a GPU;",
           f"- sampling: {model.sampling[0] * 1e3:.3f} ms + {model.sampling[1] * 1e3:.3f} ms a GPU;",
           f"- exchange: {1e-9 / model.seconds_per_byte:.0f} GB/s a GPU's all-to-all + "
           f"{model.seconds_per_peer * 1e6:.0f} us a peer;",
           f"- merge: {model.merge[0] * 1e3 * 2**29:.2f} ms + {model.merge[1] * 1e3 * 2**29:.2f} ms a "
           f"pass, for 2^29 keys a GPU.",
           "",
           f"Held out, {held_out} GPUs (not in the fit): the model's total against the measured one.",
           "",
           "| mode | keys a GPU | local | sampling | exchange | merge | model total | measured | error |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in measured:
        if int(r["gpus"]) != held_out:
            continue
        phases = model.phases(float(r["max_shard"]), held_out)
        total = sum(phases)
        got = float(r["median_ms"]) * 1e-3
        out.append(f"| {r['mode']} | {int(r['max_shard']):,} | " +
                   " | ".join(f"{x * 1e3:.2f} ms" for x in phases) +
                   f" | {total * 1e3:.2f} ms | {got * 1e3:.2f} ms | {100 * (total - got) / got:+.0f}% |")
    out += ["",
            f"Predicted, weak scaling at {pow2(PREDICTED_KEYS_PER_GPU)} keys a GPU; efficiency is one "
            f"GPU's sort of its keys alone ({model.phases(PREDICTED_KEYS_PER_GPU, 1)[0] * 1e3:.2f} ms) "
            f"over the total:",
            "",
            "| GPUs | NVLink domains | local (ms) | sampling | exchange | merge | total | efficiency | balance bound |",
            "|---|---|---|---|---|---|---|---|---|"]
    one = model.phases(PREDICTED_KEYS_PER_GPU, 1)[0]
    for p in PREDICTED_GPUS:
        for name, domain, speedup in SCENARIOS:
            if domain > p and domain != SCENARIOS[0][1]:
                continue
            phases = model.phases(PREDICTED_KEYS_PER_GPU, p, domain, speedup)
            total = sum(phases)
            out.append(f"| {p} | {name} | " + " | ".join(f"{x * 1e3:.2f}" for x in phases) +
                       f" | {total * 1e3:.2f} | {one / total:.0%} | "
                       f"{1 + (p + 1) / OVERSAMPLING:.2f}x |")
    return out


if __name__ == "__main__":
    for line in lines(sys.argv[1:]):
        print(line)
