"""gpusort for Python: sorts of PyTorch, CuPy and NumPy arrays, in torch's words.

Device arrays are sorted where they are, on the caller's current stream, without copies of
the input beyond the output itself and without waiting for the device (sort_segmented
excepted: it checks the offsets first, which waits for the stream). Results come back as
the caller's array type. NumPy arrays (and CPU tensors) are sorted on the GPU when there is
one, else by the library's CPU backend.

    values, indices = gpusort.sort(x)                 # like torch.sort(x)
    gpusort.sort_(x, algorithm="bitonic")             # in place, no extra device memory
    values, indices = gpusort.topk(x, 1000)           # like torch.topk(x, 1000)

Order: ascending unless descending=True; floats in a total order: -0.0 before +0.0, NaNs
last ascending and first descending (as numpy.sort, and as torch.sort puts them).
"""

import os
from collections import namedtuple

from . import _arrays
from ._arrays import KEY_DTYPES



class _MissingExtension:
    """Stands for _gpusort where it cannot be imported, so that the package's pure-Python
    parts (gpusort.plot, which `gpusort plot` runs) still import; any sort raises the
    original ImportError."""

    def __init__(self, error):
        self._error = error

    def __getattr__(self, name):
        raise ImportError(f"gpusort's compiled module _gpusort is missing: {self._error}")


try:
    from . import _gpusort as _ext
except ImportError:
    try:  # a development build: the module sits in the CMake build folder
        import _gpusort as _ext
    except ImportError as _error:
        _ext = _MissingExtension(_error)

__all__ = [
    "sort",
    "argsort",
    "sort_",
    "sort_segmented",
    "topk",
    "approx_sort",
    "sort_file",
    "sort_records_file",
    "gpu_available",
    "ALGORITHMS",
    "KEY_DTYPES",
]

SortResult = namedtuple("SortResult", ["values", "indices"])
TopkResult = namedtuple("TopkResult", ["values", "indices"])
ApproxResult = namedtuple("ApproxResult", ["values", "offsets"])

ALGORITHMS = (
    "automatic",
    "bitonic",
    "cub_radix",
    "cub_merge",
    "thrust",
    "sample_sort",
    "sample_sort_random",
    "approx_refine",
    "adaptive_bitonic",
    "quicksort",
)
STABLE_ALGORITHMS = ("adaptive_bitonic", "cub_radix", "cub_merge")
ROW_ALGORITHMS = ("automatic", "bitonic", "cub_radix", "cub_merge")  # the batched sort's
# CUB's baselines are built for values of at most 4 bytes: their indices are int32, widened.
_NARROW_VALUE_ALGORITHMS = ("cub_radix", "cub_merge", "thrust")


def gpu_available():
    """Whether a CUDA device is there (else host arrays go to the CPU backend)."""
    return _ext.gpu_available()


# ---- argument checks: all of them run before any data moves --------------------------------


def _check_keys(xp, x, argument="x", contiguous=True):
    """TypeError for a key dtype the library lacks; ValueError for a strided array where
    the call works in place (contiguous=False: the caller reads a contiguous copy)."""
    dtype = xp.dtype_name(x)
    if dtype not in KEY_DTYPES:
        raise TypeError(
            f"{argument}: dtype {dtype} is not supported; keys must be one of "
            + ", ".join(KEY_DTYPES)
        )
    if contiguous and not xp.is_contiguous(x):
        raise ValueError(
            f"{argument}: must be contiguous (C order); make a contiguous copy first "
            "(torch: .contiguous(), NumPy/CuPy: ascontiguousarray)"
        )


def _rows_of(xp, x, dim):
    """(rows, row_len) of a sort along the last dimension."""
    shape = xp.shape(x)
    if len(shape) == 0:
        raise ValueError("x: a 0-d array has nothing to sort; give at least one dimension")
    if not isinstance(dim, int) or not -len(shape) <= dim < len(shape):
        raise ValueError(f"dim: {dim!r} is out of range for an array of {len(shape)} dimensions")
    if dim % len(shape) != len(shape) - 1:
        raise ValueError(
            f"dim: only the last dimension can be sorted (dim=-1), got dim={dim}; move the "
            "dimension last and make the array contiguous first"
        )
    row_len = shape[-1]
    rows = 1
    for extent in shape[:-1]:
        rows *= extent
    return rows, row_len


