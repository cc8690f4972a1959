"""gpusort.distributed.sort over NCCL, one process a GPU, against one GPU sorting the whole
array (gpusort.sort_ of a copy, and torch.sort, on rank 0's GPU); over Gloo on the CPU where
there is no GPU (a check of the script more than a benchmark). Start it once per GPU:

    torchrun --nproc-per-node 4 scripts/dist-bench.py [--total 2^28 | --per-rank 2^29]
                                                      [--dtype float32] [--reps 5]
                                                      [--partition-first] [--overwrite-input]

Each rank makes its shard of `total` random keys (the same keys whatever the rank count), the
ranks sort them together (warm-up, then the median of --reps, timed from a barrier to a barrier,
so the slowest rank counts), and rank 0 prints one line: keys/s, the ratio to one GPU,
torch.distributed.all_to_all_single of the same bytes (each rank's keys in equal parts to every
rank), the bare exchange the sort's own all-to-all is to be measured against, and the path
(gpusort::dist's phases in ms on rank 0, or the group's collectives). The
result is checked: every rank's range in order and its bounds in order with its neighbours', and
the counts adding up to the total."""

import argparse
import os
import statistics
import time


def count(text):
    """A count as the tool writes them: 1000, 2^28 or 2^28+5."""
    total = 0
    for term in text.split("+"):
        base, _, power = term.partition("^")
        total += int(base) ** int(power) if power else int(base)
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--total", type=count, default=2**28)
    parser.add_argument("--per-rank", type=count, help="keys a rank (weak scaling); overrides --total")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--partition-first", action="store_true",
                        help="gpusort.distributed.sort(..., partition_first=True)")
    parser.add_argument("--overwrite-input", action="store_true",
                        help="gpusort.distributed.sort(..., overwrite_input=True): the shard, "
                             "restored before each call outside the time, sorted in place")
    args = parser.parse_args()

    import torch
    import torch.distributed as dist

    import gpusort
    import gpusort.distributed

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=device)
        synchronize, name = torch.cuda.synchronize, torch.cuda.get_device_name()
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
        synchronize, name = (lambda: None), "CPU (Gloo)"
    dtype = getattr(torch, args.dtype)
    if args.per_rank is not None:
        args.total = args.per_rank * world
    shard = args.total // world + (1 if rank < args.total % world else 0)
    generator = torch.Generator(device=device).manual_seed(1234 + rank)
    if dtype.is_floating_point:
        keys = torch.rand(shard, generator=generator, device=device, dtype=torch.float32).to(dtype)
    else:
        info = torch.iinfo(dtype)
        keys = torch.randint(info.min, info.max, (shard,), generator=generator, device=device,
                             dtype=torch.int64).to(dtype)

    last = {}
    # With overwrite_input the call reorders the shard: each call gets the same keys again.
    pristine = keys.clone() if args.overwrite_input else None

    def timed(call):
        last.clear()  # the previous result freed first, as a caller that sorts again would
        if pristine is not None:
            keys.copy_(pristine)
        dist.barrier()
        synchronize()
        start = time.perf_counter()
        last["result"] = call()
        synchronize()
        dist.barrier()
        return time.perf_counter() - start

    def call():
        return gpusort.distributed.sort(keys, partition_first=args.partition_first,
                                        overwrite_input=args.overwrite_input)

    timed(call)
    seconds = statistics.median(timed(call) for _ in range(args.reps))
    result = last["result"]
    # The bare exchange of the same bytes: the keys in world near-equal parts to every rank.
    parts = [shard // world + (1 if r < shard % world else 0) for r in range(world)]
    incoming = torch.tensor(parts, device=device)
    dist.all_to_all_single(incoming, torch.tensor(parts, device=device))
    received = torch.empty(int(incoming.sum()), device=device, dtype=dtype)
    exchange = lambda: dist.all_to_all_single(received, keys, incoming.tolist(), parts)  # noqa: E731
    timed(exchange)
    exchange_seconds = statistics.median(timed(exchange) for _ in range(args.reps))
    local_ok = bool((result.keys[1:] >= result.keys[:-1]).all()) if result.keys.numel() > 1 else True
    bounds = torch.tensor([result.keys.min().item() if result.keys.numel() else float("inf"),
                           result.keys.max().item() if result.keys.numel() else float("-inf")],
                          device=device, dtype=torch.float64)
    every = [torch.empty_like(bounds) for _ in range(world)]
    dist.all_gather(every, bounds)
    flags = torch.tensor([int(local_ok)], device=device)
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    # The last call's phases on rank 0 where gpusort::dist sorted it (the native path).
    phases = gpusort.distributed._last_times
    path = "path=collectives" if phases is None else (
        "path=native " + " ".join(f"{name.removesuffix('_ms')}={phases[name]:.2f}" for name in
                                  ("setup_ms", "local_sort_ms", "sampling_ms", "exchange_ms", "merge_ms")))
    if rank == 0:
        ordered = all(every[i][1] <= every[i + 1][0] for i in range(world - 1)
                      if torch.isfinite(every[i][1]) and torch.isfinite(every[i + 1][0]))
        correct = bool(flags.item()) and ordered and int(result.counts.sum()) == args.total
        whole = torch.rand(args.total, device=device, dtype=torch.float32).to(dtype) \
            if dtype.is_floating_point else torch.randint(0, 1 << 30, (args.total,), device=device).to(dtype)
        one = {}
        # Keys alone, as the distributed sort returns them, from a copy as it sorts one;
        # torch.sort has no keys-only sort and returns indices too.
        for method, sorter in (("gpusort", lambda: gpusort.sort_(whole.clone())),
                               ("torch", lambda: torch.sort(whole))):
            sorter()
            times = []
            for _ in range(args.reps):
                synchronize()
                start = time.perf_counter()
                sorter()
                synchronize()
                times.append(time.perf_counter() - start)
            one[method] = statistics.median(times)
        print(f"dist-bench {name} x{world} {args.dtype} total={args.total} "
              f"partition_first={args.partition_first} overwrite_input={args.overwrite_input} "
              f"correct={correct} dist={seconds * 1e3:.2f} ms ({args.total / seconds / 1e6:.1f} Mkeys/s) "
              f"one-GPU gpusort={one['gpusort'] * 1e3:.2f} ms torch.sort={one['torch'] * 1e3:.2f} ms "
              f"speedup vs gpusort={one['gpusort'] / seconds:.2f}x vs torch={one['torch'] / seconds:.2f}x "
              f"all_to_all_single of the keys={exchange_seconds * 1e3:.2f} ms {path}",
              flush=True)
        if not correct:
            raise SystemExit(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
