"""Operations built on the sort (issue 73): unique, searchsorted and bucketize, lexsort. Each
sorts with gpusort and does the rest with the caller's own library, on its device and current
stream (torch in, torch out; CuPy on the array's device; NumPy on the host)."""

import contextlib
import operator

from ._arrays import namespace_of


class _Lib:
    """The few calls the operations need, in the words of the array's own library."""

    def __init__(self, x, argument):
        xp = namespace_of(x, argument)
        if xp.name not in ("torch", "cupy", "numpy"):
            raise TypeError(f"{argument}: expected a PyTorch tensor or a CuPy or NumPy array, "
                            f"got {type(x).__name__}")
        self.name = xp.name
        self.m = xp.torch if xp.name == "torch" else xp.module
        self.device = x.device if xp.name == "cupy" else contextlib.nullcontext()

    def dtype(self, name):
        return getattr(self.m, name)

    def is_float(self, x):
        return x.dtype.is_floating_point if self.name == "torch" else x.dtype.kind == "f"

    def is_integer(self, x):
        if self.name == "torch":
            return not x.dtype.is_floating_point and not x.dtype.is_complex
        return x.dtype.kind in "iub"

    def cat(self, arrays):
        return self.m.cat(arrays) if self.name == "torch" else self.m.concatenate(arrays)

    def full(self, like, n, value, dtype):
        if self.name == "torch":
            return self.m.full((n,), value, dtype=self.dtype(dtype), device=like.device)
        return self.m.full((n,), value, dtype=dtype)

    def empty(self, like, n, dtype):
        if self.name == "torch":
            return self.m.empty((n,), dtype=self.dtype(dtype), device=like.device)
        return self.m.empty((n,), dtype=dtype)

    def arange(self, like, n):
        if self.name == "torch":
            return self.m.arange(n, dtype=self.m.int64, device=like.device)
        return self.m.arange(n, dtype="int64")

    def nonzero(self, mask):
        return mask.nonzero()[0] if self.name != "torch" else mask.nonzero().reshape(-1)

    def cumsum(self, x, dtype):
        return self.m.cumsum(x, 0, dtype=self.dtype(dtype)) if self.name == "torch" else x.cumsum(dtype=dtype)

    def copy(self, x):
        return x.clone() if self.name == "torch" else x.copy()

    def astype(self, x, dtype):
        return x.to(self.dtype(dtype)) if self.name == "torch" else x.astype(dtype)

    def take_along(self, x, indices, axis):
        """x's entries at indices along axis; 1-D arrays take int32 indices too (torch's
        gather takes int64 alone, its index_select both)."""
        if x.ndim == 1:
            return self.m.index_select(x, 0, indices) if self.name == "torch" else x[indices]
        if self.name == "torch":
            return self.m.gather(x, axis, indices)
        return self.m.take_along_axis(x, indices, axis)


_INT_OF_WIDTH = {2: "int16", 4: "int32", 8: "int64"}


def _bits(lib, x):
    """Float keys as the signed integers of their bits (a view). Comparisons and arithmetic
    on these are exact where CuPy's float32 kernels flush subnormals to zero (-ftz=true):
    there 1e-45 == 0.0 and 1e-45 + 0.0 is 0.0."""
    if lib.name == "torch":  # bits carry no gradient, and view(dtype) wants none
        return x.detach().view(lib.dtype(_INT_OF_WIDTH[x.element_size()]))
    return x.view(lib.dtype(_INT_OF_WIDTH[x.dtype.itemsize]))


def _plus_zero(lib, x):
    """Float keys with -0.0 made +0.0, which it equals (gpusort's order puts it first): ties
    of the two then keep their input order, as NumPy's do. On the bits: a float sum would
    flush subnormals in CuPy."""
    if not lib.is_float(x):
        return x
    bits = _bits(lib, x)
    negative_zero = bits == lib.m.iinfo(bits.dtype).min
    return lib.m.where(negative_zero, lib.m.zeros_like(bits), bits).view(x.dtype)


def _float_order_codes(lib, key, descending):
    """Signed integers of a float key's width in the key's order, for lexsort: -0.0 and +0.0
    one code, NaNs one code that sorts after every number in the key's direction. As integers
    the keys pack with others into fewer sorts and take the stable radix sort (a stable sort
    of floats takes a merge sort). On the bits: exact where CuPy flushes subnormals."""
    bits = _bits(lib, _plus_zero(lib, key))
    info = lib.m.iinfo(bits.dtype)
    # Negative floats order backwards as integers: flipping all but the sign bit turns them.
    flipped = bits ^ info.max
    codes = lib.m.where(bits < 0, flipped, bits)
    nan_code = lib.m.full_like(codes, info.min if descending else info.max)
    return lib.m.where(lib.m.isnan(key), nan_code, codes)