def _algorithm(algorithm, stable, rows=1, on_device=True, row_len=0):
    """The library's algorithm for this call, or ValueError naming `algorithm`."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm: unknown algorithm {algorithm!r}; one of " + ", ".join(ALGORITHMS))
    if rows > 1 and algorithm not in ROW_ALGORITHMS:
        raise ValueError(
            f"algorithm: {algorithm!r} does not sort rows; use one of " + ", ".join(ROW_ALGORITHMS)
        )
    if not stable:
        return algorithm
    if algorithm == "automatic":
        # Rows on a device: the batched sort is stable only through CUB's segmented sort (on
        # float codes). One row on a device: the library's stable plan (options.stable),
        # which keeps gpusort's float order and NaN placement; CUB's radix sort alone would
        # not (it ties -0.0 with +0.0 and puts negative NaNs first). On the host, rows are
        # sorted one by one.
        if on_device:
            return "cub_merge" if rows > 1 else "automatic"
        return "adaptive_bitonic"
    if algorithm not in STABLE_ALGORITHMS:
        raise ValueError(
            f"algorithm: {algorithm!r} is not stable; with stable=True use automatic, "
            + ", ".join(STABLE_ALGORITHMS)
        )
    return algorithm


def _host_arrays(xp, x, argument):
    """A NumPy view of a host array (no copy), and how to turn results back."""
    if xp.name == "numpy":
        return x, lambda a: a
    if xp.name == "torch":
        return xp.to_numpy(x), xp.from_numpy
    raise TypeError(f"{argument}: a host array must be a NumPy array or a CPU tensor")


def _same_place(xp, x, other_xp, other, argument):
    if other_xp.name != xp.name or other_xp.on_device(other) != xp.on_device(x):
        where = "device" if xp.on_device(x) else "host"
        raise TypeError(
            f"{argument}: must be a {xp.name} array on the same {where} as x, got "
            f"{type(other).__module__}.{type(other).__name__}"
            + (" in host memory" if not other_xp.on_device(other) else " in device memory")
        )


# ---- sorting ----------------------------------------------------------------------------


def _nans(nans):
    """The NaN placement, or ValueError naming `nans`."""
    if nans not in ("last", "first"):
        raise ValueError(f"nans: must be 'last' or 'first', got {nans!r}")
    return nans


def _sort_pairs(xp, keys, indices, rows, row_len, descending, algorithm, stable, nans,
                make_indices=False):
    """Sorts keys (and indices) in place, each of `rows` rows of row_len. make_indices (device
    arrays only): the sort writes each key's position in its row into indices, unread."""
    if rows * row_len == 0:
        return
    if xp.on_device(keys):
        stream = xp.stream(keys)
        _ext.sort_device(
            xp.handle(keys, stream),
            None if indices is None else xp.handle(indices, stream),
            rows,
            row_len,
            descending,
            algorithm,
            stream,
            lambda nbytes: xp.handle(xp.empty(keys, (nbytes,), "uint8"), stream),
            nans,
            stable,
            make_indices,
        )
    else:
        _ext.sort_host(keys, indices, rows, row_len, descending, algorithm, stable, nans)


def _row_indices(xp, like, rows, row_len, dtype):
    row = xp.arange(like, row_len, dtype)
    return row if rows == 1 else xp.tile_rows(row, rows)


def _index_dtype(algorithm, row_len):
    """The indices' type while sorting: int32 where they fit (4-byte values move half the
    bytes of 8-byte ones, and only there are CUB's sorts built), widened to int64 (as torch
    and NumPy give them) in one pass afterwards."""
    if row_len < 2**31:
        return "int32"
    if algorithm in _NARROW_VALUE_ALGORITHMS:
        raise ValueError(
            f"algorithm: {algorithm!r} takes 4-byte values, too small for indices of "
            f"{row_len} keys; use adaptive_bitonic"
        )
    return "int64"


def _indices_dtype(indices_dtype, row_len):
    """The indices' type the caller asked for, or ValueError naming `indices_dtype`."""
    if indices_dtype not in ("int64", "int32"):
        raise ValueError(f"indices_dtype: must be 'int64' or 'int32', got {indices_dtype!r}")
    if indices_dtype == "int32" and row_len >= 2**31:
        raise ValueError(f"indices_dtype: 'int32' cannot index rows of {row_len} keys")
    return indices_dtype


