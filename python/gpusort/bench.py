"""python -m gpusort.bench: gpusort against torch.sort, torch.topk, torch.sort(dim=-1),
torch.argsort(stable=True) and cupy.sort, in one process on one GPU (whichever are
installed). CUDA events around each call, warm-up first, fresh input copied from a pristine
array before every timed call (the copy is not timed), the median of the repetitions.

    python -m gpusort.bench [--quick] [--reps 10] [--csv results.csv] [--plot DIR] [--match TEXT]
                            [--graph]

--graph times each call captured in a CUDA graph and replayed: the GPU's time without the
host's launch work, as an LLM decoding loop runs its step.

Two cases are timed apart: the host cost of one call at 2^10 keys (wall clock over a loop
of calls, next to the GPU time of one), and an in-place sort of a float32 tensor that fills
60% of the free device memory, where torch.sort runs out of memory.
"""

import argparse
import csv
import statistics
import sys

import gpusort


def _median_ms(torch, run, pristine, work, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for rep in range(reps + 2):  # two warm-ups
        work.copy_(pristine)
        start.record()
        run(work)
        end.record()
        end.synchronize()
        if rep >= 2:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def _graph_median_ms(torch, run, pristine, work, reps):
    """run(work) captured once in a CUDA graph, then each replay timed: the GPU's time alone,
    without the host's launch work (decoding loops run their step as a graph)."""
    work.copy_(pristine)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-ups off the default stream, as capture asks
        for _ in range(2):
            run(work)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run(work)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for rep in range(reps + 2):  # two warm-ups
        work.copy_(pristine)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        if rep >= 2:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


# (rows, columns, k) of top-k at LLM decoding: batch x vocabulary.
DECODE_SHAPES = [(1, 262144, 50), (1, 131072, 1024), (64, 131072, 1024), (64, 131072, 50),
                 (256, 32000, 50), (512, 32000, 8), (16, 151936, 256)]


def _cases(torch, quick):
    """(case, n, dtype, make input, {name: call})."""
    big = 2**24 if quick else 2**28
    cases = []
    for n in (2**10, 2**24, big):
        for dtype in ("float32", "int32"):
            cases.append((f"sort {dtype} with indices", n, dtype, {
                "gpusort": lambda x: gpusort.sort(x),
                "torch.sort": lambda x: torch.sort(x),
            }))
    # narrow keys, sorted at their own width (issue 47)
    for n in (2**24, big):
        for dtype in ("bfloat16", "float16", "int16", "int8", "uint8"):
            cases.append((f"sort {dtype} with indices", n, dtype, {
                "gpusort": lambda x: gpusort.sort(x),
                "torch.sort": lambda x: torch.sort(x),
            }))
    cases.append((f"argsort stable int32", 2**24, "int32", {
        "gpusort": lambda x: gpusort.argsort(x, stable=True),
        "torch.argsort(stable=True)": lambda x: torch.argsort(x, stable=True),
    }))
    for row_len in (32, 128, 256, 1024, 4096):
        cases.append((f"rows of {row_len} float32", 2**24, "float32", {
            "gpusort": lambda x, r=row_len: gpusort.sort(x.view(-1, r)),
            "gpusort int32 indices": lambda x, r=row_len: gpusort.sort(x.view(-1, r),
                                                                         indices_dtype="int32"),
            "torch.sort(dim=-1)": lambda x, r=row_len: torch.sort(x.view(-1, r), dim=-1),
        }))
    for dtype in ("float32", "int32"):
        for k in (1000, 100000):
            cases.append((f"topk k={k} {dtype}", big, dtype, {
                "gpusort": lambda x, k=k: gpusort.topk(x, k),
                "torch.topk": lambda x, k=k: torch.topk(x, k),
            }))
    # LLM decoding: top-k over the vocabulary of each row (issue 47's shapes)
    for rows, columns, k in DECODE_SHAPES:
        for dtype in ("bfloat16", "float16", "float32"):
            cases.append((f"topk rows {rows}x{columns} k={k} {dtype}", rows * columns, dtype, {
                "gpusort": lambda x, r=rows, k=k: gpusort.topk(x.view(r, -1), k),
                "torch.topk": lambda x, r=rows, k=k: torch.topk(x.view(r, -1), k),
            }))
    # sorted=False (the k in any order: no sort of them) at the largest k and at a small one.
    for rows, columns, k in ((64, 131072, 1024), (64, 131072, 50), (1, 262144, 50)):
        cases.append((f"topk rows {rows}x{columns} k={k} sorted=False bfloat16", rows * columns,
                      "bfloat16", {
                          "gpusort": lambda x, r=rows, k=k: gpusort.topk(x.view(r, -1), k, sorted=False),
                          "torch.topk": lambda x, r=rows, k=k: torch.topk(x.view(r, -1), k, sorted=False),
                      }))
    # Decoding's sampling: top-k, then top-p at a temperature, one token a row (issue 76),
    # against torch's usual recipe on torch.topk.
    def torch_sampling(x, rows, k, p=0.9, temperature=0.7):
        values, indices = torch.topk(x.view(rows, -1), k)
        probabilities = torch.softmax(values.float() / temperature, dim=-1)
        more_likely = probabilities.cumsum(-1) - probabilities
        probabilities = probabilities.masked_fill(more_likely >= p, 0.0)
        return indices.gather(-1, torch.multinomial(probabilities, 1))

    for rows, columns, k in ((64, 131072, 50), (256, 32000, 50), (1, 262144, 50)):
        cases.append((f"sample top-k top-p {rows}x{columns} k={k} bfloat16", rows * columns,
                      "bfloat16", {
                          "gpusort": lambda x, r=rows, k=k: gpusort.sample_top_k_top_p(
                              x.view(r, -1), k, 0.9, 0.7),
                          "torch recipe": lambda x, r=rows, k=k: torch_sampling(x, r, k),
                      }))
    cases.append(("sort_ in place float32", big, "float32", {
        "gpusort bitonic": lambda x: gpusort.sort_(x, algorithm="bitonic"),
    }))
    return cases + _operation_cases(torch, big)


def _operation_cases(torch, big):
    """The sort-based operations (issue 73) against torch's and CuPy's own."""
    cupy = _cupy()
    cases = []
    for dtype in ("int32", "float32"):
        calls = {"gpusort": lambda x: gpusort.unique(x, return_counts=True),
                 "torch.unique": lambda x: torch.unique(x, sorted=True, return_counts=True)}
        if cupy is not None:
            calls["cupy.unique"] = lambda x: cupy.unique(cupy.from_dlpack(x), return_counts=True)
        cases.append((f"unique {dtype} with counts", big, dtype, calls))
    # Queries (2^24) in a sorted sequence of `big` keys, made on first use.
    sequence = {}

    def sorted_keys():
        if "keys" not in sequence:
            sequence["keys"] = torch.sort(torch.rand(big, device="cuda"))[0]
        return sequence["keys"]

    cases.append((f"searchsorted in {big} float32", 2**24, "float32", {
        "gpusort": lambda x: gpusort.searchsorted(sorted_keys(), x),
        "torch.searchsorted": lambda x: torch.searchsorted(sorted_keys(), x),
    }))

    def stable_argsort_recipe(keys):  # torch's usual lexsort: the last key most significant
        order = torch.argsort(keys[0], stable=True)
        for key in keys[1:]:
            order = order[torch.argsort(key[order], stable=True)]
        return order

    calls = {"gpusort": lambda x: gpusort.lexsort(x.view(3, -1)),
             "torch argsort(stable) per key": lambda x: stable_argsort_recipe(x.view(3, -1))}
    if cupy is not None:
        calls["cupy.lexsort"] = lambda x: cupy.lexsort(cupy.from_dlpack(x).reshape(3, -1))
    cases.append(("lexsort 3 int32 keys", 3 * (big // 4), "int32", calls))
    return cases


def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def _call_overhead_us(torch, run, x, calls=2000):
    """Host wall-clock microseconds per call over back-to-back calls (one final sync)."""
    import time

    for _ in range(20):
        run(x)
    torch.cuda.synchronize()
    begin = time.perf_counter()
    for _ in range(calls):
        run(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - begin) / calls * 1e6


def _overhead_rows(torch, gpu):
    n = 2**10
    x = torch.rand(n, device="cuda")
    calls = {"gpusort": lambda x: gpusort.sort(x), "torch.sort": lambda x: torch.sort(x)}
    rows = []
    line = f"{'host cost per call float32':28s} n={n:>10d}"
    for name, call in calls.items():
        us = _call_overhead_us(torch, call, x)
        line += f"  {name} {us:7.1f} us"
        rows.append({"case": "host us per call float32", "n": n, "method": name,
                     "median_ms": f"{us / 1e3:.4f}", "keys_per_s": f"{n / us * 1e6:.4g}", "gpu": gpu})
    print(line, flush=True)
    return rows


def _in_place_rows(torch, gpu, reps):
    """sort_ of a tensor filling 60% of the free memory; torch.sort on the same tensor."""
    free, _ = torch.cuda.mem_get_info()
    n = int(free * 0.6) // 4
    x = torch.empty(n, dtype=torch.float32, device="cuda")
    generator = torch.Generator(device="cuda").manual_seed(n)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    results, sorted_ok = {}, False
    for name, call in (("gpusort bitonic sort_", lambda x: gpusort.sort_(x, algorithm="bitonic")),
                       ("torch.sort", lambda x: torch.sort(x))):
        times = []
        try:
            for _ in range(max(1, reps // 4)):
                x.uniform_(generator=generator)  # fresh keys in place: no second copy fits
                start.record()
                call(x)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            results[name] = statistics.median(times)
        except torch.cuda.OutOfMemoryError:
            results[name] = float("nan")
        torch.cuda.empty_cache()
        if name.startswith("gpusort"):
            sorted_ok = bool((x[1:] >= x[:-1]).all())
    line = f"{'sort_ 60% of free, float32':28s} n={n:>10d}"
    rows = []
    for name, ms in results.items():
        line += f"  {name} " + ("out of memory" if ms != ms else f"{ms:9.3f}")
        rows.append({"case": "sort_ in place 60% of free float32", "n": n, "method": name,
                     "median_ms": f"{ms:.4f}", "keys_per_s": f"{n / ms * 1e3:.4g}", "gpu": gpu})
    print(line + ("" if sorted_ok else "  (gpusort's result is NOT sorted)"), flush=True)
    del x
    torch.cuda.empty_cache()
    return rows


def write_figure(rows, out_dir):
    """One bar per (case, baseline): how many times faster gpusort is (> 1: gpusort wins)."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mine = {(r["case"], r["n"]): float(r["median_ms"]) for r in rows if r["method"].startswith("gpusort")}
    bars = [(f"{r['case']} n={r['n']} vs {r['method']}", float(r["median_ms"]) / mine[(r["case"], r["n"])])
            for r in rows
            if not r["method"].startswith("gpusort") and (r["case"], r["n"]) in mine
            and float(r["median_ms"]) == float(r["median_ms"])]
    os.makedirs(out_dir, exist_ok=True)
    figure, axes = plt.subplots(figsize=(9, 0.28 * len(bars) + 1.2))
    axes.barh([label for label, _ in bars], [ratio for _, ratio in bars])
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_xscale("log")
    axes.invert_yaxis()
    axes.set_xlabel("baseline time / gpusort time (right of 1: gpusort faster)")
    axes.set_title(f"gpusort from Python, {rows[0]['gpu']}", fontsize=10)
    axes.tick_params(axis="y", labelsize=7)
    figure.tight_layout()
    path = os.path.join(out_dir, "python_bench.png")
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gpusort.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="largest size 2^24, not 2^28")
    parser.add_argument("--csv", help="write one row per measurement here")
    parser.add_argument("--plot", metavar="DIR", help="draw python_bench.png here (matplotlib)")
    parser.add_argument("--match", metavar="TEXT",
                        help="only the cases whose name holds TEXT (e.g. 'topk rows')")
    parser.add_argument("--graph", action="store_true",
                        help="time each call captured in a CUDA graph (GPU time alone); a call "
                             "that cannot be captured shows nan")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        sys.exit("gpusort.bench needs PyTorch (and a GPU)")
    if not torch.cuda.is_available():
        sys.exit("gpusort.bench: no CUDA device")
    try:
        import cupy
    except ImportError:
        cupy = None
    gpu = torch.cuda.get_device_name()
    rows = []
    print(f"{gpu}, median of {args.reps} runs (ms); ratio = other / gpusort")
    if not args.match and not args.graph:
        rows += _overhead_rows(torch, gpu)
    for case, n, dtype, calls in _cases(torch, args.quick):
        if args.match and args.match not in case:
            continue
        generator = torch.Generator(device="cuda").manual_seed(n)
        if dtype in ("bfloat16", "float16") or case.startswith("topk rows"):  # logits
            pristine = torch.randn(n, device="cuda", generator=generator).to(getattr(torch, dtype))
        elif dtype == "float32":
            pristine = torch.rand(n, device="cuda", generator=generator)
        else:
            info = torch.iinfo(getattr(torch, dtype))
            pristine = torch.randint(info.min, info.max, (n,), dtype=getattr(torch, dtype),
                                     device="cuda", generator=generator)
        work = torch.empty_like(pristine)
        if (cupy is not None and case.startswith("sort ") and "indices" in case
                and dtype != "bfloat16"):  # CuPy has no bfloat16
            calls = dict(calls, **{"cupy.sort (keys only)": lambda x: cupy.sort(cupy.from_dlpack(x))})
        results = {}
        timer = _graph_median_ms if args.graph else _median_ms
        for name, call in calls.items():
            name += " (CUDA graph)" if args.graph else ""
            try:
                results[name] = timer(torch, call, pristine, work, args.reps)
            except torch.cuda.OutOfMemoryError:
                results[name] = float("nan")
                torch.cuda.empty_cache()
            except RuntimeError:  # gpusort.Error too
                if not args.graph:
                    raise
                results[name] = float("nan")  # the call cannot be captured
        mine = next(v for k, v in results.items() if k.startswith("gpusort"))
        line = f"{case:28s} n={n:>10d}"
        for name, ms in results.items():
            ratio = "" if name.startswith("gpusort") else f" ({ms / mine:.2f}x)"
            line += f"  {name} {ms:9.3f}{ratio}"
            rows.append({"case": case, "n": n, "method": name, "median_ms": f"{ms:.4f}",
                         "keys_per_s": f"{n / ms * 1e3:.4g}", "gpu": gpu})
        print(line, flush=True)
        del pristine, work
        torch.cuda.empty_cache()
    if not args.match and not args.graph:
        rows += _in_place_rows(torch, gpu, args.reps)
    if args.plot:
        print("figure:", write_figure(rows, args.plot))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