def _neighbours_differ(lib, rows, equal_nan):
    """For rows sorted by gpusort (n x columns, n > 1): whether each row but the first differs
    from the one before, compared on the keys' bits (exact, even where CuPy flushes
    subnormals; -0.0 is already +0.0). NaNs with equal_nan are one key whatever their bits,
    else each is a key of its own, as torch's are."""
    if not lib.is_float(rows):
        return (rows[1:] != rows[:-1]).any(1)
    bits = _bits(lib, rows)
    differ = bits[1:] != bits[:-1]
    both_nan = lib.m.isnan(rows[1:]) & lib.m.isnan(rows[:-1])
    differ = (differ & ~both_nan) if equal_nan else (differ | both_nan)
    return differ.any(1)


def _flags(x, argument):
    """A bool argument (NumPy's and torch's flags are plain bools)."""
    if not isinstance(x, bool):
        raise TypeError(f"{argument}: must be a bool, got {type(x).__name__}")
    return x


def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None, *,
           axis=None, return_index=False, equal_nan=None):
    """The distinct keys of x in ascending order, like torch.unique and numpy.unique: of x
    flattened (dim=None), or the distinct slices along dim (axis=, NumPy's name, is the same
    argument), in lexicographic order. With return_index, return_inverse or return_counts: a
    tuple (unique, [index], [inverse], [counts]) in NumPy's order: index (int64) the first
    position of each (in x.flatten(), or along dim), inverse (int64, x's shape; along dim: one
    per slice) where each key or slice of x is in unique, counts (int64) how often each occurs.
    NaNs: one entry for all of them with equal_nan=True, NumPy's default, else one per NaN,
    torch's (equal_nan=None: the array's library's). -0.0 and +0.0 are one key, +0.0.
    sorted=False is accepted; the keys come sorted. One stable sort of x with gpusort (of the
    slices: lexsort), the rest in the array's library."""
    from . import sort, sort_

    lib = _Lib(x, "x")
    for name, flag in (("sorted", sorted), ("return_inverse", return_inverse),
                       ("return_counts", return_counts), ("return_index", return_index)):
        _flags(flag, name)
    if dim is not None and axis is not None:
        raise TypeError("dim and axis are one argument (torch's name and NumPy's): give one of them")
    dim = axis if dim is None else dim
    if equal_nan is None:
        equal_nan = lib.name != "torch"
    with lib.device:
        if dim is None and not (return_index or return_inverse):
            found = _unique_on_gpu(lib, _plus_zero(lib, x.reshape(-1)), equal_nan)
            if found is not None:
                return found if return_counts else found[0]
        if dim is None:
            keys = _plus_zero(lib, x.reshape(-1))
            if return_index or return_inverse:
                # The first position of each key (return_index) needs equal keys in input
                # order; the inverse alone does not, and a sort free to be unstable takes the
                # radix sort for float keys too. A stable sort of floats goes by their integer
                # order codes (the radix sort again), the keys gathered after.
                if return_index and lib.is_float(keys):
                    _, order = sort(_float_order_codes(lib, keys, False), stable=True)
                    values = keys[order]
                else:
                    values, order = sort(keys, stable=return_index)
            else:  # the keys alone: a sort of keys moves half the bytes of one with indices
                values = sort_(keys if lib.is_float(keys) else lib.copy(keys))  # (a new array)
            sorted_rows = values.reshape(-1, 1)
        else:
            if x.ndim == 0:
                raise ValueError("dim: a 0-d array has no dimension")
            dim = operator.index(dim) % x.ndim
            rows = _plus_zero(lib, _moved_to_front(lib, x, dim).reshape(x.shape[dim], -1))
            columns = [rows[:, c] for c in range(rows.shape[1])]
            order = lexsort(columns[::-1]) if columns else lib.arange(rows, rows.shape[0])
            sorted_rows = rows[order]
        n = sorted_rows.shape[0]
        starts = lib.full(sorted_rows, n, True, "bool")
        if n > 1:
            starts[1:] = _neighbours_differ(lib, sorted_rows, equal_nan)
        first = lib.nonzero(starts)
        if dim is None:
            results = [values[first]]
        else:
            kept = sorted_rows[first].reshape((first.shape[0],) + tuple(_moved_to_front(lib, x, dim).shape[1:]))
            results = [_moved_back(lib, kept, dim)]
        if return_index:
            results.append(order[first])
        if return_inverse:
            inverse = lib.empty(sorted_rows, n, "int64")
            inverse[order] = lib.cumsum(starts, "int64") - 1
            results.append(inverse.reshape(x.shape) if dim is None else inverse)
        if return_counts:
            results.append(lib.m.diff(lib.cat([first, lib.full(first, 1, n, "int64")])))
    return results[0] if len(results) == 1 else tuple(results)


