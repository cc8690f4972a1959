"""gpusort for Python: sorts of PyTorch, CuPy, NumPy and other arrays, in torch's words.

Device arrays are sorted where they are, on the caller's current stream, without copies of
the input beyond the output itself and without waiting for the device (sort_segmented
excepted: it checks the offsets first, which waits for the stream). Results come back as
the caller's array type. NumPy arrays (and CPU tensors) are sorted on the GPU when there is
one, else by the library's CPU backend.

    values, indices = gpusort.sort(x)                 # like torch.sort(x)
    gpusort.sort_(x, algorithm="bitonic")             # in place, no extra device memory
    values, indices = gpusort.topk(x, 1000)           # like torch.topk(x, 1000)

Order: ascending unless descending=True; floats in a total order, -0.0 before +0.0, NaNs
after every number in both orders by default (nans="last", NumPy's order) or before them
(nans="first"); torch.sort's order, NaN as the largest key, is nans="first" with
descending=True.

PyTorch: every operation is also a torch operator (torch.ops.gpusort.*), so calls compile
under torch.compile(fullgraph=True), sort and topk values carry gradients, and the
capturable algorithms (ALGORITHM_TRAITS[name].capturable) run inside torch.cuda.graph.

Errors: TypeError for an argument of the wrong type (an unsupported dtype, a non-array, a
masked array, a bool or a float for an integer), ValueError for a wrong value (an unknown
algorithm, a bad dim, k, offsets or budget, an empty file path or one with a NUL, a
read-only array to sort in place), gpusort.Error (a RuntimeError) for a CUDA failure or an
algorithm that cannot run inside a CUDA graph capture, OSError for a failed file read or
write, ImportError when the compiled module is missing. Every check runs before any data
moves: on error, the arrays are as they were.
"""

import importlib.abc
import importlib.util
import sys
from collections import namedtuple

from . import _core
from ._arrays import KEY_DTYPES, NARROW_KEY_DTYPES

# Keys of files (sort_file): every key type but bool (narrow ones on one GPU or the CPU).
FILE_KEY_DTYPES = KEY_DTYPES + tuple(d for d in NARROW_KEY_DTYPES if d != "bool")
from ._core import ALGORITHM_TRAITS, ALGORITHMS, AlgorithmTraits
from . import _ops, _out, _sampling
from ._extension import ext as _ext
from ._extension import needs_module as _needs_module

# gpusort's torch operators (_torch.py), registered as soon as torch is imported: now if it
# already is, else right after its import. Never during a call, which torch.compile may be
# tracing, and without importing torch for users of other libraries (or for gpusort.plot).
_operators = None  # the module gpusort._torch once registered


