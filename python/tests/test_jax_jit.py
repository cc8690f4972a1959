"""gpusort.jax under jax.jit (issue 73): the sort as an XLA FFI call, against NumPy's stable
sort, on every key type JAX has, rows and one array, both orders and NaN placements, traced
once and called again. Skipped without JAX, without a GPU for it, or where the module was built
without JAX's FFI headers."""

import os

import numpy as np
import pytest

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with torch
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import gpusort.jax  # noqa: E402
from reference import random_keys  # noqa: E402


def _gpu():
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        return None


pytestmark = [
    pytest.mark.skipif(_gpu() is None, reason="JAX has no GPU here"),
    pytest.mark.skipif(not gpusort.jax.available(), reason="the module has no XLA FFI handlers"),
]

DTYPES = ["float32", "float64", "int32", "uint32", "int64", "uint64", "int16", "uint8",
          "float16", "bfloat16"]


def _expected(a, descending, nans):
    """NumPy's stable order along the last axis, NaNs placed as asked."""
    keys = a.astype(np.float64) if a.dtype.name == "bfloat16" else a
    if np.dtype(keys.dtype).kind == "f":
        nan = np.isnan(keys)
        # Sort by (NaN group, value): NaNs last or first in both directions.
        value = np.where(nan, 0, -keys if descending else keys)
        group = nan if nans == "last" else ~nan
        order = np.lexsort((value, group), axis=-1)
    else:
        value = keys.astype(np.float64) if keys.dtype.kind == "u" else keys
        order = np.argsort(-value if descending else value, axis=-1, kind="stable")
    return np.take_along_axis(a, order, -1), order


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (1000,), (2**16 + 3,), (37, 129), (4, 3, 64)])
def test_jit_sort_matches_a_stable_sort(dtype, shape, rng):
    if dtype in ("int64", "uint64", "float64") and not jax.config.jax_enable_x64:
        pytest.skip("64-bit types need jax_enable_x64")
    n = int(np.prod(shape))
    a = random_keys(dtype if dtype != "bfloat16" else "float32", n, rng, distinct=max(2, n // 3))
    if a.dtype.kind == "f":
        a[::17] = np.nan  # NaNs among the numbers
    a = a.reshape(shape)
    if dtype == "bfloat16":
        a = a.astype(jnp.bfloat16)
    x = jax.device_put(jnp.asarray(a), _gpu())
    for descending in (False, True):
        for nans in ("last", "first"):
            sort = jax.jit(lambda v: gpusort.jax.sort(v, descending=descending, stable=True,
                                                      nans=nans))
            values, indices = sort(x)
            values, indices = sort(x)  # traced once, called again
            want_values, want_order = _expected(np.asarray(a), descending, nans)
            got = np.asarray(values)
            assert got.dtype == np.asarray(a).dtype
            # As float64 (bfloat16 and float16 exactly), NaN equal to NaN.
            np.testing.assert_array_equal(got.astype(np.float64), want_values.astype(np.float64))
            assert np.array_equal(np.asarray(indices), want_order)


def test_jit_sort_along_another_dim_and_argsort(rng):
    a = rng.integers(-50, 50, (6, 40, 5)).astype(np.int32)
    x = jnp.asarray(a)
    values, indices = jax.jit(lambda v: gpusort.jax.sort(v, dim=1, stable=True))(x)
    assert np.array_equal(np.asarray(values), np.sort(a, axis=1, kind="stable"))
    assert np.array_equal(np.asarray(indices), np.argsort(a, axis=1, kind="stable"))
    order = jax.jit(lambda v: gpusort.jax.argsort(v, dim=0, descending=True, stable=True))(x)
    assert np.array_equal(np.asarray(order), np.argsort(-a, axis=0, kind="stable"))


def test_vmap_sorts_every_row(rng):
    a = rng.integers(-50, 50, (5, 7, 30)).astype(np.int32)
    x = jnp.asarray(a)
    values, indices = jax.jit(jax.vmap(lambda v: gpusort.jax.sort(v, stable=True)))(x)
    assert np.array_equal(np.asarray(values), np.sort(a, axis=-1, kind="stable"))
    assert np.array_equal(np.asarray(indices), np.argsort(a, axis=-1, kind="stable"))
    order = jax.vmap(lambda v: gpusort.jax.argsort(v, dim=0, stable=True))(x)
    assert np.array_equal(np.asarray(order), np.argsort(a, axis=1, kind="stable"))


def test_refusals():
    with pytest.raises(ValueError, match="nans"):
        gpusort.jax.sort(jnp.arange(3), nans="middle")
    with pytest.raises(TypeError, match="descending"):
        gpusort.jax.sort(jnp.arange(3), descending=1)
    with pytest.raises(ValueError, match="0-d"):
        gpusort.jax.sort(jnp.asarray(1.0))


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32", "int16", "float16", "float64",
                                   "int64"])
