"""The sorts themselves, for every array library (the adapters of _arrays.py): argument
checks, the dimension moved last and strided input copied where a kernel needs contiguous
rows, then one call into the extension module. The public functions in __init__.py call
these directly, or through PyTorch's operator registry (_torch.py) where torch must see an
operator: under torch.compile, for autograd, for fake tensors."""

import functools
import operator
import os

from . import _arrays
from ._arrays import KEY_DTYPES, SORT_KEY_DTYPES
from ._extension import ext as _ext


class AlgorithmTraits:
    """What one algorithm guarantees, as the library's table (gpusort::algorithm_table) says:
    stable (equal keys keep their order), in_place (runs with no workspace), sorts_rows (the
    batched and segmented sorts take it), capturable (fits inside a CUDA graph capture),
    takes_comparator (sorts by a user comparator in C++), max_value_bytes (the widest values
    it carries: 8 for CUB's and Thrust's sorts, 16 for the others)."""

    __slots__ = ("name", "stable", "in_place", "sorts_rows", "capturable", "takes_comparator",
                 "max_value_bytes")

    def __init__(self, name, *traits):
        self.name = name
        for field, value in zip(self.__slots__[1:], traits, strict=True):
            setattr(self, field, value)

    def __repr__(self):
        flags = ", ".join(f"{f}={getattr(self, f)}" for f in self.__slots__[1:])
        return f"AlgorithmTraits({self.name!r}, {flags})"


def _read_algorithm_table():
    try:
        rows = _ext.algorithms()
    except ImportError:  # no compiled module: gpusort.plot still imports
        return {}
    return {row[0]: AlgorithmTraits(*row) for row in rows}


ALGORITHM_TRAITS = _read_algorithm_table()
ALGORITHMS = tuple(ALGORITHM_TRAITS)


# ---- argument checks: all of them run before any data moves --------------------------------


def _check_dtype(xp, x, argument="x", dtypes=KEY_DTYPES):
    """TypeError for a key dtype the entry point lacks (dtypes: those it takes)."""
    dtype = xp.dtype_name(x)
    if dtype not in dtypes:
        raise TypeError(
            f"{argument}: dtype {dtype} is not supported; keys must be one of "
            + ", ".join(dtypes)
        )


def _integer(value, argument):
    """value as an int: anything integer-like (NumPy's integers too), but not a bool (Python's
    or NumPy's), which would pass for 0 or 1; else TypeError naming `argument`."""
    if type(value).__name__ in ("bool", "bool_"):
        raise TypeError(f"{argument}: must be an integer, got a bool ({value!r})")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{argument}: must be an integer, got {type(value).__name__}") from None


def _dim_of(xp, x, dim, argument="dim"):
    """dim as a non-negative axis of x, or ValueError naming it."""
    shape = xp.shape(x)
    if len(shape) == 0:
        raise ValueError("x: a 0-d array has nothing to sort; give at least one dimension")
    dim = _integer(dim, argument)
    if not -len(shape) <= dim < len(shape):
        raise ValueError(f"{argument}: {dim} is out of range for an array of {len(shape)} dimensions")
    return dim % len(shape)


def _rows(shape):
    """(rows, row_len) of an array sorted along its last dimension."""
    rows = 1
    for extent in shape[:-1]:
        rows *= extent
    return rows, shape[-1]


def _last(xp, x, axis):
    """x with `axis` moved last (a view), and how to put a result's last axis back as a
    contiguous array of x's layout."""
    if axis == len(xp.shape(x)) - 1:
        return x, lambda a: a
    return xp.moveaxis(x, axis, -1), lambda a: xp.contiguous(xp.moveaxis(a, -1, axis))