def _register_with_torch():
    """Never lets a failure here break torch's own import: without the operators, tensors
    still sort, only not under torch.compile or autograd."""
    global _operators
    try:
        from . import _torch as operators
    except Exception as error:  # e.g. a torch before 2.4, without torch.library.custom_op
        import warnings

        warnings.warn(f"gpusort: no torch operators ({error}); torch.compile and autograd "
                      "will not see gpusort's calls", RuntimeWarning, stacklevel=2)
        return
    _operators = operators


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Finds torch as the other finders do, and registers gpusort's operators once torch's
    own module has run; then leaves sys.meta_path. A look-up that imports nothing
    (importlib.util.find_spec("torch"), as libraries probe for torch) leaves it in place."""

    _finding = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self._finding:
            return None
        self._finding = True  # the look-up below asks every finder again, this one too
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._finding = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_torch = spec.loader.exec_module

        def exec_module(module):
            run_torch(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            _register_with_torch()

        spec.loader.exec_module = exec_module
        return spec


if "torch" in sys.modules:
    _register_with_torch()
else:
    sys.meta_path.insert(0, _AfterTorchImport())


def _version():
    try:
        return _ext.__version__
    except ImportError:
        from importlib import metadata

        try:
            return metadata.version("gpusort")
        except metadata.PackageNotFoundError:
            return "unknown"


__version__ = _version()

try:
    Error = _ext.Error
except ImportError:  # no compiled module: nothing can raise it

    class Error(RuntimeError):
        """A CUDA failure inside gpusort."""


__all__ = [
    "sort",
    "argsort",
    "sort_",
    "sort_segmented",
    "topk",
    "kthvalue",
    "partition",
    "argpartition",
    "approx_sort",
    "sort_file",
    "sort_records_file",
    "sort_lines",
    "unique",
    "searchsorted",
    "bucketize",
    "lexsort",
    "sample_top_k_top_p",
    "gpu_available",
    "Error",
    "ALGORITHMS",
    "ALGORITHM_TRAITS",
    "AlgorithmTraits",
    "KEY_DTYPES",
    "NARROW_KEY_DTYPES",
    "__version__",
]

SortResult = namedtuple("SortResult", ["values", "indices"])
TopkResult = namedtuple("TopkResult", ["values", "indices"])
KthvalueResult = namedtuple("KthvalueResult", ["values", "indices"])
ApproxResult = namedtuple("ApproxResult", ["values", "offsets"])


@_needs_module
def gpu_available():
    """Whether a CUDA device is there (else host arrays go to the CPU backend)."""
    return _ext.gpu_available()


def _operator(x):
    """True where a call on x must go through torch's operators (_torch.wants_operator).
    Decided without importing anything and without sys.modules, which torch.compile cannot
    trace."""
    return _operators is not None and isinstance(x, _operators.torch.Tensor) and _operators.wants_operator(x)


def _operator_int(value, argument):
    """value for an int argument of a torch operator, which would take a bool for 0 or 1 and
    answer a float with a RuntimeError: all but ints (and SymInts, under torch.compile) go
    through _core's check, which makes integer-likes ints and raises TypeError for others."""
    if type(value) is int or isinstance(value, _operators.torch.SymInt):
        return value
    return _core._integer(value, argument)


class _LastDim:
    """The default of dim and axis, the last dimension (-1), told apart from an explicit -1
    so that a call naming both is refused. Told by isinstance, which torch.compile traces
    for any object (identity it may not)."""

    __slots__ = ()

    def __repr__(self):
        return "-1"  # what signatures and help() show


_LAST = _LastDim()


def _dim(dim, axis):
    """The dimension a call names as dim (torch's word) or axis (NumPy's): the one given,
    else -1; TypeError for both."""
    if isinstance(axis, _LastDim):
        return -1 if isinstance(dim, _LastDim) else dim
    if not isinstance(dim, _LastDim):
        raise TypeError("dim and axis are one argument (torch's name and NumPy's): give one of them")
    return axis


def _outs(out, x, dtypes, function):
    """The out= tensors, checked before any work (_out.check)."""
    # torch as the operators hold it (torch.compile cannot trace sys.modules); a torch too old
    # for the operators is looked up, which only eager calls reach.
    torch = _operators.torch if _operators is not None else sys.modules.get("torch")
    return _out.check(out, x, torch, dtypes, function)


@_needs_module
def sort(x, dim=_LAST, descending=False, stable=False, *, axis=_LAST, algorithm="automatic",
         nans="last", indices_dtype="int64", out=None):
    """Sorted copy of x along dim and the indices that sort it, like torch.sort: returns
    (values, indices), indices int64 (indices_dtype="int32": 4 bytes each, half the memory,
    for rows under 2^31 keys). Any dim (axis=, NumPy's name, is the same argument); strided
    input is read through a contiguous copy. stable=True keeps equal keys in their input
    order. Float NaNs go after every number in both orders (nans="last", NumPy's order) or
    before them (nans="first"); torch.sort treats NaN as the largest key, which is
    nans="first" with descending=True. bool, 8- and 16-bit integers, float16 and bfloat16 are
    sorted at their own width (host bfloat16, which NumPy lacks, as float32) and returned in
    their dtype with their bits. out=(values, indices) of PyTorch tensors: the results are
    copied there, as torch.sort's out= (module _out), and returned."""
    dim = _dim(dim, axis)
    if out is not None:
        outs = _outs(out, x, (None, indices_dtype), "sort")
        return SortResult(*_out.write(outs, sort(x, dim, descending, stable, algorithm=algorithm,
                                                 nans=nans, indices_dtype=indices_dtype)))
    if _operator(x):
        return SortResult(*_operators.sort(x, _operator_int(dim, "dim"), descending, stable, algorithm,
                                           nans, indices_dtype))
    return SortResult(*_core.sort(x, dim, descending, stable, algorithm, nans, indices_dtype))


