"""The order gpusort promises, computed with NumPy: integers by value; floats in a total
order with -0.0 before +0.0 and NaNs (of either sign, all equal) after every number in both
orders, or before them with nans="first"."""

import numpy as np

DTYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64")
# The narrow dtypes the sorts and topk take (gpusort.NARROW_KEY_DTYPES); NumPy has no bfloat16.
NARROW_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "float16")


def order_key(a):
    """uint64 keys whose unsigned order is gpusort's ascending order of a."""
    a = np.asarray(a)
    kind, bits = a.dtype.kind, a.dtype.itemsize * 8
    if kind in "ub":
        return a.astype(np.uint64)
    if kind == "i":
        return a.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)
    raw = a.view({16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]).astype(np.uint64)
    sign = np.uint64(1 << (bits - 1))
    mask = np.uint64((1 << bits) - 1)
    key = np.where(raw & sign, ~raw & mask, raw | sign)
    return np.where(np.isnan(a), mask, key).astype(np.uint64)


def stable_argsort(a, descending=False, nans="last"):
    """The indices a stable sort gives, along the last axis: NaNs (all equal) after every
    number in both orders (nans="last") or before them ("first")."""
    a = np.asarray(a)
    key = order_key(a)
    key = ~key if descending else key
    if a.dtype.kind != "f":
        return np.argsort(key, axis=-1, kind="stable")
    nan = np.isnan(a)
    key = np.where(nan, np.uint64(0), key)
    group = nan if nans == "last" else ~nan
    return np.lexsort((key, group), axis=-1)


def random_keys(dtype, n, rng, distinct=None):
    """n keys of dtype; distinct limits them to that many values (for ties)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind == "f":
        keys = (rng.standard_normal(n) * 1000).astype(dtype)
        if distinct:
            keys = rng.integers(0, distinct, n).astype(dtype)
        return keys
    info = np.iinfo(dtype)
    high = min(distinct, info.max) if distinct else info.max  # no more values than the type has
    low = 0 if distinct else info.min
    return rng.integers(low, high, n, dtype=dtype, endpoint=not distinct)


def float_specials(dtype, rng, n=200):
    """Floats with NaNs, ±0, ±inf and denormals scattered through them."""
    dtype = np.dtype(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    special = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, tiny, -tiny, 1.0, -1.0], dtype)
    keys = np.concatenate([np.repeat(special, 5), random_keys(dtype, n, rng)]).astype(dtype)
    rng.shuffle(keys)
    return keys


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    view = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return np.array_equal(a.view(view), b.view(view))


def check_sorted(x, values, indices, descending=False, stable=False, nans="last"):
    """values/indices (NumPy) are a sort of x along its last axis in gpusort's order; with
    stable, the indices are exactly a stable sort's."""
    x = np.asarray(x)
    ref = stable_argsort(x, descending, nans)
    expected = np.take_along_axis(order_key(x), ref, axis=-1)
    assert np.array_equal(order_key(values), expected), "values out of order"
    assert indices.dtype == np.int64
    assert same_bits(np.take_along_axis(x, indices, axis=-1), values), "indices do not give values"
    assert np.array_equal(np.sort(indices, axis=-1), np.broadcast_to(np.arange(x.shape[-1]), x.shape))
    if stable:
        assert np.array_equal(indices, ref), "not stable"