def _algorithm(algorithm, stable, rows=1, on_device=True, row_len=0):
    """The library's algorithm for this call, or ValueError naming `algorithm`."""
    traits = ALGORITHM_TRAITS.get(algorithm)
    if traits is None:
        raise ValueError(f"algorithm: unknown algorithm {algorithm!r}; one of " + ", ".join(ALGORITHMS))
    if rows > 1 and not traits.sorts_rows:
        rows_ok = [a for a, t in ALGORITHM_TRAITS.items() if t.sorts_rows]
        raise ValueError(f"algorithm: {algorithm!r} does not sort rows; use one of " + ", ".join(rows_ok))
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
    if not traits.stable:
        stable_ones = [a for a, t in ALGORITHM_TRAITS.items() if t.stable]
        raise ValueError(
            f"algorithm: {algorithm!r} is not stable; with stable=True use automatic, "
            + ", ".join(stable_ones)
        )
    return algorithm


def _nans(nans):
    """The NaN placement, or ValueError naming `nans`."""
    if nans not in ("last", "first"):
        raise ValueError(f"nans: must be 'last' or 'first', got {nans!r}")
    return nans


# Up to this many keys in all, an unstable automatic sort makes int64 indices directly: for
# so few keys the pass that widens int32 costs more than moving 8-byte values.
_SMALL_SORT = 2**12


def _index_dtype(algorithm, row_len, n=None, stable=True):
    """The indices' type while sorting: int32 where they fit (4-byte values move half the
    bytes of 8-byte ones), widened to int64 (as torch and NumPy give them) in one pass
    afterwards; small unstable sorts and rows of 2^31 keys or more make int64 at once."""
    if n is not None and n <= _SMALL_SORT and algorithm == "automatic" and not stable:
        return "int64"
    if row_len < 2**31:
        return "int32"
    return "int64"


def _indices_dtype(indices_dtype, row_len):
    """The indices' type the caller asked for, or ValueError naming `indices_dtype`."""
    if indices_dtype not in ("int64", "int32"):
        raise ValueError(f"indices_dtype: must be 'int64' or 'int32', got {indices_dtype!r}")
    if indices_dtype == "int32" and row_len >= 2**31:
        raise ValueError(f"indices_dtype: 'int32' cannot index rows of {row_len} keys")
    return indices_dtype


def _k_of(k, row_len):
    k = _integer(k, "k")
    if not 0 <= k <= row_len:
        raise ValueError(f"k: must lie in [0, {row_len}] (the row length), got {k}")
    return k


def _host_arrays(xp, x, argument):
    """A NumPy view of a host array (no copy), and how to turn results back. Masked arrays
    never get here (namespace_of refuses them)."""
    if xp.name == "numpy":
        return x, lambda a: a
    if xp.name == "torch":
        return xp.to_numpy(x), xp.from_numpy
    raise TypeError(f"{argument}: a host array must be a NumPy array or a CPU tensor")


def _native_copy(a):
    """A C-ordered copy of the NumPy array a in this machine's byte order (NumPy arrays may
    be big-endian: the library reads native keys)."""
    return a.astype(a.dtype.newbyteorder("="), order="C")


def _same_place(xp, x, other_xp, other, argument):
    if other_xp.name != xp.name or other_xp.on_device(other) != xp.on_device(x):
        where = "device" if xp.on_device(x) else "host"
        raise TypeError(
            f"{argument}: must be a {xp.name} array on the same {where} as x, got "
            f"{type(other).__module__}.{type(other).__name__}"
            + (" in host memory" if not other_xp.on_device(other) else " in device memory")
        )


def _handles(xp, stream, *arrays):
    """The module's handles of device arrays, for work enqueued on `stream`."""
    return [xp.handle(a, stream) for a in arrays]


def _alloc(xp, like, stream):
    """Workspace through the caller's library; None where gpusort cannot allocate arrays of
    that library (the module then takes it from CUDA's stream-ordered allocator)."""
    if xp.name == "foreign":
        return None
    return lambda nbytes: xp.handle(xp.empty(like, (nbytes,), "uint8"), stream)


def _on_device_of_x(function):
    """Runs function(x, ...) with the device of a CuPy array x current: CuPy allocates, copies
    and launches on the current device, and the results must live, and the work run, where x
    is."""

    @functools.wraps(function)
    def run(x, *args, **kwargs):
        device = _arrays.cupy_device(x)
        if device is None:
            return function(x, *args, **kwargs)
        with device:
            return function(x, *args, **kwargs)

    return run


