"""A sort of keys spread over the ranks of a torch.distributed process group (issue 74): each
rank gives its shard and gets back its range of the global order.

    import torch.distributed as dist, gpusort.distributed
    dist.init_process_group("nccl")          # torchrun, mpirun or srun start the ranks
    keys, values, counts = gpusort.distributed.sort(shard, values=payload)

Under an NCCL group, CUDA keys (with values of 4, 8 or 16 bytes a row, or none) go to the C++
library's gpusort::dist::sort (the module _gpusort_dist, where the package was built with
NCCL): a communicator of gpusort's own per group and GPU, its id sent through the group once,
then kept with the device memory the sort maps (release() gives both back). A list of CUDA
shards on distinct GPUs of this process goes to it too, one thread a GPU.

Elsewhere it is a sample sort over the group's own collectives, so it runs wherever the group
does: Gloo between CPU processes, or NCCL without _gpusort_dist. Each rank sorts its shard
with gpusort, the ranks agree on splitters from regular samples, exchange their buckets with
one all_to_all, and each sorts what it received. Keys are ordered by an int64 code of the
order asked for (direction, NaN placement), ties by rank and position, so that stable=True
gives the order of the shards concatenated in rank order."""

import math
import os
import zlib
from collections import namedtuple

from ._arrays import _TYPESTR

DistSortResult = namedtuple("DistSortResult", ["keys", "values", "counts"])

