"""Arrays that must not be misread or written where they may not be (issue 44): DLPack 1.0's
versioned capsules and their read-only flag, negative dimensions and extents, CUDA array
interface streams that name no stream, big-endian and masked NumPy arrays (on every path:
issue 70), and integer arguments of other types (issue 70). CPU tests: the module reads
these descriptions before any data moves."""

import ctypes

import numpy as np
import pytest

import gpusort
from gpusort import _ext
from reference import check_sorted, random_keys


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _Versioned(ctypes.Structure):
    _fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def versioned_capsule(array, flags=0, major=1, ndim=None, shape=None, name=b"dltensor_versioned"):
    """A DLPack 1.0 capsule over a NumPy array, built by hand (this NumPy makes none); the
    returned keep-alive list holds what the capsule points to."""
    extents = (ctypes.c_int64 * max(array.ndim, 1))(*(shape or array.shape or (1,)))
    managed = _Versioned()
    managed.version = _Version(major, 0)
    managed.flags = flags
    managed.dl_tensor = _Tensor(array.ctypes.data, _Device(1, 0), array.ndim if ndim is None else ndim,
                                _DataType(0, 32, 1), extents, None, 0)
    capsule = _capsule_new(ctypes.addressof(managed), name, None)
    return capsule, [array, extents, managed]


def test_versioned_capsules_are_read_with_their_read_only_flag():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    capsule, keep = versioned_capsule(a)
    d = _ext.describe(capsule)
    assert d["type"] == "int32" and d["shape"] == (3, 4) and not d["read_only"]
    capsule, keep = versioned_capsule(a, flags=1)
    assert _ext.describe(capsule)["read_only"]


def test_capsules_that_cannot_be_trusted_are_refused():
    a = np.arange(6, dtype=np.int32)
    capsule, keep = versioned_capsule(a, major=2)
    with pytest.raises(TypeError, match="DLPack 2.x"):
        _ext.describe(capsule)
    capsule, keep = versioned_capsule(a, ndim=-1)
    with pytest.raises(ValueError, match="-1 dimensions"):
        _ext.describe(capsule)
    capsule, keep = versioned_capsule(a, shape=(-6,))
    with pytest.raises(ValueError, match="extent -6"):
        _ext.describe(capsule)
    capsule, keep = versioned_capsule(a, name=b"used_dltensor_versioned")
    with pytest.raises(ValueError, match="already consumed"):
        _ext.describe(capsule)


def test_cuda_array_interface_stream_and_extents_are_checked():
    iface = {"data": (1 << 40, False), "shape": (4,), "typestr": "<u4", "version": 3}
    with pytest.raises(ValueError, match="stream 0 is not a stream"):
        _ext.describe(dict(iface, stream=0))
    with pytest.raises(ValueError, match="extent of -4"):
        _ext.describe(dict(iface, shape=(-4,)))
    assert _ext.describe(dict(iface, stream=2))["producer_stream"] == 2


@pytest.mark.parametrize("dtype", [">i4", ">u8", ">f4", ">f8"])
def test_big_endian_keys_are_sorted_by_value(dtype, rng):
    x = random_keys(np.dtype(dtype).newbyteorder("="), 501, rng).astype(dtype)
    values, indices = gpusort.sort(x)
    assert values.dtype == x.dtype  # the caller's byte order
    check_sorted(x.astype(x.dtype.newbyteorder("=")), values.astype(values.dtype.newbyteorder("=")), indices)
    assert np.array_equal(gpusort.topk(x, 5).values, np.sort(x)[::-1][:5])
    y = x.copy()
    assert gpusort.sort_(y) is y and y.dtype == x.dtype
    assert np.array_equal(y, values)
    offsets = np.array([0, 100, 501], dtype=">i8")
    seg = gpusort.sort_segmented(x, offsets).values
    assert np.array_equal(seg[:100], np.sort(x[:100])) and np.array_equal(seg[100:], np.sort(x[100:]))
    approx, bounds = gpusort.approx_sort(x, 4)
    assert np.array_equal(np.sort(approx), np.sort(x)) and bounds[-1] == 501


MASKED_CALLS = {
    "sort": lambda x: gpusort.sort(x),
    "sort dim 0": lambda x: gpusort.sort(x, dim=0),
    "sort_": lambda x: gpusort.sort_(x),
    "sort_ dim 0": lambda x: gpusort.sort_(x, dim=0),
    "topk": lambda x: gpusort.topk(x, 1),
    "topk dim 0": lambda x: gpusort.topk(x, 1, dim=0),
    "kthvalue": lambda x: gpusort.kthvalue(x, 1),
    "partition": lambda x: gpusort.partition(x, 0),
    "partition axis 0": lambda x: gpusort.partition(x, 0, axis=0),
    "argpartition": lambda x: gpusort.argpartition(x, 0),
    "sort_segmented": lambda x: gpusort.sort_segmented(x, np.array([0, x.size])),
    "approx_sort": lambda x: gpusort.approx_sort(x, 2),
}


