"""Arrays that must not be misread or written where they may not be (issue 44): DLPack 1.0's
versioned capsules and their read-only flag, negative dimensions and extents, CUDA array
interface streams that name no stream, big-endian and masked NumPy arrays. CPU tests: the
module reads these descriptions before any data moves."""

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


def test_masked_arrays_are_refused():
    x = np.ma.masked_array(np.array([3, 1, 2], dtype=np.int32), mask=[False, True, False])
    for call in (gpusort.sort, gpusort.sort_):
        with pytest.raises(TypeError, match="masked arrays"):
            call(x)
    assert np.array_equal(x.data, [3, 1, 2])


def test_device_functions_check_output_types():
    """The module's last line of checks: an approx_sort output of another type is refused
    before anything runs (host memory is refused first where there is no GPU)."""
    keys = {"data": (1 << 40, False), "shape": (8,), "typestr": "<f4", "version": 3}
    out = dict(keys, typestr="<i4")
    offsets = {"data": (1 << 41, False), "shape": (3,), "typestr": "<i8", "version": 3}
    with pytest.raises(TypeError, match="out_keys: must have the keys' type"):
        _ext.approx_sort_device(keys, out, offsets, 2, False, 0, None)