# ---- sorting ----------------------------------------------------------------------------


def _sort_rows(xp, keys, indices, rows, row_len, descending, algorithm, stable, nans,
               make_indices=False):
    """Sorts contiguous keys (and indices) in place, each of `rows` rows of row_len.
    make_indices (device arrays only): the sort writes each key's position in its row into
    indices, unread."""
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
            _alloc(xp, keys, stream),
            nans,
            stable,
            make_indices,
        )
    else:
        _ext.sort_host(keys, indices, rows, row_len, descending, algorithm, stable, nans)


def _row_indices(xp, like, rows, row_len, dtype):
    row = xp.arange(like, row_len, dtype)
    return row if rows == 1 else xp.tile_rows(row, rows)


# The host path reads arrays through NumPy, which has no bfloat16: host bfloat16 tensors are
# sorted as float32 (every value exact, the same order: -0.0 before +0.0), and the sorted keys
# come back by the indices, with the caller's bits (NaN payloads included).
def _widened(xp, x):
    """The dtype x is sorted as, or None where the library takes x's dtype."""
    return "float32" if xp.dtype_name(x) == "bfloat16" and not xp.on_device(x) else None


def _ties_nans(xp, x, stable):
    """Whether a stable sort of x goes through a copy whose NaNs are one NaN: the library
    orders 16-bit float NaNs by their bits, where a stable sort keeps them in input order
    (as it does for float32). The keys then come back by the indices, with their bits."""
    return stable and xp.dtype_name(x) in FLOAT16_DTYPES and hasattr(xp, "one_nan")


@_on_device_of_x
def sort(x, dim, descending, stable, algorithm, nans, indices_dtype, nans_tied=False):
    """(values, indices) of x sorted along dim, as new arrays of x's library. nans_tied: x is
    a stand-in already (_widened, _ties_nans)."""
    if _arrays.is_jax(x):
        lent = _arrays.lend_jax(x, "x")
        return _arrays.jax_results(sort(lent, dim, descending, stable, algorithm, nans, indices_dtype))
    nans = _nans(nans)
    xp = _arrays.namespace_of(x, "x")
    axis = _dim_of(xp, x, dim)
    wide = _widened(xp, x)
    if not nans_tied and (wide or _ties_nans(xp, x, stable)):
        # A stand-in is sorted; the keys come back from x by the indices, with their bits.
        stand_in = xp.astype(x, wide) if wide else xp.one_nan(x)
        _, indices = sort(stand_in, dim, descending, stable, algorithm, nans, indices_dtype,
                          nans_tied=True)
        return xp.take_along(x, indices, axis), indices
    _check_dtype(xp, x, dtypes=SORT_KEY_DTYPES)
    moved, back = _last(xp, x, axis)
    shape = xp.shape(moved)
    rows, row_len = _rows(shape)
    indices_dtype = _indices_dtype(indices_dtype, row_len)
    algorithm = _algorithm(algorithm, stable, rows, xp.on_device(x), row_len)
    on_device = xp.on_device(x)
    index_dtype = _index_dtype(algorithm, row_len, rows * row_len if on_device else None, stable)
    if on_device:
        values = xp.copy(moved)  # contiguous whatever x's strides
        # Made by the sort as it loads the keys: no arange to write and read back.
        indices = xp.empty(values, (rows * row_len,), index_dtype)
        _sort_rows(xp, values, indices, rows, row_len, descending, algorithm, stable, nans,
                   make_indices=True)
        if index_dtype != indices_dtype:
            indices = xp.astype(indices, indices_dtype)
        return back(values), back(indices.reshape(shape))
    host, to_caller = _host_arrays(xp, moved, "x")
    values = _native_copy(host)
    host_xp = _host_xp()
    indices = _row_indices(host_xp, values, rows, row_len, index_dtype)
    _sort_rows(host_xp, values, indices, rows, row_len, descending, algorithm, stable, nans)
    indices = indices.astype(indices_dtype, copy=False).reshape(shape)
    values = values.astype(host.dtype, copy=False)  # the caller's byte order
    return back(to_caller(values)), back(to_caller(indices))