# Samples a rank contributes per rank of the group: more give splitters closer to even shares.
_SAMPLES_PER_RANK = 64
_KEY_DTYPES = ("int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
_NANS = ("last", "first")


def _order_codes(torch, keys, descending, nans):
    """int64 codes whose ascending order is the order asked for: integers as they are (bitwise
    not when descending, which reverses without overflow); floats by their bits made
    two's-complement ordered (-0.0 before +0.0), every NaN one code, after (or before) every
    number in both directions."""
    if keys.dtype.is_floating_point:
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[keys.element_size()]
        raw = keys.view(bits)
        magnitude = torch.iinfo(bits).max
        codes = torch.where(raw < 0, raw ^ magnitude, raw).to(torch.int64)
        if descending:
            codes = ~codes
        extreme = torch.iinfo(torch.int64).max if nans == "last" else torch.iinfo(torch.int64).min
        return torch.where(torch.isnan(keys), torch.full_like(codes, extreme), codes)
    codes = keys.to(torch.int64)
    return ~codes if descending else codes


def _agree(torch, dist, group, error, signature):
    """Every rank's verdict on its arguments, and the call's signature, shared before any key
    moves: a rank whose arguments are wrong raises its own error, the others an error naming
    it, and none is left waiting in a collective. So are calls whose signatures differ. First
    one all_gather of (failed, a hash of the signature); only where that finds something wrong
    do the ranks share their errors and signatures themselves, to name them."""
    world = dist.get_world_size(group)
    nccl = "nccl" in str(dist.get_backend(group))
    device = torch.device("cuda", torch.cuda.current_device()) if nccl else torch.device("cpu")
    fine = [0, zlib.crc32(repr(signature).encode())]
    mine = torch.tensor([int(error is not None), fine[1]], dtype=torch.int64, device=device)
    every = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(every, mine, group=group)
    if all(row == fine for row in torch.stack(every).tolist()):
        return
    verdicts = [None] * world
    dist.all_gather_object(verdicts, (None if error is None else (type(error).__name__, str(error)), signature),
                           group=group)
    if error is not None:
        raise error
    for rank, (wrong, _) in enumerate(verdicts):
        if wrong is not None:
            raise ValueError(f"rank {rank} refused the sort: {wrong[0]}: {wrong[1]}")
    for rank, (_, theirs) in enumerate(verdicts):
        if theirs != signature:
            raise ValueError(f"the ranks disagree on the call: rank {rank} asked for {theirs}, "
                             f"this rank for {signature}")


# gpusort::dist's communicators, one per group and GPU:
# {(id(group), rank, world, device): (group, comm)}.
_COMMUNICATORS = {}
# The phase times of this process's last native call (scripts/dist-bench.py prints them).
_last_times = None


def _row_bytes(values):
    return values.element_size() * math.prod(values.shape[1:])


def _native_module(torch, shards):
    """_gpusort_dist where gpusort::dist sorts these (keys, values) shards: CUDA keys, values
    of 4, 8 or 16 bytes a row or none, and the module built (the package built with NCCL);
    else None. GPUSORT_DISTRIBUTED_NATIVE=0 takes the collectives instead."""
    if os.environ.get("GPUSORT_DISTRIBUTED_NATIVE") == "0":
        return None
    for keys, values in shards:
        if not isinstance(keys, torch.Tensor) or not keys.is_cuda:
            return None
        if values is not None and (not isinstance(values, torch.Tensor) or _row_bytes(values) not in (4, 8, 16)):
            return None
    from ._extension import dist_module

    return dist_module()


def _handles(keys, values):
    """The module's handles of a shard's keys and values (or None)."""
    device = keys.device.index
    key_handle = (keys.data_ptr(), _TYPESTR[str(keys.dtype)], keys.numel(), device, keys)
    if values is None:
        return key_handle, None
    return key_handle, (values.data_ptr(), "|V%d" % _row_bytes(values), values.shape[0], device, values)


def _from_bytes(torch, buffer, count, like):
    """A tensor of `count` rows like `like` (its dtype, device and row shape) over the bytes of a
    sorted shard's buffer, which it keeps alive."""
    shape = (count,) + tuple(like.shape[1:])
    if count == 0:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    return torch.as_tensor(buffer, device=like.device).view(like.dtype).reshape(shape)


def _communicator(dist, module, group, device):
    """This rank's gpusort::dist communicator for `group` on `device`, made at the group's first
    native call (every rank makes its own at once; rank 0's id reaches the others through the
    group) and kept. A default group made again after destroy_process_group() with another
    size or rank gets a new one (call release() after destroying a group to free the old)."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    key = (id(group), rank, world, device.index)
    if key in _COMMUNICATORS:
        return _COMMUNICATORS[key][1]
    box = [module.unique_id() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0 if group is None else dist.get_global_rank(group, 0),
                               group=group, device=device)
    comm = module.Communicator(box[0], rank, world, device.index)
    _COMMUNICATORS[key] = (group, comm)
    return comm


def release(group=None):
    """Destroys the communicators gpusort.distributed made for `group` (every group's, and
    those of lists of shards, with the default None) and gives back the device memory their
    sorts kept for the next call."""
    for key in [k for k, (g, _) in _COMMUNICATORS.items() if group is None or g is group]:
        del _COMMUNICATORS[key]
    if group is None:
        from ._extension import dist_module

        if dist_module() is not None:
            dist_module().release_shard_ranks()


def _copies_needed(module, partition_first, overwrite_input, world):
    """Whether gpusort::dist must sort copies of the shards to leave the caller's as they were:
    not under partition_first on 2 to max_partition_ranks ranks (it only reads them then), nor
    where the caller lets it reorder them (overwrite_input)."""
    reads_only = partition_first and 2 <= world <= module.max_partition_ranks
    return not (reads_only or overwrite_input)


def _bytes_of(tensor):
    """The [first, end) byte addresses of a contiguous tensor."""
    return tensor.data_ptr(), tensor.data_ptr() + tensor.numel() * tensor.element_size()


def _shard_for(torch, keys, values, copy):
    """What gpusort::dist gets of a shard's keys and values: the caller's tensors themselves
    where no copy is needed (copy False) and gpusort::dist takes them as they are (contiguous,
    each row aligned to its size, keys and values apart); else copies of both, so that the
    caller's keys and values never come apart row from row."""
    tensors = [keys] if values is None else [keys, values]
    as_they_are = not copy and all(t.is_contiguous() and t.data_ptr() % _row_bytes(t) == 0
                                   for t in tensors)
    if as_they_are and values is not None and keys.numel() and values.numel():
        (k0, k1), (v0, v1) = _bytes_of(keys), _bytes_of(values)
        as_they_are = k1 <= v0 or v1 <= k0
    if as_they_are:
        return keys, values
    copies = [t.clone(memory_format=torch.contiguous_format) for t in tensors]
    return copies[0], None if values is None else copies[1]


def _sort_native(torch, dist, module, group, keys, values, descending, stable, nans,
                 partition_first, overwrite_input):
    """gpusort::dist::sort of this rank's shard; it sorts in place, so on copies, except
    with partition_first, which only reads it, and with overwrite_input."""
    global _last_times
    comm = _communicator(dist, module, group, keys.device)
    copy = _copies_needed(module, partition_first, overwrite_input, dist.get_world_size(group))
    work, rows = _shard_for(torch, keys, values, copy)
    stream = torch.cuda.current_stream(keys.device).cuda_stream
    sorted_keys, sorted_values, count, _last_times, rank_sizes = comm.sort(
        *_handles(work, rows), descending, stable, nans, partition_first, stream)
    return DistSortResult(_from_bytes(torch, sorted_keys, count, keys),
                          None if values is None else _from_bytes(torch, sorted_values, count, values),
                          torch.tensor(rank_sizes, dtype=torch.int64, device=keys.device))


def _sort_list_native(torch, module, shards, descending, stable, nans, partition_first,
                      overwrite_input):
    """gpusort::dist::sort of shards on distinct GPUs of this process, one thread a GPU, on
    copies (it sorts in place), or on the shards themselves with partition_first or
    overwrite_input."""
    global _last_times
    copy = _copies_needed(module, partition_first, overwrite_input, len(shards))
    copies = [_shard_for(torch, k, v, copy) for k, v in shards]
    handles = [_handles(k, v) for k, v in copies]
    streams = [torch.cuda.current_stream(k.device).cuda_stream for k, _ in copies]
    results = module.sort_shards([h[0] for h in handles],
                                 None if shards[0][1] is None else [h[1] for h in handles],
                                 descending, stable, nans, partition_first, streams)
    _last_times = results[0][3]
    out_keys = [_from_bytes(torch, r[0], r[2], k) for r, (k, _) in zip(results, shards)]
    out_values = None if shards[0][1] is None else [
        _from_bytes(torch, r[1], r[2], v) for r, (_, v) in zip(results, shards)]
    return DistSortResult(out_keys, out_values, torch.tensor(results[0][4], dtype=torch.int64))


def _check(torch, keys, values, descending, stable, nans):
    if not isinstance(keys, torch.Tensor):
        raise TypeError(f"keys: must be a torch.Tensor, got {type(keys).__name__}")
    name = str(keys.dtype).removeprefix("torch.")
    if name not in _KEY_DTYPES:
        raise TypeError(f"keys: dtype must be one of {', '.join(_KEY_DTYPES)}, got {name}")
    if keys.dim() != 1:
        raise ValueError(f"keys: must be 1-D (a rank's shard), got {keys.dim()} dims")
    if values is not None:
        if not isinstance(values, torch.Tensor):
            raise TypeError(f"values: must be a torch.Tensor, got {type(values).__name__}")
        if values.shape[:1] != keys.shape or values.device != keys.device:
            raise ValueError("values: must have the keys' length in its first dim and be on their device")
    for argument, flag in (("descending", descending), ("stable", stable)):
        if not isinstance(flag, bool):
            raise TypeError(f"{argument}: must be a bool, got {type(flag).__name__}")
    if nans not in _NANS:
        raise ValueError(f"nans: must be 'last' or 'first', got {nans!r}")


def _samples(torch, codes, rank, world):
    """This rank's regular samples of its sorted codes: _SAMPLES_PER_RANK * world rows of
    (code, rank, position, shard size); an empty shard's rows are all 0 (no sample)."""
    n = codes.shape[0]
    count = _SAMPLES_PER_RANK * world
    samples = torch.zeros((count, 4), dtype=torch.int64, device=codes.device)
    if n > 0:
        at = (torch.arange(count, device=codes.device) * n) // count
        samples[:, 0] = codes[at]
        samples[:, 1] = rank
        samples[:, 2] = at
        samples[:, 3] = n
    return samples


def _splitters(torch, every, world):
    """world - 1 splitters (code, rank, position), a (world - 1, 3) int64 tensor in their
    total order, from every rank's samples. Every rank gives the same number of samples, each
    standing for shard size / samples keys: the splitters are the weighted quantiles, so that
    uneven shards still give near even ranges."""
    count = _SAMPLES_PER_RANK * world
    every = every[every[:, 3] > 0]
    if every.shape[0] == 0:
        return every[:, :3]
    for column in (2, 1, 0):  # least significant first, each stable: (code, rank, position)
        every = every[torch.sort(every[:, column], stable=True).indices]
    covered = torch.cumsum(every[:, 3].to(torch.float64) / count, 0)
    targets = torch.arange(1, world, device=every.device, dtype=torch.float64) * (covered[-1] / world)
    picks = torch.searchsorted(covered, targets).clamp(max=every.shape[0] - 1)
    return every[picks, :3]


def _bucket_bounds(torch, codes, splitters, rank, world):
    """The world + 1 bounds of the buckets of this rank's sorted codes: each splitter cuts
    before the keys that follow it in (code, rank, position) order. Without splitters (no
    rank has a key) every bucket is empty."""
    n = codes.shape[0]
    bounds = torch.zeros(world + 1, dtype=torch.int64, device=codes.device)
    bounds[-1] = n
    if splitters.shape[0] == 0 or n == 0:
        return bounds
    keys, ranks, positions = splitters[:, 0].contiguous(), splitters[:, 1], splitters[:, 2]
    left = torch.searchsorted(codes, keys, side="left")
    right = torch.searchsorted(codes, keys, side="right")
    cut = torch.where(ranks > rank, right, torch.where(ranks < rank, left, positions))
    bounds[1:-1] = cut.clamp(0, n)
    return bounds


def _sort_list(torch, local_sort, keys, values, descending, stable, nans, partition_first,
               overwrite_input):
    """The sort of a list of shards on several devices of this process: gpusort::dist on
    one thread a GPU where _native_module allows and the GPUs are distinct; else the same
    steps as over a group, the buckets moved between devices by the tensors' own copies (over
    NVLink between GPUs that have it)."""
    if values is not None and (not isinstance(values, (list, tuple)) or len(values) != len(keys)):
        raise ValueError("values: must be a list of one tensor per shard, or None")
    shards = []
    for i, shard in enumerate(keys):
        value = None if values is None else values[i]
        try:
            _check(torch, shard, value, descending, stable, nans)
        except (TypeError, ValueError) as error:
            raise type(error)(f"shard {i}: {error}") from None
        shards.append((shard, value))
    if len({shard.dtype for shard, _ in shards}) > 1:
        raise TypeError("keys: every shard must have the same dtype")
    if values is not None and len({(v.dtype, tuple(v.shape[1:])) for _, v in shards}) > 1:
        raise TypeError("values: every shard's values must have the same dtype and shape")
    native = _native_module(torch, shards)
    if native is not None and len({shard.device.index for shard, _ in shards}) == len(shards):
        return _sort_list_native(torch, native, shards, descending, stable, nans, partition_first,
                                 overwrite_input)
    world = len(shards)
    local = []
    for shard, value in shards:
        codes, order = local_sort(_order_codes(torch, shard, descending, nans), stable=True)
        local.append((codes, shard[order], None if value is None else value[order]))
    every = torch.cat([_samples(torch, codes, i, world).cpu() for i, (codes, _, _) in enumerate(local)])
    splitters = _splitters(torch, every, world)
    bounds = [_bucket_bounds(torch, codes, splitters.to(codes.device), i, world).tolist()
              for i, (codes, _, _) in enumerate(local)]
    out_keys, out_values = [], []
    for j, (shard, _) in enumerate(shards):
        def bucket(part):
            return torch.cat([local[i][part][bounds[i][j]:bounds[i][j + 1]].to(shard.device)
                              for i in range(world)])
        received = bucket(1)
        _, merge = local_sort(_order_codes(torch, received, descending, nans), stable=True)
        out_keys.append(received[merge])
        out_values.append(None if values is None else bucket(2)[merge])
    counts = torch.tensor([k.shape[0] for k in out_keys], dtype=torch.int64)
    return DistSortResult(out_keys, None if values is None else out_values, counts)


def sort(keys, values=None, *, descending=False, stable=False, nans="last", group=None,
         partition_first=False, overwrite_input=False):
    """Sorts the keys of every rank of `group` (torch.distributed's default group if None)
    together: each rank passes its shard, a 1-D tensor (on its GPU with NCCL, on the host with
    Gloo), and gets back DistSortResult(keys, values, counts): its range of the global order
    (rank 0 the first keys), the values that came with them (values: a tensor whose first dim
    is the keys', or None), and counts, an int64 tensor of how many keys every rank holds now.
    Every rank must call it with the same dtype, direction, stability, NaN placement and with
    values or without. Ranges are near even (regular samples), not exactly even.

    descending, stable and nans as for gpusort.sort (stable=True: equal keys in the order of
    the shards concatenated by rank). partition_first=True: where gpusort::dist sorts (CUDA
    tensors under NCCL, or a list of shards on distinct GPUs), its exchange-first plan
    (dist::options::partition_first, docs/distributed.md), which reads the shards instead of
    sorting copies of them; the same result, ranges even with high probability rather than
    within a bound. Elsewhere it changes nothing. Every rank must pass the same.
    overwrite_input=True: where gpusort::dist sorts, it may sort the caller's shard (and its
    values) in place instead of a copy, leaving them holding the same rows in another order
    (unseen by autograd); that saves the copy's time and a shard of device memory. Keys and
    values that overlap, are not contiguous or whose rows are not aligned to their size are
    copied as without it. Ranks may differ here. Errors are
    checked on every rank before any key moves: a rank with a wrong argument raises it, the
    others a ValueError naming that rank.

    keys may also be a list of shards on several devices of this process (values a list, or
    None), without a process group: the result's keys and values are then lists, shard i's
    range on shard i's device, and counts is on the host."""
    import torch

    from . import sort as local_sort

    if isinstance(keys, (list, tuple)):
        if not keys:
            raise ValueError("keys: an empty list of shards")
        return _sort_list(torch, local_sort, list(keys), values, descending, stable, nans,
                          bool(partition_first), bool(overwrite_input))
    import torch.distributed as dist

    rank = dist.get_rank(group)
    error = None
    try:
        _check(torch, keys, values, descending, stable, nans)
    except (TypeError, ValueError) as caught:
        error = caught
    native = None
    if error is None and dist.get_backend(group) == "nccl":
        native = _native_module(torch, [(keys, values)])
    # Read without trusting the arguments: a rank must reach the agreement whatever it got. The
    # path (native or not) is part of it, so that no rank waits in a collective the others skip.
    signature = (str(getattr(keys, "dtype", None)), descending, stable, nans,
                 None if values is None else (str(getattr(values, "dtype", None)),
                                              tuple(getattr(values, "shape", ())[1:])),
                 native is not None, bool(partition_first))
    _agree(torch, dist, group, error, signature)
    if native is not None:
        return _sort_native(torch, dist, native, group, keys, values, descending, stable, nans,
                            bool(partition_first), bool(overwrite_input))

    world = dist.get_world_size(group)
    codes = _order_codes(torch, keys, descending, nans)
    codes, order = local_sort(codes, stable=True)
    local_keys = keys[order]
    local_values = None if values is None else values[order]
    if world == 1:
        counts = torch.tensor([keys.shape[0]], dtype=torch.int64, device=keys.device)
        return DistSortResult(local_keys, local_values, counts)

    samples = _samples(torch, codes, rank, world)
    gathered = [torch.empty_like(samples) for _ in range(world)]
    dist.all_gather(gathered, samples, group=group)
    bounds = _bucket_bounds(torch, codes, _splitters(torch, torch.cat(gathered), world), rank, world)
    send_counts = (bounds[1:] - bounds[:-1]).to(torch.int64)
    receive_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(receive_counts, send_counts, group=group)
    sends, receives = send_counts.tolist(), receive_counts.tolist()

    def exchange(tensor):
        out = torch.empty((sum(receives),) + tuple(tensor.shape[1:]), dtype=tensor.dtype,
                          device=tensor.device)
        dist.all_to_all_single(out, tensor.contiguous(), receives, sends, group=group)
        return out

    received_keys = exchange(local_keys)
    received_values = None if values is None else exchange(local_values)
    # The runs arrive in rank order, each sorted: a stable sort of their codes (made again
    # here rather than sent) keeps ties in (rank, position) order.
    _, merge = local_sort(_order_codes(torch, received_keys, descending, nans), stable=True)
    counts = [torch.empty(1, dtype=torch.int64, device=keys.device) for _ in range(world)]
    dist.all_gather(counts, torch.tensor([sum(receives)], dtype=torch.int64, device=keys.device),
                    group=group)
    return DistSortResult(received_keys[merge],
                          None if received_values is None else received_values[merge],
                          torch.cat(counts))
