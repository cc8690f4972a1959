"""gpusort.distributed.sort over torch.distributed (issue 74): processes started as
torch.multiprocessing starts them, 2, 3 and 4 ranks, Gloo on the host (here and in CI) and NCCL
on GPUs where there are enough. The ranks' results, concatenated, must be NumPy's stable sort
of the shards concatenated, with every value beside its key; wrong calls raise on every rank."""

import datetime
import os
import pickle
import traceback

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)
import torch.multiprocessing as mp  # noqa: E402

from reference import float_specials, order_key, random_keys  # noqa: E402


def _shard(case, rank, world):
    """Rank `rank`'s keys for a case (NumPy), from a seed of its own."""
    rng = np.random.default_rng(1000 * world + rank)
    n = {0: 3000, 1: 5, 2: 0, 3: 4097}.get(rank, 1000)
    if case == "int32":
        return random_keys("int32", n, rng)
    if case == "equal":
        return np.full(n, 7, np.int64)
    if case == "floats":
        return float_specials("float32", rng, n)[:n] if n else np.zeros(0, np.float32)
    if case == "float64 few":
        return random_keys("float64", n, rng, distinct=5)
    if case == "float16":
        return float_specials("float16", rng, n)[:n] if n else np.zeros(0, np.float16)
    if case == "int8":
        return random_keys("int8", n, rng)
    if case == "empty":
        return np.zeros(0, np.int32)
    raise AssertionError(case)


def _bytes(tensor):
    """A tensor's bytes (NaNs compare equal so), or the object itself if not a tensor."""
    return tensor.cpu().numpy().tobytes() if isinstance(tensor, torch.Tensor) else tensor


def _one_call(rank, world, device, case, options):
    """What rank `rank` gets from one call (or the error it raised), and whether gpusort::dist
    sorted it (the native path sets the call's phase times)."""
    import gpusort.distributed

    gpusort.distributed._last_times = None
    if options.get("release"):  # what gpusort.distributed keeps goes; the next call makes it again
        gpusort.distributed.release()
    try:
        keys = torch.from_numpy(_shard(case, rank, world)).to(device)
        if options.get("bad_rank") == rank:
            keys = keys.reshape(1, -1)  # 2-D: refused on this rank
        if options.get("other_dtype_rank") == rank:
            keys = keys.to(torch.float64)
        offset = sum(_shard(case, r, world).shape[0] for r in range(rank))
        positions = torch.arange(offset, offset + keys.numel(), dtype=torch.int64, device=device)
        values = torch.stack([positions, -positions], 1)  # a 2-D payload
        if options.get("list_values_rank") == rank:
            values = values.tolist()  # not a tensor: refused on this rank
        before = _bytes(keys), _bytes(values)
        out = gpusort.distributed.sort(keys, values, descending=options.get("descending", False),
                                       stable=True, nans=options.get("nans", "last"),
                                       partition_first=options.get("partition_first", False),
                                       overwrite_input=options.get("overwrite_input", False))
        return {"keys": out.keys.cpu().numpy(), "values": out.values.cpu().numpy(),
                "counts": out.counts.cpu().numpy(),
                "native": gpusort.distributed._last_times is not None,
                "input_kept": (_bytes(keys), _bytes(values)) == before,
                "input_rows_kept": _rows_kept(_shard(case, rank, world), keys.cpu().numpy(),
                                              values[:, 0].cpu().numpy() - offset,
                                              values[:, 1].cpu().numpy() + offset)}
    except Exception as error:  # every rank reports what it raised
        return {"error": (type(error).__name__, str(error), traceback.format_exc())}


def _rows_kept(original, keys, positions, negated=None):
    """Whether a shard the sort may have reordered (overwrite_input) still holds its rows:
    positions a permutation of 0 .. n - 1, each key the one first at its position, and
    negated (a second value column, offset back, if any) beside it."""
    return (np.array_equal(np.sort(positions), np.arange(original.shape[0]))
            and (negated is None or np.array_equal(negated, -positions))
            and keys.view(np.uint8).tobytes() == original[positions].view(np.uint8).tobytes())