@_needs_module
def argsort(x, dim=_LAST, descending=False, stable=False, *, axis=_LAST, algorithm="automatic",
            nans="last", indices_dtype="int64", out=None):
    """The indices that sort x along dim (int64, or int32 on request), like torch.argsort;
    out=: a PyTorch tensor that receives them, as for sort."""
    dim = _dim(dim, axis)
    outs = None if out is None else _outs(out, x, (indices_dtype,), "argsort")
    indices = sort(x, dim, descending, stable, algorithm=algorithm, nans=nans,
                   indices_dtype=indices_dtype).indices
    return indices if outs is None else _out.write(outs, (indices,))[0]


@_needs_module
def sort_(x, *, dim=_LAST, axis=_LAST, descending=False, stable=False, algorithm="automatic",
          nans="last"):
    """Sorts x in place along dim (or axis) and returns x. Contiguous x sorted along its last
    dim takes no device memory beyond x itself with algorithm="bitonic" (others may allocate a
    workspace); otherwise a sorted contiguous copy is written back into x. Arrays of any
    library with __dlpack__ or __cuda_array_interface__ are accepted; read-only ones
    raise ValueError. A host array sorted whole (one row) can be stopped with Ctrl-C: the
    sort raises KeyboardInterrupt at its next piece of work and leaves x in an unspecified
    order."""
    dim = _dim(dim, axis)
    if _operators is not None and isinstance(x, _operators.torch.Tensor):
        if _operators.wants_operator(x):
            _operators.sort_(x, _operator_int(dim, "dim"), descending, stable, algorithm, nans)
        else:
            _operators.sort_in_place_eager(x, dim, descending, stable, algorithm, nans)
        return x
    _core.sort_(x, dim, descending, stable, algorithm, nans)
    return x


@_needs_module
def sort_segmented(x, offsets, *, descending=False, algorithm="automatic", nans="last"):
    """Sorts each segment [offsets[i], offsets[i + 1]) of the 1-D array x (keys outside
    every segment keep their place). Returns (values, indices), indices int64 positions in
    x. offsets: int32 or int64, non-decreasing, in the same place (device or host) as x.
    On a device this waits for the stream: the offsets are checked before any key moves (so
    it cannot run inside a CUDA graph capture). nans as for sort."""
    if _operator(x):
        return SortResult(*_operators.sort_segmented(x, offsets, descending, algorithm, nans))
    return SortResult(*_core.sort_segmented(x, offsets, descending, algorithm, nans))


@_needs_module
def topk(x, k, dim=_LAST, largest=True, sorted=True, *, axis=_LAST, out=None):
    """The k largest (largest=False: smallest) keys of x along dim, and their indices (int64),
    like torch.topk. sorted=True: largest first (largest=False: smallest first); sorted=False
    allows the k in any order, and skips their sort where the library can: rows that the
    per-row select below takes (select_k_rows_indices; 8- and 16-bit integers come sorted)
    and one longer row (select_k_indices); other shapes come sorted. NaNs count as the
    largest keys. Rows of 2,048 keys or more with k up to 2,048 (and float16 or bfloat16
    logits there, on their bits): a radix select per row (top_k_rows_indices); one longer
    row: top_k_indices, which sorts only about k keys; other rows: top_k_rows. No index array
    is made where the library writes the positions. out=(values, indices) of PyTorch
    tensors, as for sort."""
    dim = _dim(dim, axis)
    if out is not None:
        outs = _outs(out, x, (None, "int64"), "topk")
        return TopkResult(*_out.write(outs, topk(x, k, dim, largest, sorted)))
    if _operator(x):
        return TopkResult(*_operators.topk(x, _operator_int(k, "k"), _operator_int(dim, "dim"),
                                           largest, bool(sorted)))
    return TopkResult(*_core.topk(x, k, dim, largest, bool(sorted)))