def sort(x, *, dim=-1, descending=False, stable=False, algorithm="automatic", nans="last",
         indices_dtype="int64"):
    """Sorted copy of x along its last dimension and the indices that sort it, like
    torch.sort: returns (values, indices), indices int64 (indices_dtype="int32": 4 bytes
    each, half the memory, for rows under 2^31 keys). 2-D (or more) input sorts every row.
    stable=True keeps equal keys in their input order. Float NaNs go after every number in
    both orders (nans="last", NumPy's order) or before them (nans="first"); torch.sort treats
    NaN as the largest key, which is nans="first" with descending=True."""
    nans = _nans(nans)
    xp = _arrays.namespace_of(x, "x")
    rows, row_len = _rows_of(xp, x, dim)
    _check_keys(xp, x)
    indices_dtype = _indices_dtype(indices_dtype, row_len)
    algorithm = _algorithm(algorithm, stable, rows, xp.on_device(x), row_len)
    index_dtype = _index_dtype(algorithm, row_len)
    if xp.on_device(x):
        values = xp.copy(x)
        # Made by the sort as it loads the keys: no arange to write and read back.
        indices = xp.empty(values, (rows * row_len,), index_dtype)
        _sort_pairs(xp, values, indices, rows, row_len, descending, algorithm, stable, nans,
                    make_indices=True)
        if index_dtype != indices_dtype:
            indices = xp.astype(indices, indices_dtype)
        return SortResult(values, indices.reshape(xp.shape(x)))
    host, back = _host_arrays(xp, x, "x")
    values = host.copy(order="C")
    indices = _row_indices(_host_xp(), values, rows, row_len, index_dtype)
    _sort_pairs(_host_xp(), values, indices, rows, row_len, descending, algorithm, stable, nans)
    indices = indices.astype(indices_dtype, copy=False).reshape(host.shape)
    return SortResult(back(values), back(indices))


def argsort(x, *, dim=-1, descending=False, stable=False, algorithm="automatic", nans="last",
            indices_dtype="int64"):
    """The indices that sort x along its last dimension (int64, or int32 on request), like
    torch.argsort."""
    return sort(
        x, dim=dim, descending=descending, stable=stable, algorithm=algorithm, nans=nans,
        indices_dtype=indices_dtype,
    ).indices


def sort_(x, *, dim=-1, descending=False, stable=False, algorithm="automatic", nans="last"):
    """Sorts x in place along its last dimension and returns x. With algorithm="bitonic"
    the sort takes no device memory beyond x itself (others may allocate a workspace)."""
    nans = _nans(nans)
    xp = _arrays.namespace_of(x, "x")
    rows, row_len = _rows_of(xp, x, dim)
    _check_keys(xp, x)
    algorithm = _algorithm(algorithm, stable, rows, xp.on_device(x))
    if xp.on_device(x):
        _sort_pairs(xp, x, None, rows, row_len, descending, algorithm, stable, nans)
    else:
        host, _ = _host_arrays(xp, x, "x")
        _sort_pairs(_host_xp(), host, None, rows, row_len, descending, algorithm, stable, nans)
    return x


def sort_segmented(x, offsets, *, descending=False, algorithm="automatic", nans="last"):
    """Sorts each segment [offsets[i], offsets[i + 1]) of the 1-D array x (keys outside
    every segment keep their place). Returns (values, indices), indices int64 positions in
    x. offsets: int32 or int64, non-decreasing, in the same place (device or host) as x.
    On a device this waits for the stream: the offsets are checked before any key moves.
    nans as for sort."""
    nans = _nans(nans)
    xp = _arrays.namespace_of(x, "x")
    shape = xp.shape(x)
    if len(shape) != 1:
        raise ValueError(f"x: must be 1-D, got shape {shape}")
    _check_keys(xp, x)
    oxp = _arrays.namespace_of(offsets, "offsets")
    _same_place(xp, x, oxp, offsets, "offsets")
    if oxp.dtype_name(offsets) not in ("int32", "int64"):
        raise TypeError(f"offsets: dtype must be int32 or int64, got {oxp.dtype_name(offsets)}")
    if len(oxp.shape(offsets)) != 1 or oxp.shape(offsets)[0] < 1:
        raise ValueError("offsets: must be 1-D with segment_count + 1 entries (at least one)")
    if not oxp.is_contiguous(offsets):
        raise ValueError("offsets: must be contiguous")
    algorithm = _algorithm(algorithm, False, rows=2)  # the segmented sort's algorithms
    n = shape[0]
    if xp.on_device(x):
        values = xp.copy(x)
        indices = xp.arange(values, n, _index_dtype(algorithm, n))
        if n:
            stream = xp.stream(x)
            _ext.sort_segmented_device(
                xp.handle(values, stream),
                xp.handle(indices, stream),
                xp.handle(offsets, stream),
                descending,
                algorithm,
                stream,
                nans,
            )
        return SortResult(values, xp.astype(indices, "int64"))
    host, back = _host_arrays(xp, x, "x")
    host_offsets, _ = _host_arrays(oxp, offsets, "offsets")
    _check_host_offsets(host_offsets, n)
    values = host.copy(order="C")
    indices = _np().arange(n, dtype="int64")
    _ext.sort_segmented_host(values, indices, host_offsets, descending, algorithm, nans)
    return SortResult(back(values), back(indices))


