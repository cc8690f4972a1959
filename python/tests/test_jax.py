"""gpusort on JAX arrays: sorted into new JAX arrays through DLPack (the results allocated by
PyTorch or CuPy, whichever is installed, and handed over without copies); JAX arrays are
immutable, so sort_ refuses them and leaves them as they were. Skipped without JAX."""

import os

import numpy as np
import pytest

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with torch
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import gpusort  # noqa: E402
from reference import check_sorted, random_keys  # noqa: E402


def _devices():
    found = []
    for platform in ("gpu", "cpu"):
        try:
            found.append(jax.devices(platform)[0])
        except RuntimeError:
            pass
    return found


@pytest.fixture(params=_devices(), ids=lambda d: d.platform)
def device(request):
    return request.param


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_sort_returns_new_jax_arrays(device, dtype, rng):
    x_host = random_keys(dtype, 10_000, rng)
    x = jax.device_put(x_host, device)
    values, indices = gpusort.sort(x)
    assert isinstance(values, jax.Array) and isinstance(indices, jax.Array)
    assert values.devices() == {device}
    # int64 indices arrive as int32 unless jax_enable_x64 is set: JAX's own rule.
    check_sorted(x_host, np.asarray(values), np.asarray(indices).astype(np.int64))
    assert np.array_equal(np.asarray(x), x_host), "the input changed"
    top = gpusort.topk(x.reshape(100, 100), 7)
    assert np.array_equal(np.asarray(top.values), -np.sort(-x_host.reshape(100, 100), axis=-1)[:, :7])
    assert np.array_equal(np.asarray(gpusort.argsort(x, stable=True)), np.argsort(x_host, kind="stable"))


def test_sort_in_place_refuses_immutable_arrays(device):
    x = jax.device_put(np.arange(100, 0, -1, dtype=np.int32), device)
    with pytest.raises(ValueError, match="immutable"):
        gpusort.sort_(x)
    assert np.array_equal(np.asarray(x), np.arange(100, 0, -1))


def test_read_only_cuda_array_interface_is_refused(rng):
    """What JAX says of its buffers (data[1] = True): the module refuses to write them."""
    gpu = [d for d in _devices() if d.platform == "gpu"]
    if not gpu:
        pytest.skip("no JAX GPU device")
    x = jax.device_put(np.arange(50, 0, -1, dtype=np.float32), gpu[0])
    iface = x.__cuda_array_interface__
    assert iface["data"][1] is True

    class Interface:
        __cuda_array_interface__ = iface

    with pytest.raises(ValueError, match="read-only"):
        gpusort.sort_(Interface())
    assert np.array_equal(np.asarray(x), np.arange(50, 0, -1))