@_needs_module
def kthvalue(x, k, dim=_LAST, keepdim=False, *, axis=_LAST):
    """The k-th smallest key of x along dim (k counts from 1) and its index (int64), like
    torch.kthvalue; keepdim=True keeps dim, of extent 1. NaNs count as the largest keys. It
    runs topk of the k smallest keys (largest=False) and takes the last of them. A 1-D NumPy
    array gives NumPy scalars, as NumPy's indexing does."""
    import operator

    dim = _dim(dim, axis)
    k = _core._integer(k, "k")
    if k < 1:
        raise ValueError(f"k: must be at least 1 (the k-th smallest key counts from 1), got {k}")
    values, indices = topk(x, k, dim, largest=False)
    where = operator.index(dim) % values.ndim  # topk checked dim
    at = (slice(None),) * where + (slice(k - 1, k) if keepdim else k - 1,)
    return KthvalueResult(values[at], indices[at])


@_needs_module
def partition(x, kth, axis=_LAST, *, dim=_LAST):
    """A copy of x with every kth position (an integer or a sequence) holding the key a sort
    would put there, no smaller key after it and no larger one before it, like
    numpy.partition (axis=None: x flattened; dim=, torch's name, is the same argument); NaNs
    count as the largest keys. NumPy, CuPy and PyTorch arrays: it runs topk of the
    max(kth) + 1 smallest keys, which come first (in order; for one kth in any order, the
    largest of them at kth, which lets a GPU skip their sort), and keeps the other keys in
    their input order after them. Two calls on a GPU may order the keys before kth
    differently, as NumPy promises no order there either."""
    return _core.partition(x, kth, _dim(dim, axis), False)


@_needs_module
def argpartition(x, kth, axis=_LAST, *, dim=_LAST):
    """The indices (int64) that partition x along axis (or dim), like numpy.argpartition."""
    return _core.partition(x, kth, _dim(dim, axis), True)


@_needs_module
def approx_sort(x, intervals=10000, *, descending=False):
    """Moves the keys of the 1-D array x into `intervals` ordered intervals (interval i is
    values[offsets[i]:offsets[i + 1]], keys inside one in no particular order). Returns
    (values, offsets), offsets int64 with intervals + 1 entries. Floats: -inf in the first
    interval, +inf and NaN in the last."""
    if _operator(x):
        return ApproxResult(*_operators.approx_sort(x, _operator_int(intervals, "intervals"), descending))
    return ApproxResult(*_core.approx_sort(x, intervals, descending))


@_needs_module
def sort_file(src, dst, dtype, *, pairs=False, descending=False, algorithm="automatic",
              device_memory=None, memory=None, scratch_dir=None, progress=None, nans="last"):
    """Sorts the file src of raw little-endian keys of dtype (int32, uint32, int64, uint64,
    float32, float64; or, with pairs=True, records of a key and a uint32 value, sorted stably
    by key) into dst, out of core when the file exceeds the budgets: runs sorted on the GPU
    (or the CPU backend) and merged. int8, uint8, int16, uint16, float16 and bfloat16 files
    too (their runs merged on the CPU). device_memory and memory are the device and host budgets
    in bytes (None: 90% of the free device memory; no host limit). progress(phase, done,
    total) is called as the work goes (total 0: a phase that is not counted). src is never
    written; dst appears only complete and checked (it may be src). Ctrl-C, or an exception
    raised by progress, stops the sort and removes its scratch files. Returns what it did, as
    `gpusort sort --stats` prints it: a dict of "algorithm", "plan" and the seconds of each
    stage ("1.234 s"). nans: where float NaNs go, as for sort. Errors: ValueError for a
    missing or malformed input, budgets too small or too large, or a path that is empty or
    holds a NUL character (all checked before any work), OSError for a failed read or write."""
    src, dst = _core.file_path(src, "src"), _core.file_path(dst, "dst")
    nans = _core._nans(nans)
    import numpy

    # NumPy has no bfloat16: it goes by name (or as torch.bfloat16).
    name = "bfloat16" if str(dtype) in ("bfloat16", "torch.bfloat16") else numpy.dtype(dtype).name
    if name not in FILE_KEY_DTYPES:
        raise TypeError(f"dtype: must be one of {', '.join(FILE_KEY_DTYPES)}, got {name}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm: must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    return _ext.sort_file(src, dst, name, bool(pairs), bool(descending),
                          algorithm, *_core.file_options(device_memory, memory, scratch_dir, progress),
                          nans)