def _check_host_offsets(offsets, n):
    np = _np()
    if offsets.size and (offsets[0] < 0 or offsets[-1] > n):
        raise ValueError(f"offsets: must lie in [0, {n}], got {offsets[0]} .. {offsets[-1]}")
    if offsets.size > 1 and bool(np.any(offsets[1:] < offsets[:-1])):
        bad = int(np.argmax(offsets[1:] < offsets[:-1]))
        raise ValueError(
            f"offsets: must not decrease, but offsets[{bad + 1}] = {offsets[bad + 1]} < "
            f"offsets[{bad}] = {offsets[bad]}"
        )


def topk(x, k, *, dim=-1, largest=True, sorted=True):
    """The k largest (largest=False: smallest) keys of each row of x, largest first, and
    their indices (int64), like torch.topk. Results are always sorted. NaNs count as the
    largest keys. One row: only about k keys are sorted, and their indices come from the
    library's top_k_indices (no index array); several rows: the library's top_k_rows."""
    xp = _arrays.namespace_of(x, "x")
    rows, row_len = _rows_of(xp, x, dim)
    _check_keys(xp, x, contiguous=False)
    if isinstance(k, bool) or not isinstance(k, int):
        try:
            k = int(k.__index__())
        except (AttributeError, TypeError):
            raise TypeError(f"k: must be an integer, got {type(k).__name__}") from None
    if not 0 <= k <= row_len:
        raise ValueError(f"k: must lie in [0, {row_len}] (the row length), got {k}")
    if not xp.is_contiguous(x):  # topk leaves x alone: a contiguous copy is read instead
        x = xp.copy(x)
    shape = xp.shape(x)
    out_shape = shape[:-1] + (k,)
    if not xp.on_device(x):
        host, back = _host_arrays(xp, x, "x")
        # NaNs count as the largest keys, as in torch.topk and the device path.
        values, indices = sort(host, descending=largest, nans="first" if largest else "last")
        return TopkResult(back(values[..., :k].copy()), back(indices[..., :k].copy()))
    if k == 0 or rows * row_len == 0:
        return TopkResult(xp.empty(x, out_shape, xp.dtype_name(x)), xp.empty(x, out_shape, "int64"))
    stream = xp.stream(x)
    values = xp.empty(x, out_shape, xp.dtype_name(x))
    if rows == 1:  # the library writes the positions itself: no index array of n
        indices = xp.empty(x, out_shape, "int64")
        _ext.topk_indices_device(
            xp.handle(x, stream),
            xp.handle(values, stream),
            xp.handle(indices, stream),
            k,
            largest,
            stream,
            lambda nbytes: xp.handle(xp.empty(x, (nbytes,), "uint8"), stream),
        )
        return TopkResult(values, indices)
    index_dtype = _index_dtype("automatic", row_len)
    indices = xp.empty(x, out_shape, index_dtype)
    _ext.topk_device(
        xp.handle(x, stream),
        xp.handle(_row_indices(xp, x, rows, row_len, index_dtype), stream),
        xp.handle(values, stream),
        xp.handle(indices, stream),
        k,
        largest,
        stream,
        lambda nbytes: xp.handle(xp.empty(x, (nbytes,), "uint8"), stream),
        rows,
    )
    return TopkResult(values, xp.astype(indices, "int64"))