@pytest.mark.parametrize("shape,k", [((1000,), 1), ((1000,), 37), ((33, 257), 16),
                                     ((4, 2, 4096), 100), ((5, 9), 9), ((3, 8), 0)])
def test_jit_topk_matches_jax_lax_top_k(dtype, shape, k, rng):
    if dtype in ("int64", "float64") and not jax.config.jax_enable_x64:
        pytest.skip("64-bit types need jax_enable_x64")
    n = int(np.prod(shape))
    a = random_keys(dtype, n, rng, distinct=max(2, n // 2)).reshape(shape)
    x = jax.device_put(jnp.asarray(a), _gpu())
    for largest in (True, False):
        top = jax.jit(lambda v: gpusort.jax.topk(v, k, largest=largest))
        values, indices = top(x)
        values, indices = top(x)  # traced once, called again
        assert values.shape == shape[:-1] + (k,) and indices.shape == values.shape
        # The k keys in order: NumPy's sort of each row, largest first where asked.
        row_sorted = np.sort(a, axis=-1)
        want = row_sorted[..., ::-1][..., :k] if largest else row_sorted[..., :k]
        got = np.asarray(values)
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
        # Each index points at its key (ties may take any of the equal keys' columns).
        picked = np.take_along_axis(a, np.asarray(indices).astype(np.int64), -1)
        np.testing.assert_array_equal(picked.astype(np.float64), got.astype(np.float64))
        for row in np.asarray(indices).reshape(-1, k) if k else []:
            assert len(set(row.tolist())) == k, "a column taken twice"


def test_jit_topk_along_another_dim_and_nans_first_when_largest(rng):
    a = rng.standard_normal((6, 40, 5)).astype(np.float32)
    a[2, 7, 1] = np.nan
    x = jnp.asarray(a)
    values, indices = jax.jit(lambda v: gpusort.jax.topk(v, 3, dim=1))(x)
    assert values.shape == (6, 3, 5)
    assert np.isnan(np.asarray(values)[2, 0, 1]) and int(np.asarray(indices)[2, 0, 1]) == 7
    want = -np.sort(-np.nan_to_num(a, nan=np.inf), axis=1)[:, :3]
    np.testing.assert_array_equal(np.nan_to_num(np.asarray(values), nan=np.inf), want)
    with pytest.raises(ValueError, match="k"):
        gpusort.jax.topk(x, 41, dim=1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint32", "int64", "int8",
                                   "float16"])
@pytest.mark.parametrize("n,distinct", [(0, 1), (1, 1), (1000, 3), (2**16 + 3, 500),
                                        (5000, 5000)])
def test_jit_unique_matches_jnp_unique(dtype, n, distinct, rng):
    if dtype in ("int64", "float64") and not jax.config.jax_enable_x64:
        pytest.skip("64-bit types need jax_enable_x64")
    a = random_keys(dtype, n, rng, distinct=min(distinct, 100) if dtype == "int8" else distinct)
    if a.dtype.kind == "f" and n > 10:
        a[::7] = np.nan  # NaNs: one distinct key
        a[1::9] = -0.0   # -0.0 and +0.0: one key
        a[2::9] = 0.0
    x = jax.device_put(jnp.asarray(a), _gpu())
    want_values, want_counts = np.unique(a, return_counts=True, equal_nan=True)
    m = len(want_values)
    for size in (0, 1, m, m + 5):
        call = jax.jit(lambda v: gpusort.jax.unique(v, size=size, return_counts=True))
        values, counts = call(x)
        values, counts = call(x)  # traced once, called again
        # The first `size` distinct keys, then the smallest key (0 for no keys) with count 0.
        kept = min(size, m)
        fill = want_values[0] if m else a.dtype.type(0)
        expect_values = np.concatenate([want_values[:kept], np.full(size - kept, fill, a.dtype)])
        expect_counts = np.concatenate([want_counts[:kept], np.zeros(size - kept, np.int64)])
        assert values.shape == (size,) and values.dtype == a.dtype
        np.testing.assert_array_equal(np.asarray(values).astype(np.float64),
                                      expect_values.astype(np.float64))
        np.testing.assert_array_equal(np.asarray(counts), expect_counts)
        alone = jax.jit(lambda v: gpusort.jax.unique(v, size=size))(x)
        np.testing.assert_array_equal(np.asarray(alone).astype(np.float64),
                                      expect_values.astype(np.float64))
    filled = jax.jit(lambda v: gpusort.jax.unique(v, size=m + 2, fill_value=7))(x)
    assert np.asarray(filled)[m:].tolist() == [7, 7]