@_on_device_of_x
def sort_(x, dim, descending, stable, algorithm, nans):
    """Sorts x in place along dim. A strided x, or another dim than the last, is sorted as a
    contiguous copy that is then written back."""
    if _arrays.is_jax(x):
        raise ValueError("x: JAX arrays are immutable and cannot be sorted in place; "
                         "gpusort.sort returns sorted new arrays")
    nans = _nans(nans)
    xp = _arrays.namespace_of(x, "x")
    axis = _dim_of(xp, x, dim)
    if _widened(xp, x) or _ties_nans(xp, x, stable):
        if not xp.on_device(x) and not _host_arrays(xp, x, "x")[0].flags.writeable:
            raise ValueError("x: is read-only")
        values, _ = sort(x, dim, descending, stable, algorithm, nans, "int64")
        xp.assign(x, values)
        return
    _check_dtype(xp, x, dtypes=SORT_KEY_DTYPES)
    moved, _ = _last(xp, x, axis)
    rows, row_len = _rows(xp.shape(moved))
    algorithm = _algorithm(algorithm, stable, rows, xp.on_device(x))
    if not xp.on_device(x):
        host, _ = _host_arrays(xp, moved, "x")
        if not host.flags.writeable:
            raise ValueError("x: is read-only")
        direct = host.flags.c_contiguous and host.dtype.isnative
        work = host if direct else _native_copy(host)
        _sort_rows(_host_xp(), work, None, rows, row_len, descending, algorithm, stable, nans)
        if work is not host:
            host[...] = work
        return
    if xp.is_contiguous(moved):
        _sort_rows(xp, moved, None, rows, row_len, descending, algorithm, stable, nans)
        return
    work = xp.copy(moved)  # raises for arrays of libraries gpusort cannot allocate
    _sort_rows(xp, work, None, rows, row_len, descending, algorithm, stable, nans)
    xp.assign(moved, work)


@_on_device_of_x
def sort_segmented(x, offsets, descending, algorithm, nans):
    """(values, indices) of the 1-D x with each segment [offsets[i], offsets[i + 1]) sorted."""
    if _arrays.is_jax(x):
        lent = _arrays.lend_jax(x, "x")
        if _arrays.is_jax(offsets):
            offsets = _arrays.lend_jax(offsets, "offsets")
        return _arrays.jax_results(sort_segmented(lent, offsets, descending, algorithm, nans))
    nans = _nans(nans)
    xp = _arrays.namespace_of(x, "x")
    shape = xp.shape(x)
    if len(shape) != 1:
        raise ValueError(f"x: must be 1-D, got shape {shape}")
    wide = _widened(xp, x)
    if wide:
        _, indices = sort_segmented(xp.astype(x, wide), offsets, descending, algorithm, nans)
        return xp.take_along(x, indices, 0), indices
    _check_dtype(xp, x, dtypes=SORT_KEY_DTYPES)
    oxp = _arrays.namespace_of(offsets, "offsets")
    _same_place(xp, x, oxp, offsets, "offsets")
    if oxp.dtype_name(offsets) not in ("int32", "int64"):
        raise TypeError(f"offsets: dtype must be int32 or int64, got {oxp.dtype_name(offsets)}")
    if len(oxp.shape(offsets)) != 1 or oxp.shape(offsets)[0] < 1:
        raise ValueError("offsets: must be 1-D with segment_count + 1 entries (at least one)")
    if not oxp.is_contiguous(offsets):
        offsets = oxp.copy(offsets)
    algorithm = _algorithm(algorithm, False, rows=2)  # the segmented sort's algorithms
    n = shape[0]
    if xp.on_device(x):
        values = xp.copy(x)
        indices = xp.arange(values, n, _index_dtype(algorithm, n))
        if n:
            stream = xp.stream(x)
            _ext.sort_segmented_device(
                *_handles(xp, stream, values, indices, offsets), descending, algorithm, stream, nans
            )
        return values, xp.astype(indices, "int64")
    host, back = _host_arrays(xp, x, "x")
    host_offsets, _ = _host_arrays(oxp, offsets, "offsets")
    host_offsets = _native_copy(host_offsets)
    _check_host_offsets(host_offsets, n)
    values = _native_copy(host)
    indices = _np().arange(n, dtype="int64")
    _ext.sort_segmented_host(values, indices, host_offsets, descending, algorithm, nans)
    return back(values.astype(host.dtype, copy=False)), back(indices)


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