@pytest.mark.parametrize("call", MASKED_CALLS.values(), ids=MASKED_CALLS.keys())
def test_masked_arrays_are_refused(call):
    """On every path: a view, strided or transposed, was read through a copy that dropped the
    mask (topk of x[::-1] gave the masked 100)."""
    x = np.ma.array([3, 100, 2, 0], mask=[0, 1, 0, 0], dtype=np.int32)
    for view in (x, x[::-1], x.reshape(2, 2).T):
        with pytest.raises(TypeError, match="x: masked arrays are not supported"):
            call(view)
    assert np.array_equal(x.data, [3, 100, 2, 0])


def test_masked_offsets_are_refused():
    x = np.array([3, 1, 2, 0], dtype=np.int32)
    offsets = np.ma.array([0, 9, 2, 9, 4], mask=[0, 1, 0, 1, 0])
    for view in (offsets, offsets[::2]):
        with pytest.raises(TypeError, match="offsets: masked arrays are not supported"):
            gpusort.sort_segmented(x, view)


def test_integer_arguments_take_numpy_integers(rng):
    x = random_keys("int32", 60, rng).reshape(3, 4, 5)
    for dim in (np.int64(0), np.int32(-1), np.uint8(1)):
        axis = int(dim)
        want = np.sort(x, axis=axis)
        assert np.array_equal(gpusort.sort(x, dim=dim).values, want)
        y = x.copy()
        gpusort.sort_(y, dim=dim)
        assert np.array_equal(y, want)
        top = gpusort.topk(x, np.int64(2), dim=dim, largest=False).values
        assert np.array_equal(top, np.take(want, [0, 1], axis=axis))
        kth = gpusort.kthvalue(x, np.int16(2), dim=dim).values
        assert np.array_equal(kth, np.take(want, 1, axis=axis))
        part = gpusort.partition(x, np.int64(1), axis=dim)
        assert np.array_equal(np.take(part, 1, axis=axis), np.take(want, 1, axis=axis))
    values, offsets = gpusort.approx_sort(x.reshape(-1), np.int64(4))
    assert offsets.shape == (5,) and np.array_equal(np.sort(values), np.sort(x.reshape(-1)))


@pytest.mark.parametrize("bad", [True, np.bool_(False), 1.0, np.float64(0), "1"],
                         ids=["bool", "numpy bool", "float", "numpy float", "str"])
def test_integer_arguments_refuse_bools_and_floats(bad):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    calls = {
        "dim": [lambda: gpusort.sort(x, dim=bad), lambda: gpusort.sort_(x.copy(), dim=bad),
                lambda: gpusort.topk(x, 1, dim=bad), lambda: gpusort.kthvalue(x, 1, dim=bad)],
        "axis": [lambda: gpusort.partition(x, 1, axis=bad), lambda: gpusort.argpartition(x, 1, axis=bad)],
        "k": [lambda: gpusort.topk(x, bad), lambda: gpusort.kthvalue(x, bad)],
        "kth": [lambda: gpusort.partition(x, bad), lambda: gpusort.argpartition(x, [0, bad])],
        "intervals": [lambda: gpusort.approx_sort(x.reshape(-1), bad)],
    }
    for argument, tries in calls.items():
        for call in tries:
            with pytest.raises(TypeError, match=f"^{argument}: must be an integer"):
                call()


def test_device_functions_check_output_types():
    """The module's last line of checks: an approx_sort output of another type is refused
    before anything runs (host memory is refused first where there is no GPU)."""
    keys = {"data": (1 << 40, False), "shape": (8,), "typestr": "<f4", "version": 3}
    out = dict(keys, typestr="<i4")
    offsets = {"data": (1 << 41, False), "shape": (3,), "typestr": "<i8", "version": 3}
    with pytest.raises(TypeError, match="out_keys: must have the keys' type"):
        _ext.approx_sort_device(keys, out, offsets, 2, False, 0, None)


def test_the_distributed_list_call_reads_each_shards_values():
    """_gpusort_dist.sort_shards (gpusort.distributed.sort of a list of CUDA shards) reads shard
    i's values from the list: it once cast each to None, a TypeError for every call with
    values. Read before any GPU work: a values count unlike the keys' is named."""
    from gpusort._extension import dist_module

    if dist_module() is None:
        pytest.skip("gpusort was built without gpusort::dist (NCCL)")
    keys = (0, "<i4", 3, 0)
    with pytest.raises(ValueError, match="values: a contiguous array of one row a key"):
        dist_module().sort_shards([keys], [(0, "<i8", 2, 0)], False, True, "last", False, [0])
