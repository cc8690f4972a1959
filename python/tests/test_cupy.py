"""gpusort on CuPy arrays against cupy.sort: results of CuPy's type, CuPy's current
stream, sort_ in place. Skipped without CuPy or a GPU."""

import types

import numpy as np
import pytest

cupy = pytest.importorskip("cupy")
try:
    if cupy.cuda.runtime.getDeviceCount() == 0:
        raise RuntimeError
except Exception:
    pytest.skip("no CUDA device", allow_module_level=True)

import gpusort  # noqa: E402
from reference import DTYPES, check_sorted, random_keys, same_bits  # noqa: E402

two_gpus = pytest.mark.skipif(cupy.cuda.runtime.getDeviceCount() < 2, reason="needs two GPUs")


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", [0, 1, 1025, 2**20])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sort(dtype, n, descending, rng):
    x_host = random_keys(dtype, n, rng)
    x = cupy.asarray(x_host)
    values, indices = gpusort.sort(x, descending=descending)
    assert isinstance(values, cupy.ndarray) and isinstance(indices, cupy.ndarray)
    check_sorted(x_host, values.get(), indices.get(), descending)
    expected = cupy.sort(x)
    assert same_bits((expected[::-1] if descending else expected).get(), values.get())


def test_rows_and_topk(rng):
    x_host = random_keys("float32", 128 * 256, rng).reshape(128, 256)
    x = cupy.asarray(x_host)
    values, indices = gpusort.sort(x)
    assert cupy.array_equal(values, cupy.sort(x, axis=-1))
    check_sorted(x_host, values.get(), indices.get())
    top, where = gpusort.topk(x[0].copy(), 10)
    assert cupy.array_equal(top, cupy.sort(x[0])[::-1][:10])


def test_sort_in_place_on_a_side_stream(rng):
    x_host = random_keys("int32", 2**20, rng)
    x = cupy.asarray(x_host)
    pointer = x.data.ptr
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        assert gpusort.sort_(x, algorithm="bitonic") is x
    stream.synchronize()
    assert x.data.ptr == pointer
    assert np.array_equal(x.get(), np.sort(x_host))


@two_gpus
def test_arrays_of_another_device_are_sorted_there(rng):
    """Results live, and the work runs, on the array's device, whichever is current: CuPy
    copies to the current device (issue 70: the results came back on cuda:0)."""
    x_host = random_keys("float32", 64 * 300, rng).reshape(64, 300)
    with cupy.cuda.Device(1):
        x = cupy.asarray(x_host)
        offsets = cupy.asarray([0, 5000, x.size])
        y = x.copy()
    with cupy.cuda.Device(0):
        results = {
            "sort": gpusort.sort(x),
            "sort strided": gpusort.sort(x[:, ::-1]),
            "sort dim 0": gpusort.sort(x, dim=0),
            "sort stable": gpusort.sort(x, stable=True),
            "topk": gpusort.topk(x, 5),
            "topk strided": gpusort.topk(x[::-1], 5),
            "kthvalue": gpusort.kthvalue(x, 3),
            "partition": (gpusort.partition(x, 3),),
            "argpartition": (gpusort.argpartition(x, 3, axis=0),),
            "sort_segmented": gpusort.sort_segmented(x.reshape(-1), offsets),
            "approx_sort": gpusort.approx_sort(x.reshape(-1), 16),
        }
        gpusort.sort_(y[:, ::2], dim=0)  # through a copy, written back
        gpusort.sort_(types.SimpleNamespace(__cuda_array_interface__=y[0].__cuda_array_interface__))
        assert cupy.cuda.runtime.getDevice() == 0
    for name, arrays in results.items():
        assert all(a.device.id == 1 for a in arrays), name
    values, indices = results["sort"]
    check_sorted(x_host, values.get(), indices.get())
    assert np.array_equal(results["sort strided"].values.get(), values.get())
    assert np.array_equal(results["sort dim 0"].values.get(), np.sort(x_host, axis=0))
    assert np.array_equal(results["topk strided"].values.get(), -np.sort(-x_host[::-1])[:, :5])
    assert np.array_equal(results["kthvalue"].values.get(), np.sort(x_host)[:, 2])
    assert np.array_equal(np.sort(results["approx_sort"].values.get()), np.sort(x_host.reshape(-1)))
    want = x_host.copy()
    want[:, ::2] = np.sort(want[:, ::2], axis=0)
    want[0] = np.sort(want[0])
    y.device.synchronize()
    assert np.array_equal(y.get(), want)
