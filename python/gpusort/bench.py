"""python -m gpusort.bench: gpusort against torch.sort, torch.topk, torch.sort(dim=-1),
torch.argsort(stable=True) and cupy.sort, in one process on one GPU (whichever are
installed). CUDA events around each call, warm-up first, fresh input copied from a pristine
array before every timed call (the copy is not timed), the median of the repetitions.

    python -m gpusort.bench [--quick] [--reps 10] [--csv results.csv]
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
    cases.append((f"argsort stable int32", 2**24, "int32", {
        "gpusort": lambda x: gpusort.argsort(x, stable=True),
        "torch.argsort(stable=True)": lambda x: torch.argsort(x, stable=True),
    }))
    for row_len in (32, 256, 1024, 4096):
        cases.append((f"rows of {row_len} float32", 2**24, "float32", {
            "gpusort": lambda x, r=row_len: gpusort.sort(x.view(-1, r)),
            "torch.sort(dim=-1)": lambda x, r=row_len: torch.sort(x.view(-1, r), dim=-1),
        }))
    for dtype in ("float32", "int32"):
        for k in (1000, 100000):
            cases.append((f"topk k={k} {dtype}", big, dtype, {
                "gpusort": lambda x, k=k: gpusort.topk(x, k),
                "torch.topk": lambda x, k=k: torch.topk(x, k),
            }))
    cases.append(("sort_ in place float32", big, "float32", {
        "gpusort bitonic": lambda x: gpusort.sort_(x, algorithm="bitonic"),
    }))
    return cases


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gpusort.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="largest size 2^24, not 2^28")
    parser.add_argument("--csv", help="write one row per measurement here")
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
    for case, n, dtype, calls in _cases(torch, args.quick):
        generator = torch.Generator(device="cuda").manual_seed(n)
        if dtype == "float32":
            pristine = torch.rand(n, device="cuda", generator=generator)
        else:
            pristine = torch.randint(-(2**31), 2**31 - 1, (n,), dtype=torch.int32, device="cuda",
                                     generator=generator)
        work = torch.empty_like(pristine)
        if cupy is not None and case.startswith("sort ") and "indices" in case:
            calls = dict(calls, **{"cupy.sort (keys only)": lambda x: cupy.sort(cupy.from_dlpack(x))})
        results = {}
        for name, call in calls.items():
            try:
                results[name] = _median_ms(torch, call, pristine, work, args.reps)
            except torch.cuda.OutOfMemoryError:
                results[name] = float("nan")
                torch.cuda.empty_cache()
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
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