@_needs_module
def sort_records_file(src, dst, record_bytes, key_bytes, key_offset=0, *, descending=False,
                      device_memory=None, memory=None, scratch_dir=None, progress=None):
    """Sorts the fixed-size records of src (record_bytes each) into dst by the key of
    key_bytes bytes at key_offset, compared as unsigned bytes (memcmp order), stably; the
    budgets, progress, guarantees and the returned dict are those of sort_file."""
    return _ext.sort_records_file(_core.file_path(src, "src"), _core.file_path(dst, "dst"),
                                  _core.file_size(record_bytes, "record_bytes"),
                                  _core.file_size(key_bytes, "key_bytes"),
                                  _core.file_size(key_offset, "key_offset"), bool(descending),
                                  *_core.file_options(device_memory, memory, scratch_dir, progress))


@_needs_module
def sort_lines(text, *, key=(), separator=None, numeric=False, reverse=False,
               skip_blanks=False, unique=False, stable=False, zero_terminated=False):
    """Lines in the order of `LC_ALL=C sort`, with GNU sort's options by name: key (a -k spec
    such as "2,2n", or a list of them, in precedence), separator (-t, one byte), numeric (-n),
    reverse (-r), skip_blanks (-b), unique (-u), stable (-s), zero_terminated (-z: lines end
    in NUL). text is bytes-like, and the result is GNU's output byte for byte (a last line
    without a terminator gets one); or a list of str (compared by their UTF-8 bytes, the C
    locale's order) or of bytes, lines without terminators, and the result is a new list of
    them in order (with unique: the first of each run of equal keys). On the GPU when there is
    one: the first key's 64-bit codes are sorted there, ties on the host (lines.hpp).
    ValueError for a key GNU would refuse or sort_lines does not take (the flags d f g h i M
    R V), a separator of more than one byte, or a listed line that holds the terminator."""
    keys = [key] if isinstance(key, str) else list(key)
    if not all(isinstance(k, str) for k in keys):
        raise TypeError("key: must be a -k spec (str) or a list of them")
    if separator is None:
        separator = b""
    elif isinstance(separator, str):
        separator = separator.encode()
    options = (keys, bytes(separator), bool(numeric), bool(reverse), bool(skip_blanks),
               bool(unique), bool(stable), bool(zero_terminated))
    if isinstance(text, (bytes, bytearray, memoryview)):
        return _ext.sort_text(bytes(text), *options)
    if not isinstance(text, (list, tuple)):
        raise TypeError(f"text: must be bytes-like or a list of str or bytes, got {type(text).__name__}")
    terminator = b"\0" if zero_terminated else b"\n"
    encoded = [line.encode() if isinstance(line, str) else line for line in text]
    for i, line in enumerate(encoded):
        if not isinstance(line, bytes):
            raise TypeError(f"text[{i}]: must be str or bytes, got {type(line).__name__}")
        if terminator in line:
            raise ValueError(f"text[{i}]: a line holds the terminator {terminator!r}")
    joined = terminator.join(encoded) + (terminator if encoded else b"")
    return [text[i] for i in _ext.sort_lines_order(joined, *options).tolist()]



unique = _needs_module(_ops.unique)
searchsorted = _needs_module(_ops.searchsorted)
bucketize = _needs_module(_ops.bucketize)


sample_top_k_top_p = _needs_module(_sampling.sample_top_k_top_p)


@_needs_module
def lexsort(keys, axis=_LAST, *, dim=_LAST, descending=False):
    """The indices (int64) that sort by several keys, like numpy.lexsort: the last key is the
    primary one, ties broken by the one before it, and so on; stable (full ties keep their
    input order). keys: a sequence of arrays of one shape (or an array, its rows the keys),
    sorted along axis (dim=, torch's name, is the same argument). descending: one bool for
    every key, or one per key (NumPy has none). Integer keys whose ranges fit 64 bits
    together are sorted as one packed int64 code; float keys go as integer codes of their
    order (NaNs last in either direction, -0.0 equal to +0.0), so they pack too and take the
    stable radix sort. A row is sorted by its most significant code first, and then only the
    keys tied in it by the rest (three random int32 keys: one sort of the first two packed,
    then the few ties by the third)."""
    return _ops.lexsort(keys, _dim(dim, axis), descending=descending)