def _unique_on_gpu(lib, keys, equal_nan):
    """(keys, counts) of a 1-D array on a GPU by the library's unique in one call, or None
    where it does not take the array. It counts every NaN as one key; without equal_nan each
    is a key of its own (torch's), so the NaN entry is spread out again."""
    from . import _core

    if lib.name == "torch":
        keys = keys.detach()  # distinct keys carry no gradient (torch.unique's neither)
    found = _core.unique_counts(keys)
    if found is None:
        return None
    values, counts = found
    if not equal_nan and lib.is_float(values) and values.shape[0] > 0 and bool(lib.m.isnan(values[-1])):
        nans = int(counts[-1])
        values = lib.cat([values[:-1], values[-1:].repeat(nans)])
        counts = lib.cat([counts[:-1], lib.full(counts, nans, 1, "int64")])
    return values, counts


def _moved_to_front(lib, x, dim):
    return x.movedim(dim, 0) if lib.name == "torch" else lib.m.moveaxis(x, dim, 0)


def _moved_back(lib, x, dim):
    return x.movedim(0, dim) if lib.name == "torch" else lib.m.moveaxis(x, 0, dim)


# Queries are sorted first (with gpusort) from this many on a GPU: the binary searches of
# neighbouring queries then share their paths through the sequence, in cache.
_SORTED_QUERIES_FROM = 1 << 16


