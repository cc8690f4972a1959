"""gpusort on CuPy arrays against cupy.sort: results of CuPy's type, CuPy's current
stream, sort_ in place. Skipped without CuPy or a GPU."""

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