def topk_shape(shape, axis, k):
    return tuple(k if i == axis else extent for i, extent in enumerate(shape))


# The 16-bit floats: topk's per-row select has a path of their own (as their bits), and stable
# sorts tie their NaNs (_ties_nans).
FLOAT16_DTYPES = ("float16", "bfloat16")
# Rows the per-row select takes (network/row_select.hpp: k up to 2048 of rows of 2048 keys or
# more). One row longer than _ONE_ROW_SELECT_MOST goes to top_k_indices (sampled splitters),
# which reads the keys about once where the select reads them three or four times. Where the
# two cross is not measured: at 2^18 keys (f32, k = 50) the select took 91 us on an H200 and
# top_k_indices 174 us on an H100 (other runs, other cards); 2^22 is a guess.
_ROW_SELECT_MOST_K = 2048
_ROW_SELECT_LEAST_ROW = 2048
_ONE_ROW_SELECT_MOST = 2**22


def _row_select_fits(row_len, k):
    return k <= _ROW_SELECT_MOST_K and _ROW_SELECT_LEAST_ROW <= row_len < 2**32


@_on_device_of_x
def topk(x, k, dim, largest, in_order=True):
    """(values, indices) of the k largest (largest=False: smallest) keys along dim, sorted;
    in_order=False: the k in no order where the library can skip their sort (one long row:
    select_k_indices; rows the per-row select takes: select_k_rows_indices), other shapes
    sorted as before."""
    if _arrays.is_jax(x):
        return _arrays.jax_results(topk(_arrays.lend_jax(x, "x"), k, dim, largest, in_order))
    xp = _arrays.namespace_of(x, "x")
    axis = _dim_of(xp, x, dim)
    wide = _widened(xp, x)
    if not wide:
        _check_dtype(xp, x, dtypes=SORT_KEY_DTYPES)
    moved, back = _last(xp, x, axis)
    rows, row_len = _rows(xp.shape(moved))
    k = _k_of(k, row_len)
    if wide:
        _, indices = topk(xp.astype(x, wide), k, dim, largest, in_order)
        return xp.take_along(x, indices, axis), indices
    if not xp.is_contiguous(moved):  # topk leaves x alone: a contiguous copy is read instead
        moved = xp.copy(moved)
    shape = xp.shape(moved)
    out_shape = shape[:-1] + (k,)
    if not xp.on_device(x):
        host, to_caller = _host_arrays(xp, moved, "x")
        # NaNs count as the largest keys, as in torch.topk and the device path.
        values, indices = sort(host, -1, largest, False, "automatic",
                               "first" if largest else "last", "int64")
        return (back(to_caller(values[..., :k].copy())), back(to_caller(indices[..., :k].copy())))
    if k == 0 or rows * row_len == 0:
        return (back(xp.empty(moved, out_shape, xp.dtype_name(x))),
                back(xp.empty(moved, out_shape, "int64")))
    stream = xp.stream(moved)
    values = xp.empty(moved, out_shape, xp.dtype_name(x))
    alloc = _alloc(xp, moved, stream)
    float16 = xp.dtype_name(x) in FLOAT16_DTYPES  # the select has a path of their own
    if _row_select_fits(row_len, k) and (float16 or rows > 1 or row_len <= _ONE_ROW_SELECT_MOST):
        # The library writes the columns itself.
        indices = xp.empty(moved, out_shape, "int64")
        _ext.topk_rows_indices_device(*_handles(xp, stream, moved, values, indices), k, largest,
                                      stream, alloc, rows, in_order)
        return back(values), back(indices)
    if rows == 1:  # the library writes the positions itself: no index array of n
        indices = xp.empty(moved, out_shape, "int64")
        _ext.topk_indices_device(*_handles(xp, stream, moved, values, indices), k, largest,
                                 stream, alloc, in_order)
        return back(values), back(indices)
    index_dtype = _index_dtype("automatic", row_len)
    indices = xp.empty(moved, out_shape, index_dtype)
    row_indices = _row_indices(xp, moved, rows, row_len, index_dtype)
    _ext.topk_device(
        *_handles(xp, stream, moved, row_indices, values, indices), k, largest, stream, alloc, rows
    )
    return back(values), back(xp.astype(indices, "int64"))