def searchsorted(sorted_sequence, values, side=None, sorter=None, *, right=False, out_int32=False):
    """Where values would go in the sorted 1-D sequence to keep it sorted, like
    numpy.searchsorted and torch.searchsorted: side="left" (or right=False), the first such
    place; side="right" (or right=True), the last. sorter: int indices that sort the sequence
    (NumPy's). int64 results of values' shape (out_int32=True: int32). Many queries on a GPU
    are sorted first with gpusort, then looked up by the array's library in that order. A
    sequence of several dims (torch's batched rows) goes to torch.searchsorted as it is."""
    from . import sort

    lib = _Lib(sorted_sequence, "sorted_sequence")
    if _Lib(values, "values").name != lib.name:
        raise TypeError("values: must come from the same library as sorted_sequence")
    if side is None:
        side = "right" if right else "left"
    elif side not in ("left", "right") or (right and side == "left"):
        raise ValueError(f"side: must be 'left' or 'right' (and 'right' with right=True), got {side!r}")
    index_dtype = "int32" if _flags(out_int32, "out_int32") else "int64"
    with lib.device:
        if sorter is not None:
            sorted_sequence = sorted_sequence[sorter]
        if sorted_sequence.ndim != 1:
            if lib.name != "torch":
                raise ValueError("sorted_sequence: must be 1-D")
            return lib.m.searchsorted(sorted_sequence, values, side=side, out_int32=out_int32)
        flat = values.reshape(-1)
        on_device = lib.name == "cupy" or (lib.name == "torch" and flat.is_cuda)
        if on_device and flat.shape[0] >= _SORTED_QUERIES_FROM:
            queries, order = sort(flat)
            at = lib.m.searchsorted(sorted_sequence, queries, side=side)
            places = lib.empty(flat, flat.shape[0], "int64")
            places[order] = lib.astype(at, "int64")
        else:
            places = lib.m.searchsorted(sorted_sequence, flat, side=side)
        return lib.astype(places, index_dtype).reshape(values.shape)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each key of input between the sorted 1-D boundaries, like
    torch.bucketize: right=False, the i with boundaries[i-1] < x <= boundaries[i]; right=True,
    boundaries[i-1] <= x < boundaries[i]. It is searchsorted(boundaries, input, side)."""
    return searchsorted(boundaries, input, side="right" if right else "left", out_int32=out_int32)


def _key_range(key):
    """(lowest, highest) of an integer key as Python ints (a wait for the device)."""
    return int(key.min().item()), int(key.max().item())


def _as_int64_bits(value):
    """The int64 with the low 64 bits of the Python int value (two's complement)."""
    return ((value + (1 << 63)) % (1 << 64)) - (1 << 63)


def _lexsort_ties_after(lib, passes, narrow):
    """One row by several passes (most significant first): the first pass sorted with its
    positions, then only the keys tied in it (runs of equal codes) sorted by the other passes,
    least significant first, and last by their run, each stable. Keys that tie rarely (three
    random int32 keys: two passes) then cost one sort instead of one a pass."""
    from . import argsort, sort

    index = "int32" if narrow else "int64"
    first, down = passes[0]
    ranked, order = sort(first, 0, descending=down, stable=True, indices_dtype=index)
    n = ranked.shape[0]
    if n < 2:
        return order
    equal = ranked[1:] == ranked[:-1]
    tied = lib.full(ranked, n, False, "bool")
    tied[1:] = equal
    tied[:-1] |= equal
    where = lib.nonzero(tied)
    if where.shape[0] == 0:
        return order
    # Runs numbered in the order of the first pass: a run's keys stay in its own places.
    starts = lib.full(ranked, n, True, "bool")
    starts[1:] = ~equal
    runs = lib.take_along(lib.cumsum(starts, index), where, 0)
    tied_order = lib.take_along(order, where, 0)
    within = None  # the tied keys' order so far, as positions among them
    for key, key_down in [*passes[1:][::-1], (runs, False)]:
        if key is not runs:
            key = lib.take_along(key, tied_order, 0)
        along = key if within is None else lib.take_along(key, within, 0)
        step = argsort(along, 0, descending=key_down, stable=True, indices_dtype=index)
        within = step if within is None else lib.take_along(within, step, 0)
    order[where] = lib.take_along(tied_order, within, 0)
    return order


def _packed_groups(lib, keys, descending):
    """The keys in sort passes, most significant first: integer keys whose ranges fit 64 bits
    together share one int64 code (each key's offset from its lowest, or its highest when
    descending, in as many bits as its range needs); others, and floats, alone. A constant
    integer key orders nothing and is left out. Each pass: (array, descending)."""
    passes, group, group_bits = [], [], 0

    def close():
        nonlocal group, group_bits
        if group:
            code = None
            shift = group_bits
            for i, (offsets, bits) in enumerate(group):
                shift -= bits
                # The first key centred on 0 so that a full 64-bit code stays in int64.
                part = (offsets - (1 << (bits - 1)) if i == 0 else offsets) << shift
                code = part if code is None else code + part
            passes.append((code, False))
        group, group_bits = [], 0

    for key, down in zip(keys, descending):
        if lib.is_integer(key) and _numel(lib, key) > 0:
            low, high = _key_range(key)
            bits = (high - low).bit_length()
            if bits == 0:
                continue
            if bits <= 32:
                wide = lib.astype(key, "int64")
                offsets = (_as_int64_bits(high) - wide) if down else (wide - _as_int64_bits(low))
                if group_bits + bits > 64:
                    close()
                group.append((offsets, bits))
                group_bits += bits
                continue
        close()
        passes.append((_plus_zero(lib, key), down))
    close()
    return passes


def _numel(lib, x):
    return x.numel() if lib.name == "torch" else x.size


def lexsort(keys, axis=-1, *, descending=False):
    """gpusort.lexsort (its documentation is there), once dim and axis are one."""
    from . import argsort

    keys = [keys[i] for i in range(len(keys))]
    if not keys:
        raise ValueError("keys: must hold at least one key")
    lib = _Lib(keys[0], "keys[0]")
    shape = tuple(keys[0].shape)
    for i, key in enumerate(keys):
        if _Lib(key, f"keys[{i}]").name != lib.name or tuple(key.shape) != shape:
            raise ValueError(f"keys[{i}]: every key must be an array of the same library and shape")
    if isinstance(descending, bool):
        descending = [descending] * len(keys)
    descending = [_flags(d, "descending") for d in descending]
    if len(descending) != len(keys):
        raise ValueError(f"descending: one per key ({len(keys)}), got {len(descending)}")
    if len(shape) == 0:
        raise ValueError("keys: must have at least one dimension")
    axis = operator.index(axis)
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis: out of range for {len(shape)}-D keys, got {axis}")
    with lib.device:
        # Most significant first: NumPy's last key. Floats go as their order codes.
        keys = [_float_order_codes(lib, k, d) if lib.is_float(k) else k
                for k, d in zip(keys, descending)]
        passes = _packed_groups(lib, keys[::-1], descending[::-1])
        if not passes:  # every key constant: the input order
            return argsort(lib.astype(keys[0], "int64") * 0, axis, stable=True)
        # One row of fewer than 2^31 keys: the passes carry int32 positions, which the sorts
        # move in half the bytes of int64 ones; the answer is int64, as NumPy's.
        narrow = len(shape) == 1 and shape[0] < 2**31
        if len(shape) == 1 and len(passes) > 1:
            order = _lexsort_ties_after(lib, passes, narrow)
            return lib.astype(order, "int64") if narrow else order
        order = None
        for key, down in reversed(passes):  # least significant first, each stable
            along = key if order is None else lib.take_along(key, order, axis)
            step = argsort(along, axis, descending=down, stable=True,
                           indices_dtype="int32" if narrow else "int64")
            order = step if order is None else lib.take_along(order, step, axis)
        return lib.astype(order, "int64") if narrow else order