def _worker(rank, world, backend, init, folder, calls, environment):
    """One process of the group: every call in turn, the results in folder/rank<r>.pkl."""
    results = []
    os.environ.update(environment)
    try:
        # A collective that waits longer fails instead of hanging the test.
        dist.init_process_group(backend, init_method=init, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
        device = "cpu"
        if backend == "nccl":
            torch.cuda.set_device(rank)
            device = f"cuda:{rank}"
        results = [_one_call(rank, world, device, case, options) for case, options in calls]
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        with open(os.path.join(folder, f"rank{rank}.pkl"), "wb") as f:
            pickle.dump(results, f)


def _run(folder, world, calls, backend="gloo", environment=None):
    """Each rank's results of the calls (a list per rank), the ranks started as
    torch.multiprocessing starts them and the group made through a file store."""
    mp.spawn(_worker, args=(world, backend, f"file://{folder / 'store'}", str(folder), calls,
                            environment or {}), nprocs=world)
    results = []
    for rank in range(world):
        with open(folder / f"rank{rank}.pkl", "rb") as f:
            results.append(pickle.load(f))
    return [[ranks[i] for ranks in results] for i in range(len(calls))]


def _stable_reference(keys, descending, nans):
    """The stable order: order_key's codes, flipped for descending, NaNs placed as asked."""
    code = order_key(keys).astype(np.uint64)
    if descending:
        code = ~code
    if keys.dtype.kind == "f":
        nan = np.isnan(keys)
        return np.lexsort((np.where(nan, 0, code), nan if nans == "last" else ~nan))
    return np.argsort(code, kind="stable")


def _native_built():
    """Whether this gpusort has gpusort::dist's module (built with NCCL)."""
    from gpusort._extension import dist_module

    return dist_module() is not None


# NCCL through gpusort::dist (native) and through the group's collectives.
BACKENDS = ["gloo"] + (["nccl", "nccl collectives"] if torch.cuda.is_available() else [])
CALLS = [
    ("int32", {}), ("int32", {"descending": True}), ("equal", {}),
    ("floats", {}), ("floats", {"descending": True, "nans": "first"}), ("float64 few", {}),
    ("float16", {"descending": True}), ("int8", {}), ("empty", {}), ("int32", {"release": True}),
    # gpusort::dist's exchange-first plan where it sorts (the same result; elsewhere ignored).
    ("int32", {"partition_first": True}),
    ("floats", {"descending": True, "nans": "first", "partition_first": True}),
    ("equal", {"partition_first": True}),
    # The shards sorted in place rather than copies where gpusort::dist sorts (elsewhere kept).
    ("int32", {"overwrite_input": True}),
    ("floats", {"descending": True, "nans": "first", "overwrite_input": True}),
    ("int32", {"partition_first": True, "overwrite_input": True}),
]


def _check_input(result, options, rank, world, case):
    """The caller's shard after a call: as it was, or with overwrite_input where gpusort::dist
    sorted it in place, its rows in another order (rank 0's 3,000 keys reordered: no copy
    made). partition_first on 2 ranks or more only reads it."""
    reads_only = options.get("partition_first") and world >= 2
    if options.get("overwrite_input") and result["native"] and not reads_only:
        assert result["input_rows_kept"], (case, options, rank)
        if rank == 0:
            assert not result["input_kept"], (case, options, rank)
    else:
        assert result["input_kept"], (case, options, rank)  # the caller's shard as it was


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_the_ranks_hold_the_global_stable_order(tmp_path, world, backend):
    if backend.startswith("nccl") and torch.cuda.device_count() < world:
        pytest.skip(f"needs {world} GPUs")
    if backend == "nccl" and not _native_built():
        pytest.skip("gpusort was built without gpusort::dist (NCCL)")
    environment = {"GPUSORT_DISTRIBUTED_NATIVE": "0"} if backend == "nccl collectives" else {}
    runs = _run(tmp_path, world, CALLS, backend.split()[0], environment)
    for (case, options), results in zip(CALLS, runs):
        for rank, result in enumerate(results):
            assert "error" not in result, (case, rank, result.get("error"))
            assert result["native"] == (backend == "nccl"), (case, rank)
            _check_input(result, options, rank, world, case)
        shards = [_shard(case, r, world) for r in range(world)]
        everything = np.concatenate(shards)
        order = _stable_reference(everything, options.get("descending", False),
                                  options.get("nans", "last"))
        keys = np.concatenate([r["keys"] for r in results])
        values = np.concatenate([r["values"] for r in results])
        assert keys.view(np.uint8).tobytes() == everything[order].view(np.uint8).tobytes(), case
        assert np.array_equal(values[:, 0], order) and np.array_equal(values[:, 1], -order), case
        counts = [r["keys"].shape[0] for r in results]
        for result in results:
            assert result["counts"].tolist() == counts, case
        if case in ("int32", "equal"):  # regular samples, ties cut by position: near even
            assert max(counts) <= 1.5 * everything.shape[0] / world + 64 * world, (case, counts)


def test_a_wrong_call_raises_on_every_rank_and_none_hangs(tmp_path):
    """A rank with a 2-D shard raises its own error and the others one naming it; a rank
    with another dtype makes every rank raise. The group still sorts afterwards."""
    calls = [("int32", {"bad_rank": 1}), ("int32", {"other_dtype_rank": 0}),
             ("int32", {"list_values_rank": 2}), ("int32", {})]
    wrong_shape, other_dtype, list_values, fine = _run(tmp_path, 3, calls)
    for rank, result in enumerate(wrong_shape):
        kind, message, _ = result["error"]
        expected = "1-D" if rank == 1 else "rank 1 refused"
        assert kind == "ValueError" and expected in message, (rank, message)
    for rank, result in enumerate(other_dtype):
        kind, message, _ = result["error"]
        assert kind == "ValueError" and "disagree" in message, (rank, message)
    for rank, result in enumerate(list_values):
        kind, message, _ = result["error"]
        expected = ("TypeError", "values: must be a torch.Tensor") if rank == 2 else ("ValueError", "rank 2 refused")
        assert kind == expected[0] and expected[1] in message, (rank, message)
    assert all("error" not in result for result in fine)


@pytest.mark.parametrize("case,options", CALLS)
@pytest.mark.parametrize("shards", [1, 2, 3])
def test_a_list_of_shards_in_one_process(shards, case, options):
    """gpusort.distributed.sort([t0, t1, ...]) without a group: on the host here, and on one
    GPU a shard where there are enough (through gpusort::dist where the package has it)."""
    import gpusort.distributed

    devices = ([f"cuda:{i}" for i in range(shards)]
               if torch.cuda.is_available() and torch.cuda.device_count() >= shards else ["cpu"] * shards)
    arrays = [_shard(case, r, shards) for r in range(shards)]
    offsets = np.cumsum([0] + [a.shape[0] for a in arrays])
    keys = [torch.from_numpy(a).to(d) for a, d in zip(arrays, devices)]
    values = [torch.arange(offsets[r], offsets[r + 1], dtype=torch.int64, device=d)
              for r, d in enumerate(devices)]
    gpusort.distributed._last_times = None
    before = [k.cpu().numpy().tobytes() for k in keys]
    out = gpusort.distributed.sort(keys, values, descending=options.get("descending", False),
                                   stable=True, nans=options.get("nans", "last"),
                                   partition_first=options.get("partition_first", False),
                                   overwrite_input=options.get("overwrite_input", False))
    # Shards on distinct GPUs go to gpusort::dist (one thread a GPU) where it is built.
    native = devices[0] != "cpu" and _native_built()
    assert (gpusort.distributed._last_times is not None) == native
    if options.get("overwrite_input") and native:  # reordered in place, every row kept
        for r, (shard, value) in enumerate(zip(keys, values)):
            assert _rows_kept(arrays[r], shard.cpu().numpy(), value.cpu().numpy() - offsets[r]), r
    else:
        assert [k.cpu().numpy().tobytes() for k in keys] == before  # the caller's shards as they were
    everything = np.concatenate(arrays)
    order = _stable_reference(everything, options.get("descending", False), options.get("nans", "last"))
    for shard, device in zip(out.keys, devices):
        assert str(shard.device) == device
    got = np.concatenate([k.cpu().numpy() for k in out.keys])
    assert got.view(np.uint8).tobytes() == everything[order].view(np.uint8).tobytes()
    assert np.array_equal(np.concatenate([v.cpu().numpy() for v in out.values]), order)
    assert out.counts.tolist() == [k.shape[0] for k in out.keys]


def test_a_list_of_shards_refuses_what_does_not_match():
    import gpusort.distributed

    with pytest.raises(ValueError, match="empty list"):
        gpusort.distributed.sort([])
    with pytest.raises(TypeError, match="same dtype"):
        gpusort.distributed.sort([torch.zeros(3, dtype=torch.int32), torch.zeros(3, dtype=torch.int64)])
    with pytest.raises(ValueError, match="shard 1: keys: must be 1-D"):
        gpusort.distributed.sort([torch.zeros(3), torch.zeros(2, 2)])
    with pytest.raises(ValueError, match="one tensor per shard"):
        gpusort.distributed.sort([torch.zeros(3)], [torch.zeros(3), torch.zeros(3)])


@pytest.mark.parametrize("layout", ["values are the keys", "rows off their alignment"])
def test_overwrite_input_copies_what_it_cannot_sort_in_place(layout):
    """overwrite_input=True with values that are the keys' own memory, or 16-byte rows 8 bytes
    off a 16-byte boundary: gpusort::dist (where it sorts: one shard on a GPU) gets copies of
    both, the result is the stable sort all the same, and the caller's tensors stay as they
    were."""
    import gpusort.distributed

    device = "cuda:0" if torch.cuda.is_available() else "cpu"
    rng = np.random.default_rng(5)
    n = 4097
    if layout == "values are the keys":
        keys = torch.from_numpy(random_keys("int64", n, rng)).to(device)
        values = keys
    else:
        keys = torch.from_numpy(random_keys("int32", n, rng)).to(device)
        values = torch.empty(2 * n + 1, dtype=torch.int64, device=device)[1:].view(n, 2)
        positions = torch.arange(n, dtype=torch.int64, device=device)
        values.copy_(torch.stack([positions, -positions], 1))
    before_keys, before_values = keys.cpu().numpy().copy(), values.cpu().numpy().copy()
    out = gpusort.distributed.sort([keys], [values], stable=True, overwrite_input=True)
    order = np.argsort(before_keys, kind="stable")
    assert np.array_equal(out.keys[0].cpu().numpy(), before_keys[order])
    assert np.array_equal(out.values[0].cpu().numpy(), before_values[order])
    assert np.array_equal(keys.cpu().numpy(), before_keys)
    assert np.array_equal(values.cpu().numpy(), before_values)