@_on_device_of_x
def partition(x, kth, axis, want_indices):
    """NumPy's partition (want_indices: argpartition) of x along axis (None: flattened):
    topk of the max(kth) + 1 smallest keys, in order (for one kth, in any order but the
    largest of them last), then the other keys in their input order.
    Every kth position holds the key a sort would put there, none after it is smaller and
    none before it larger; NaNs count as the largest keys."""
    if _arrays.is_jax(x):
        return _arrays.jax_results((partition(_arrays.lend_jax(x, "x"), kth, axis, want_indices),))[0]
    xp = _arrays.namespace_of(x, "x")
    if not hasattr(xp, "concat"):
        raise TypeError("x: partition takes NumPy, CuPy and PyTorch arrays")
    if axis is None:
        x, axis = x.reshape(-1), 0
    shape = xp.shape(x)
    axis = _dim_of(xp, x, axis, "axis")
    n = shape[axis]
    try:
        kths = [_integer(j, "kth") for j in (kth if isinstance(kth, (list, tuple)) else [kth])]
    except TypeError:
        raise TypeError(f"kth: must be an integer or a sequence of integers, got {kth!r}") from None
    if not kths or any(not -n <= j < n for j in kths):
        raise ValueError(f"kth: must lie in [-{n}, {n}) (the extent of axis {axis}), got {kth!r}")
    first = max(j % n for j in kths) + 1
    # One kth (a median, say) needs only the first smallest in any order with the largest of
    # them last: the select then skips the sort of `first` keys.
    one_kth = len({j % n for j in kths}) == 1
    _, smallest = topk(x, first, axis, False, in_order=not one_kth)
    moved, back = _last(xp, x, axis)
    rows = 1
    for extent in xp.shape(moved)[:-1]:
        rows *= extent
    chosen = xp.contiguous(xp.moveaxis(smallest, axis, -1)).reshape(rows, first)
    row_ids = xp.arange(x, rows, "int64").reshape(rows, 1)
    if one_kth and first > 1:  # the largest chosen (in the library's order) to the last place
        keys = xp.take_along(xp.contiguous(moved).reshape(rows, n), chosen, -1)
        _, at = topk(keys, 1, -1, True)
        largest = xp.take_along(chosen, at, -1)
        last = xp.copy(chosen[:, first - 1:first])
        chosen[row_ids, at] = last
        chosen[:, first - 1:first] = largest
    others = xp.ones(x, (rows, n), "bool")
    others[row_ids, chosen] = False
    rest = xp.tile_rows(xp.arange(x, n, "int64"), rows)[others]  # row by row, in order
    order = xp.concat([chosen, rest.reshape(rows, n - first)], 1)
    order = order.reshape(xp.shape(moved))
    if want_indices:
        return back(order)
    return back(xp.take_along(xp.contiguous(moved), order, -1))


# The key types of the library's unique (include/gpusort/operations.hpp).
UNIQUE_DTYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64")