def approx_sort(x, intervals=10000, *, descending=False):
    """Moves the keys of the 1-D array x into `intervals` ordered intervals (interval i is
    values[offsets[i]:offsets[i + 1]], keys inside one in no particular order). Returns
    (values, offsets), offsets int64 with intervals + 1 entries. Floats: -inf in the first
    interval, +inf and NaN in the last."""
    xp = _arrays.namespace_of(x, "x")
    shape = xp.shape(x)
    if len(shape) != 1:
        raise ValueError(f"x: must be 1-D, got shape {shape}")
    _check_keys(xp, x)
    if isinstance(intervals, bool) or not isinstance(intervals, int) or not 1 <= intervals <= 2**24:
        raise ValueError(f"intervals: must be an integer from 1 to 2**24, got {intervals!r}")
    if xp.on_device(x):
        stream = xp.stream(x)
        values = xp.empty(x, shape, xp.dtype_name(x))
        offsets = xp.empty(x, (intervals + 1,), "int64")
        _ext.approx_sort_device(
            xp.handle(x, stream),
            xp.handle(values, stream),
            xp.handle(offsets, stream),
            intervals,
            descending,
            stream,
            lambda nbytes: xp.handle(xp.empty(x, (nbytes,), "uint8"), stream),
        )
        return ApproxResult(values, offsets)
    host, back = _host_arrays(xp, x, "x")
    values = host.copy(order="C")
    offsets = _ext.approx_sort_host(values, intervals, descending)
    return ApproxResult(back(values), back(offsets.astype("int64")))


def _budget(value, argument):
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{argument}: must be a positive number of bytes or None, got {value!r}")
    return value


def _file_options(device_memory, memory, scratch_dir, progress):
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: must be callable or None, got {type(progress).__name__}")
    return (
        _budget(device_memory, "device_memory"),
        _budget(memory, "memory"),
        "" if scratch_dir is None else os.fspath(scratch_dir),
        progress,
    )


def sort_file(src, dst, dtype, *, pairs=False, descending=False, algorithm="automatic",
              device_memory=None, memory=None, scratch_dir=None, progress=None, nans="last"):
    """Sorts the file src of raw little-endian keys of dtype (int32, uint32, int64, uint64,
    float32, float64; or, with pairs=True, records of a key and a uint32 value, sorted stably
    by key) into dst, out of core when the file exceeds the budgets: runs sorted on the GPU
    (or the CPU backend) and merged. device_memory and memory are the device and host budgets
    in bytes (None: 90% of the free device memory; no host limit). progress(phase, done,
    total) is called as the work goes (total 0: a phase that is not counted). src is never
    written; dst appears only complete and checked (it may be src). Ctrl-C, or an exception
    raised by progress, stops the sort and removes its scratch files. Returns what it did, as
    `gpusort sort --stats` prints it: a dict of "algorithm", "plan" and the seconds of each
    stage ("1.234 s"). nans: where float NaNs go, as for sort. Errors: ValueError for a
    missing or malformed input or budgets too small, OSError for a failed read or write."""
    nans = _nans(nans)
    name = _np().dtype(dtype).name
    if name not in KEY_DTYPES:
        raise TypeError(f"dtype: must be one of {', '.join(KEY_DTYPES)}, got {name}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm: must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    return _ext.sort_file(os.fspath(src), os.fspath(dst), name, bool(pairs), bool(descending),
                          algorithm, *_file_options(device_memory, memory, scratch_dir, progress),
                          nans)


def sort_records_file(src, dst, record_bytes, key_bytes, key_offset=0, *, descending=False,
                      device_memory=None, memory=None, scratch_dir=None, progress=None):
    """Sorts the fixed-size records of src (record_bytes each) into dst by the key of
    key_bytes bytes at key_offset, compared as unsigned bytes (memcmp order), stably; the
    budgets, progress, guarantees and the returned dict are those of sort_file."""
    for value, argument in ((record_bytes, "record_bytes"), (key_bytes, "key_bytes"),
                            (key_offset, "key_offset")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{argument}: must be a non-negative integer, got {value!r}")
    return _ext.sort_records_file(os.fspath(src), os.fspath(dst), record_bytes, key_bytes,
                                  key_offset, bool(descending),
                                  *_file_options(device_memory, memory, scratch_dir, progress))


def _np():
    import numpy

    return numpy


def _host_xp():
    return _arrays._NumPy(_np())