@_on_device_of_x
def unique_counts(x):
    """(distinct keys, int64 counts) of a 1-D torch or CuPy array on a GPU, by one call of the
    library's unique (every NaN one key, -0.0 and +0.0 two); None for any other array, which
    the caller then takes another way. Waits for the number of distinct keys."""
    xp = _arrays.namespace_of(x, "x")
    if (xp.name not in ("torch", "cupy") or not xp.on_device(x) or len(xp.shape(x)) != 1
            or xp.dtype_name(x) not in UNIQUE_DTYPES):
        return None
    if not xp.is_contiguous(x):
        x = xp.copy(x)
    stream = xp.stream(x)
    n = xp.shape(x)[0]
    keys = xp.empty(x, (n,), xp.dtype_name(x))
    counts = xp.empty(x, (n,), "int64")
    if n == 0:  # nothing to hand the library (an empty array has no device address to check)
        return keys, counts
    found = xp.empty(x, (1,), "int64")
    _ext.unique_device(*_handles(xp, stream, x, keys, counts, found), stream,
                       _alloc(xp, x, stream))
    distinct = int(found[0])
    # Copies of the distinct part, so that the room for every key is given back.
    return xp.copy(keys[:distinct]), xp.copy(counts[:distinct])


@_on_device_of_x
def approx_sort(x, intervals, descending):
    """(values, offsets) of the 1-D x moved into `intervals` ordered intervals."""
    if _arrays.is_jax(x):
        return _arrays.jax_results(approx_sort(_arrays.lend_jax(x, "x"), intervals, descending))
    xp = _arrays.namespace_of(x, "x")
    shape = xp.shape(x)
    if len(shape) != 1:
        raise ValueError(f"x: must be 1-D, got shape {shape}")
    _check_dtype(xp, x)
    intervals = _integer(intervals, "intervals")
    if not 1 <= intervals <= 2**24:
        raise ValueError(f"intervals: must be an integer from 1 to 2**24, got {intervals!r}")
    if xp.on_device(x):
        if not xp.is_contiguous(x):
            x = xp.copy(x)
        stream = xp.stream(x)
        values = xp.empty(x, shape, xp.dtype_name(x))
        offsets = xp.empty(x, (intervals + 1,), "int64")
        _ext.approx_sort_device(*_handles(xp, stream, x, values, offsets), intervals, descending,
                                stream, _alloc(xp, x, stream))
        return values, offsets
    host, back = _host_arrays(xp, x, "x")
    values = _native_copy(host)
    offsets = _ext.approx_sort_host(values, intervals, descending)
    return back(values.astype(host.dtype, copy=False)), back(offsets.astype("int64"))


# ---- files -------------------------------------------------------------------------------


def file_size(value, argument, least=0):
    """value as an int from `least` to 2**64 - 1, the most the module's uint64_t holds (beyond
    it pybind11 would refuse the call with a TypeError that names no argument)."""
    value = _integer(value, argument)
    if value < least:
        raise ValueError(f"{argument}: must be at least {least}, got {value}")
    if value >= 2**64:
        raise ValueError(f"{argument}: {value} is too large (at most 2**64 - 1)")
    return value


def file_path(value, argument):
    """os.fspath(value), or ValueError for an empty path or one holding a NUL character: the
    C library would end the name there (dst "out\\0.tmp" would write "out")."""
    path = os.fspath(value)
    if not path:
        raise ValueError(f"{argument}: must not be empty")
    if ("\0" if isinstance(path, str) else b"\0") in path:
        raise ValueError(f"{argument}: must not contain a NUL character, got {path!r}")
    return path


def file_options(device_memory, memory, scratch_dir, progress):
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: must be callable or None, got {type(progress).__name__}")
    return (
        0 if device_memory is None else file_size(device_memory, "device_memory", 1),
        0 if memory is None else file_size(memory, "memory", 1),
        "" if scratch_dir is None else file_path(scratch_dir, "scratch_dir"),
        progress,
    )


def _np():
    import numpy

    return numpy


def _host_xp():
    return _arrays._NumPy(_np())
