"""gpusort on NumPy arrays against NumPy: on the GPU when there is one, else on the CPU
backend (CI). Every key type, sizes around powers of two, NaN and ±0 order, stability,
descending, rows, segments, top-k, approximate sort, and errors before any data moves."""

import shutil
import subprocess
import sys

import numpy as np
import pytest

import gpusort
from reference import (DTYPES, NARROW_DTYPES, check_sorted, float_specials, order_key, random_keys,
                       same_bits)

SIZES = [0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4097]
FLOATS = ("float32", "float64")


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sort(dtype, n, descending, rng):
    x = random_keys(dtype, n, rng)
    before = x.copy()
    values, indices = gpusort.sort(x, descending=descending)
    assert isinstance(values, np.ndarray) and values.dtype == x.dtype and values.shape == x.shape
    check_sorted(x, values, indices, descending)
    assert same_bits(x, before), "the input changed"
    assert np.array_equal(gpusort.argsort(x, descending=descending), indices)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", [0, 1, 33, 1025, 4097])
@pytest.mark.parametrize("dtype", NARROW_DTYPES)
def test_narrow_dtypes_sort_at_their_own_width(dtype, n, descending, rng):
    x = random_keys(dtype, n, rng)
    before = x.copy()
    for stable in (False, True):
        values, indices = gpusort.sort(x, descending=descending, stable=stable)
        assert values.dtype == x.dtype and indices.dtype == np.int64
        check_sorted(x, values, indices, descending, stable=stable)
    ties = random_keys(dtype, n, rng, distinct=3 if dtype != "bool" else None)
    values, indices = gpusort.sort(ties, descending=descending, stable=True)
    check_sorted(ties, values, indices, descending, stable=True)
    assert same_bits(x, before), "the input changed"
    y = x.copy()
    gpusort.sort_(y, descending=descending)
    assert same_bits(y, gpusort.sort(x, descending=descending).values)
    k = min(n, 5)
    top, where = gpusort.topk(x, k, largest=descending)
    assert top.dtype == x.dtype and same_bits(x[where], top)
    assert np.array_equal(order_key(top), order_key(gpusort.sort(x, descending=descending).values[:k]))


@pytest.mark.parametrize("nans", ["last", "first"])
@pytest.mark.parametrize("descending", [False, True])
def test_float16_specials_keep_their_bits(descending, nans, rng):
    x = float_specials("float16", rng)
    x[::7] = np.array(0x7E01, np.uint16).view(np.float16)  # a NaN with a payload
    x[3::11] = np.array(0xFC03, np.uint16).view(np.float16)  # and a negative one
    values, indices = gpusort.sort(x, descending=descending, stable=True, nans=nans)
    check_sorted(x, values, indices, descending, stable=True, nans=nans)
    segments = np.array([0, 10, 10, 150, x.size], dtype=np.int64)
    values, indices = gpusort.sort_segmented(x, segments, descending=descending, nans=nans)
    assert values.dtype == np.float16 and same_bits(x[indices], values)
    for b, e in zip(segments[:-1], segments[1:]):
        check_sorted(x[b:e], values[b:e], indices[b:e] - b, descending, nans=nans)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_and_signed_zero_order(dtype, descending, rng):
    x = float_specials(dtype, rng)
    values, indices = gpusort.sort(x, descending=descending)
    check_sorted(x, values, indices, descending)
    nans = np.isnan(values)
    count = int(nans.sum())
    assert nans[len(values) - count:].all()  # NaNs last in both orders (NumPy's)
    zeros = values[values == 0]
    negative = np.signbit(zeros)
    # -0.0 before +0.0 ascending, after it descending.
    assert np.array_equal(negative, np.sort(negative)[::-1] if not descending else np.sort(negative))
    if not descending:
        assert np.array_equal(values[~nans], np.sort(x)[: len(values) - count])


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", [1, 33, 1000, 5000])
@pytest.mark.parametrize("dtype", DTYPES)
def test_stable(dtype, n, descending, rng):
    x = random_keys(dtype, n, rng, distinct=5)
    values, indices = gpusort.sort(x, descending=descending, stable=True)
    check_sorted(x, values, indices, descending, stable=True)
    if not descending:
        assert np.array_equal(indices, np.argsort(x, kind="stable"))


@pytest.mark.parametrize("algorithm", ["cub_merge", "cub_radix", "adaptive_bitonic"])
def test_stable_algorithms(algorithm, rng):
    x = random_keys("int32", 777, rng, distinct=7)
    values, indices = gpusort.sort(x, stable=True, algorithm=algorithm)
    check_sorted(x, values, indices, stable=True)


@pytest.mark.parametrize("algorithm", gpusort.ALGORITHMS)
def test_every_algorithm(algorithm, rng):
    x = random_keys("uint32", 3001, rng)
    check_sorted(x, *gpusort.sort(x, algorithm=algorithm))


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("shape", [(5, 33), (3, 1), (1, 17), (0, 4), (4, 0), (2, 3, 17), (64, 256)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rows(dtype, shape, descending, stable, rng):
    x = random_keys(dtype, int(np.prod(shape)), rng, distinct=9 if stable else None).reshape(shape)
    values, indices = gpusort.sort(x, descending=descending, stable=stable)
    assert values.shape == shape and indices.shape == shape
    check_sorted(x, values, indices, descending, stable)


@pytest.mark.parametrize("algorithm", ["automatic", "bitonic", "adaptive_bitonic"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_in_place(dtype, algorithm, rng):
    x = random_keys(dtype, 1000, rng)
    address = x.ctypes.data
    expected = np.take_along_axis(x, np.argsort(order_key(x), kind="stable"), -1)
    assert gpusort.sort_(x, algorithm=algorithm) is x
    assert x.ctypes.data == address
    assert same_bits(x, expected)


@pytest.mark.skipif(not gpusort.gpu_available(), reason="the CPU backend sorts 2^28 keys slowly")
@pytest.mark.parametrize("descending", [False, True])
def test_sort_in_place_of_a_gibibyte_goes_through_the_host_pipeline(descending, rng):
    """1 GiB of keys alone: the host-array sort's pinned pipeline (every GPU past one's memory)."""
    x = rng.integers(-500, 500, 2**28, dtype=np.int32)
    counts = np.bincount(x + 500, minlength=1000)
    assert gpusort.sort_(x, descending=descending) is x
    assert bool((x[1:] <= x[:-1]).all() if descending else (x[1:] >= x[:-1]).all())
    assert np.array_equal(np.bincount(x + 500, minlength=1000), counts)


@pytest.mark.skipif(not gpusort.gpu_available(), reason="the CPU backend sorts 2^29 keys slowly")
def test_sort_in_place_of_a_gibibyte_of_float16_goes_through_the_host_pipeline(rng):
    """1 GiB of float16 (every bit pattern, NaN payloads too): the pipeline, as 32-bit codes."""
    bits = rng.integers(0, 2**16, 2**29, dtype=np.uint16)
    counts = np.bincount(bits, minlength=2**16)
    x = bits.view(np.float16)
    nans = int(np.isnan(x).sum())
    assert gpusort.sort_(x) is x
    numbers = x[: x.size - nans]
    assert bool(np.isnan(x[x.size - nans:]).all()) and not bool(np.isnan(numbers).any())
    assert bool((numbers[1:] >= numbers[:-1]).all())
    assert np.array_equal(np.bincount(bits, minlength=2**16), counts)  # the same bits


def test_sort_in_place_rows_descending(rng):
    x = random_keys("float32", 40 * 50, rng).reshape(40, 50)
    expected = np.take_along_axis(x, np.argsort(~order_key(x), axis=-1, kind="stable"), -1)
    gpusort.sort_(x, descending=True)
    assert same_bits(x, expected)


@pytest.mark.parametrize("offset_dtype", ["int32", "int64"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_segmented(dtype, descending, offset_dtype, rng):
    n = 3000
    x = random_keys(dtype, n, rng)
    offsets = np.array([0, 0, 1, 3, 3, 100, 1024, 1500, 2900], dtype=offset_dtype)
    values, indices = gpusort.sort_segmented(x, offsets, descending=descending)
    for begin, end in zip(offsets[:-1], offsets[1:]):
        part = x[begin:end]
        check_sorted(part, values[begin:end], indices[begin:end] - begin, descending)
    # Keys after the last segment keep their place.
    assert same_bits(values[2900:], x[2900:])
    assert np.array_equal(indices[2900:], np.arange(2900, n))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 5, 1000])
@pytest.mark.parametrize("dtype", DTYPES)
def test_topk(dtype, k, largest, rng):
    x = random_keys(dtype, 1000, rng)
    values, indices = gpusort.topk(x, k, largest=largest)
    order = np.argsort(~order_key(x) if largest else order_key(x), kind="stable")[:k]
    assert values.shape == (k,) and indices.dtype == np.int64
    assert np.array_equal(order_key(values), order_key(x[order]))
    assert same_bits(x[indices], values)


def test_topk_nans_count_as_largest(rng):
    x = float_specials("float32", rng)
    values, _ = gpusort.topk(x, 10)
    assert np.isnan(values[: int(np.isnan(x).sum())]).all()


def test_topk_rows(rng):
    x = random_keys("float64", 8 * 100, rng).reshape(8, 100)
    values, indices = gpusort.topk(x, 7, largest=False)
    assert values.shape == (8, 7)
    assert same_bits(values, np.sort(x, axis=-1)[:, :7])
    assert same_bits(np.take_along_axis(x, indices, -1), values)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_float16_through_float32(largest, rng):
    x = rng.standard_normal((3, 3000)).astype(np.float16)
    x[0, :5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    values, indices = gpusort.topk(x, 100, largest=largest)
    assert values.dtype == np.float16 and indices.dtype == np.int64
    wide = x.astype(np.float32)
    order = np.argsort(-wide if largest else wide, axis=-1, kind="stable")[:, :100]
    if largest:  # NaNs count as the largest keys
        order[0] = np.concatenate(([0], np.argsort(-wide[0, 1:], kind="stable")[:99] + 1))
    want = np.take_along_axis(x, order, -1)
    assert np.array_equal(np.sort(values, axis=-1), np.sort(want, axis=-1), equal_nan=True)
    assert np.array_equal(np.take_along_axis(x, indices, -1).view(np.uint16), values.view(np.uint16))


def check_partitioned(x, out, kths, axis):
    """out is a partition of x along axis at every kth (NumPy's contract, in gpusort's
    order: NaNs largest)."""
    key = np.moveaxis(order_key(x), axis, -1)
    got = np.moveaxis(order_key(out), axis, -1)
    assert np.array_equal(np.sort(got, axis=-1), np.sort(key, axis=-1)), "not a permutation"
    for j in kths:
        j %= key.shape[-1]
        assert np.array_equal(got[..., j], np.sort(key, axis=-1)[..., j])
        assert (got[..., :j] <= got[..., j : j + 1]).all() and (got[..., j + 1 :] >= got[..., j : j + 1]).all()


@pytest.mark.parametrize("kth", [0, 5, -1, [2, 40], 99])
@pytest.mark.parametrize("dtype", DTYPES + ("int8", "float16", "bool"))
def test_partition_and_argpartition(dtype, kth, rng):
    x = random_keys(dtype, 3 * 100, rng).reshape(3, 100)
    if dtype.startswith("float"):
        x[0, ::9] = np.nan
    kths = kth if isinstance(kth, list) else [kth]
    for axis in (-1, 1):
        out = gpusort.partition(x, kth, axis=axis)
        assert out.dtype == x.dtype and out.shape == x.shape
        check_partitioned(x, out, kths, axis)
        where = gpusort.argpartition(x, kth, axis=axis)
        assert where.dtype == np.int64
        assert same_bits(np.take_along_axis(x, where, axis), out)
    down = gpusort.partition(x, [0, 2], axis=0)
    check_partitioned(x, down, [0, 2], 0)
    flat = gpusort.partition(x, kths[0] % 300 if isinstance(kth, int) else 7, axis=None)
    assert flat.shape == (300,)
    check_partitioned(x.reshape(-1), flat, [kths[0] % 300 if isinstance(kth, int) else 7], 0)


def test_partition_of_one_kth_takes_the_smallest_in_any_order(monkeypatch, rng):
    """One kth asks topk for the smallest keys in any order (a GPU's select gives them
    unordered; here they are shuffled): partition still puts the largest of them at kth,
    -0.0 below +0.0 and NaNs largest as the library orders them."""
    from gpusort import _core

    real = _core.topk

    def shuffled(x, k, dim, largest, in_order=True):
        values, indices = real(x, k, dim, largest, in_order)
        if in_order:
            return values, indices
        order = rng.permutation(k)
        return np.take(values, order, axis=dim), np.take(indices, order, axis=dim)

    monkeypatch.setattr(_core, "topk", shuffled)
    x = random_keys("float32", 4 * 100, rng).reshape(4, 100)
    x[0, ::9] = np.nan
    x[1, :50] = -0.0
    x[1, 50:] = 0.0
    x[2] = 7.0
    for axis, kths in ((-1, (0, 1, 49, 50, 98, 99)), (0, (0, 1, 3))):
        for kth in kths:
            out = gpusort.partition(x, kth, axis=axis)
            check_partitioned(x, out, [kth % x.shape[axis]], axis)
            where = gpusort.argpartition(x, kth, axis=axis)
            check_partitioned(x, np.take_along_axis(x, where, axis), [kth % x.shape[axis]], axis)


def test_partition_errors():
    x = np.arange(10, dtype=np.int32)
    with pytest.raises(ValueError, match="kth:"):
        gpusort.partition(x, 10)
    with pytest.raises(ValueError, match="kth:"):
        gpusort.argpartition(x, [])
    with pytest.raises(TypeError, match="kth:"):
        gpusort.partition(x, 1.5)


def test_topk_rows_of_a_transposed_view(rng):
    x = random_keys("int32", 64 * 100, rng).reshape(100, 64).T
    before = x.copy()
    values, indices = gpusort.topk(x, 5)
    assert same_bits(values, -np.sort(-x.astype(np.int64), axis=-1)[:, :5].astype(np.int32))
    assert same_bits(np.take_along_axis(x, indices, -1), values)
    assert same_bits(x, before)


@pytest.mark.parametrize("intervals", [1, 10, 10000])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_approx_sort(dtype, intervals, descending, rng):
    n = 20000
    x = random_keys(dtype, n, rng)
    values, offsets = gpusort.approx_sort(x, intervals, descending=descending)
    assert offsets.dtype == np.int64 and offsets.shape == (intervals + 1,)
    assert offsets[0] == 0 and offsets[-1] == n and np.all(np.diff(offsets) >= 0)
    assert np.array_equal(np.sort(order_key(values)), np.sort(order_key(x)))
    keys = order_key(values).astype(np.float64)  # monotone, enough to compare intervals
    sign = -1 if descending else 1
    for i in range(min(intervals, 50) - 1):
        a, b, c = offsets[i], offsets[i + 1], offsets[i + 2]
        if a < b < c:  # every key of an interval precedes every key of the next
            assert (sign * keys[a:b]).max() <= (sign * keys[b:c]).min()


def test_approx_sort_default_intervals(rng):
    _, offsets = gpusort.approx_sort(random_keys("float32", 50000, rng))
    assert offsets.shape == (10001,)


# ---- errors: raised before any data moves ---------------------------------------------------


def test_unsupported_dtype_names_x():
    x = np.zeros(10, dtype=np.complex64)
    with pytest.raises(TypeError, match="x: dtype complex64"):
        gpusort.sort(x)
    with pytest.raises(TypeError, match="x:"):
        gpusort.sort_(np.zeros(4, dtype=np.float16).view(np.complex64))
    with pytest.raises(TypeError, match="x: dtype float16"):
        gpusort.approx_sort(np.zeros(4, dtype=np.float16))  # the approximate sort: not yet


def test_not_an_array():
    with pytest.raises(TypeError, match="x: expected an array"):
        gpusort.sort([3, 1, 2])


def test_strided_input_is_sorted_and_written_back(rng):
    base = random_keys("int32", 200, rng).reshape(10, 20)
    x = base[:, ::2]
    before = base.copy()
    values, indices = gpusort.sort(x)
    assert np.array_equal(values, np.sort(x, axis=-1)) and values.flags.c_contiguous
    assert np.array_equal(np.take_along_axis(x, indices, -1), values)
    assert np.array_equal(base, before), "sort changed its input"
    assert gpusort.sort_(x) is x
    assert np.array_equal(x, values)
    assert np.array_equal(base[:, 1::2], before[:, 1::2]), "sort_ wrote outside the view"
    y = random_keys("float32", 64, rng)
    check_sorted(y[::3], *gpusort.sort(y[::3]))
    values, offsets = gpusort.approx_sort(y[::2], 4)
    assert np.array_equal(np.sort(values), np.sort(y[::2])) and offsets[-1] == 32


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, -3])
@pytest.mark.parametrize("dtype", ["int32", "float64", "uint64"])
def test_any_dim(dtype, dim, stable, rng):
    x = random_keys(dtype, 5 * 6 * 7, rng, distinct=9).reshape(5, 6, 7)
    values, indices = gpusort.sort(x, dim=dim, stable=stable)
    assert values.shape == x.shape and indices.shape == x.shape
    assert values.flags.c_contiguous and indices.flags.c_contiguous
    assert np.array_equal(values, np.sort(x, axis=dim))
    assert np.array_equal(np.take_along_axis(x, indices, dim), values)
    if stable:
        assert np.array_equal(indices, np.argsort(x, axis=dim, kind="stable"))
    descending = gpusort.argsort(x, dim=dim, descending=True, stable=True)
    assert np.array_equal(np.take_along_axis(x, descending, dim), np.flip(np.sort(x, axis=dim), dim))
    top = gpusort.topk(x, 3, dim=dim)
    assert np.array_equal(top.values, np.take(np.flip(np.sort(x, axis=dim), dim), range(3), axis=dim))
    assert np.array_equal(np.take_along_axis(x, top.indices, dim), top.values)
    y = x.copy()
    assert gpusort.sort_(y, dim=dim) is y
    assert np.array_equal(y, np.sort(x, axis=dim))


def test_dim_errors():
    x = np.zeros((3, 4), dtype=np.int32)
    with pytest.raises(ValueError, match="dim: 2 is out of range"):
        gpusort.sort(x, dim=2)
    with pytest.raises(ValueError, match="dim: -3 is out of range"):
        gpusort.sort_(x, dim=-3)
    with pytest.raises(TypeError, match="dim: must be an integer, got a bool"):
        gpusort.topk(x, 1, dim=True)
    with pytest.raises(ValueError, match="x: a 0-d array"):
        gpusort.sort(np.zeros((), dtype=np.int32))


def test_version_error_and_algorithm_table():
    """__version__ is the project's (the top-level CMakeLists.txt); Error is exported; the
    algorithm table is the library's: every name sorts, and the ones it calls stable are."""
    import pathlib
    import re

    cmake = pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt"
    if cmake.exists():
        version = re.search(r"project\(gpusort VERSION ([0-9.]+)", cmake.read_text()).group(1)
        assert gpusort.__version__ == version
    assert issubclass(gpusort.Error, RuntimeError)
    assert set(gpusort.ALGORITHMS) == set(gpusort.ALGORITHM_TRAITS)
    assert "sample_sort_random" in gpusort.ALGORITHMS and "automatic" in gpusort.ALGORITHMS
    traits = gpusort.ALGORITHM_TRAITS
    assert traits["bitonic"].in_place and not traits["cub_radix"].in_place
    assert all(traits[a].sorts_rows for a in ("automatic", "bitonic", "cub_radix", "cub_merge"))
    assert traits["sample_sort"].takes_comparator and not traits["cub_merge"].takes_comparator
    assert traits["cub_radix"].max_value_bytes == 8 and traits["bitonic"].max_value_bytes == 16


@pytest.mark.parametrize("algorithm", [a for a, t in gpusort.ALGORITHM_TRAITS.items() if t.stable])
def test_algorithms_the_table_calls_stable_are(algorithm, rng):
    x = random_keys("float32", 3000, rng, distinct=6)
    values, indices = gpusort.sort(x, algorithm=algorithm)
    check_sorted(x, values, indices, stable=True)


@pytest.mark.parametrize("algorithm", [a for a, t in gpusort.ALGORITHM_TRAITS.items() if t.sorts_rows])
def test_algorithms_the_table_says_sort_rows_do(algorithm, rng):
    x = random_keys("int64", 7 * 129, rng).reshape(7, 129)
    values, indices = gpusort.sort(x, algorithm=algorithm)
    assert np.array_equal(values, np.sort(x, axis=-1))


def test_algorithm_errors():
    x = np.arange(10, dtype=np.int32)
    with pytest.raises(ValueError, match="algorithm: unknown algorithm 'fastest'"):
        gpusort.sort(x, algorithm="fastest")
    with pytest.raises(ValueError, match="algorithm: 'bitonic' is not stable"):
        gpusort.sort(x, stable=True, algorithm="bitonic")


@pytest.mark.parametrize("k", [1, 2, 500, 1000])
@pytest.mark.parametrize("dtype", DTYPES)
def test_kthvalue(dtype, k, rng):
    x = random_keys(dtype, 1000, rng)
    value, index = gpusort.kthvalue(x, k)
    expected = x[np.argsort(order_key(x), kind="stable")[k - 1]]
    assert same_bits(np.asarray(value), np.asarray(expected))
    assert same_bits(np.asarray(x[index]), np.asarray(value))


def test_kthvalue_rows_dims_keepdim_and_nans(rng):
    x = random_keys("float32", 6 * 50, rng).reshape(6, 50)
    x[2, 7] = np.nan
    for dim, k in ((-1, 3), (1, 50), (0, 6), (0, 1)):
        values, indices = gpusort.kthvalue(x, k, dim=dim)
        sorted_x = np.sort(x, axis=dim)  # NaNs last, as the largest keys
        assert same_bits(values, np.take(sorted_x, k - 1, axis=dim))
        assert indices.dtype == np.int64
        kept = np.expand_dims(indices, dim)
        assert same_bits(np.take_along_axis(x, kept, dim).squeeze(dim), values)
        values_kept, indices_kept = gpusort.kthvalue(x, k, dim=dim, keepdim=True)
        assert same_bits(values_kept, np.expand_dims(values, dim))
        assert np.array_equal(indices_kept, kept)
    assert np.isnan(gpusort.kthvalue(x, 50).values[2])


def test_kthvalue_errors():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match="k: must be at least 1"):
        gpusort.kthvalue(x, 0)
    with pytest.raises(ValueError, match=r"k: must lie in \[0, 10\]"):
        gpusort.kthvalue(x, 11)
    with pytest.raises(TypeError, match="k: must be an integer"):
        gpusort.kthvalue(x, 2.5)


def test_topk_errors():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match=r"k: must lie in \[0, 10\]"):
        gpusort.topk(x, 11)
    with pytest.raises(ValueError, match="k:"):
        gpusort.topk(x, -1)
    with pytest.raises(TypeError, match="k: must be an integer"):
        gpusort.topk(x, 2.5)


def test_segmented_errors(rng):
    x = random_keys("int64", 100, rng)
    before = x.copy()
    with pytest.raises(TypeError, match="offsets: dtype must be int32 or int64"):
        gpusort.sort_segmented(x, np.array([0.0, 10.0]))
    with pytest.raises(ValueError, match=r"offsets: must lie in \[0, 100\]"):
        gpusort.sort_segmented(x, np.array([0, 50, 101]))
    with pytest.raises(ValueError, match="offsets: must not decrease"):
        gpusort.sort_segmented(x, np.array([0, 50, 40, 60]))
    with pytest.raises(ValueError, match="offsets: must be 1-D"):
        gpusort.sort_segmented(x, np.array([], dtype=np.int64))
    with pytest.raises(ValueError, match="x: must be 1-D"):
        gpusort.sort_segmented(x.reshape(10, 10), np.array([0, 10]))
    assert np.array_equal(x, before)


def test_approx_errors():
    x = np.arange(10, dtype=np.uint64)
    with pytest.raises(ValueError, match="intervals: must be an integer from 1"):
        gpusort.approx_sort(x, 0)
    with pytest.raises(ValueError, match="x: must be 1-D"):
        gpusort.approx_sort(x.reshape(2, 5))


def test_read_only_input_is_fine_for_sort_but_not_sort_(rng):
    x = random_keys("float64", 100, rng)
    x.setflags(write=False)
    check_sorted(x, *gpusort.sort(x))
    with pytest.raises(ValueError, match="x: is read-only"):
        gpusort.sort_(x)


# ---- how the module reads arrays: DLPack capsules and __cuda_array_interface__ dicts ------

from gpusort import _ext  # noqa: E402


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_capsule_is_read(dtype):
    x = np.zeros((3, 5), dtype=dtype)
    d = _ext.describe(x.__dlpack__())
    assert d["type"] == dtype and d["item_bytes"] == x.itemsize
    assert d["shape"] == (3, 5) and d["contiguous"] and not d["on_device"]


def test_dlpack_strides():
    x = np.zeros((4, 6), dtype=np.float32)
    assert not _ext.describe(x[:, ::2].__dlpack__())["contiguous"]
    assert not _ext.describe(x.T.__dlpack__())["contiguous"]
    assert _ext.describe(x[1:2].__dlpack__())["contiguous"]
    assert _ext.describe(x[:, 1:2].reshape(4, 1)[:1].__dlpack__())["contiguous"]
    assert _ext.describe(np.zeros(4, np.float16).__dlpack__())["type"] == "float16"
    assert _ext.describe(np.zeros(4, np.complex64).__dlpack__())["type"] == "an unsupported type"


def test_cuda_array_interface_dict_is_read():
    iface = {"data": (1 << 40, False), "shape": (4, 3), "typestr": "<u8", "version": 3}
    d = _ext.describe(iface)
    assert d["type"] == "uint64" and d["shape"] == (4, 3) and d["contiguous"] and d["on_device"]
    assert d["producer_stream"] == -1
    assert not d["read_only"]
    assert _ext.describe(dict(iface, data=(1 << 40, True)))["read_only"]
    d = _ext.describe(dict(iface, strides=(24, 8), stream=7))
    assert d["contiguous"] and d["producer_stream"] == 7
    assert not _ext.describe(dict(iface, strides=(8, 32)))["contiguous"]
    for typestr, name in (("<f2", "float16"), ("|i1", "int8"), ("<u2", "uint16"), ("|b1", "bool"),
                          ("<bf2", "bfloat16"), ("<c8", "an unsupported type"),
                          ("<V2", "an unsupported type")):
        assert _ext.describe(dict(iface, typestr=typestr))["type"] == name
    with pytest.raises(TypeError, match="array: expected a DLPack capsule"):
        _ext.describe([1, 2])


def test_device_functions_refuse_host_memory():
    x = np.arange(4, dtype=np.int32)
    with pytest.raises(TypeError, match="x: expected an array in CUDA device memory"):
        _ext.sort_device(x.__dlpack__(), None, 1, 4, False, "automatic", 0, lambda n: None)


def test_host_dlpack_objects_of_other_libraries_are_refused():
    class HostOnly:
        def __dlpack__(self, stream=None):
            return np.arange(4, dtype=np.int32).__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)  # kDLCPU

    with pytest.raises(TypeError, match="x: a host array must be a NumPy array or a CPU tensor"):
        gpusort.sort_(HostOnly())


@pytest.mark.skipif(shutil.which("nm") is None or sys.platform != "linux", reason="needs nm on Linux")
def test_module_exports_only_its_entry_point():
    """Symbols the module exported (the library's, std templates, a statically linked
    libstdc++) interposed on PyTorch's: `import gpusort; import torch` crashed on the H100
    host. The linker's version script keeps PyInit__gpusort alone."""
    listing = subprocess.run(["nm", "-D", "--defined-only", _ext.__file__], capture_output=True,
                             text=True, check=True).stdout
    assert [line.split()[-1] for line in listing.splitlines() if line.strip()] == ["PyInit__gpusort"]


def test_stable_automatic_choice_and_index_width():
    """stable=True with automatic: one device row through the library's stable plan (gpusort's
    float order; CUB's radix sort alone is not), rows through CUB's segmented merge sort, the
    host through adaptive_bitonic; indices are int32 below 2^31 keys and int64 from there, CUB's
    sorts included (they carry 8-byte values)."""
    choose = gpusort._core._algorithm
    assert choose("automatic", True, 1, True, 1000) == "automatic"
    assert choose("automatic", True, 1, True, 2**31) == "automatic"
    assert choose("automatic", True, 8, True, 1000) == "cub_merge"
    assert choose("automatic", True, 1, False, 1000) == "adaptive_bitonic"
    assert choose("automatic", False, 1, True, 2**31) == "automatic"
    assert gpusort._core._index_dtype("automatic", 2**31 - 1) == "int32"
    assert gpusort._core._index_dtype("adaptive_bitonic", 2**31) == "int64"
    assert gpusort._core._index_dtype("cub_radix", 2**31) == "int64"


@pytest.mark.parametrize("nans", ["last", "first"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("algorithm", gpusort.ALGORITHMS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_placement(dtype, algorithm, descending, nans, rng):
    if algorithm == "cub_radix" and gpusort.gpu_available():
        pytest.skip("cub_radix on a GPU is CUB's own float order, the baseline")
    x = float_specials(dtype, rng, 500)
    values, indices = gpusort.sort(x, descending=descending, algorithm=algorithm, nans=nans)
    check_sorted(x, values, indices, descending, nans=nans)
    nan_count = int(np.isnan(x).sum())
    block = values[-nan_count:] if nans == "last" else values[:nan_count]
    assert np.isnan(block).all()
    rows = np.stack([x, x[::-1]])
    values, indices = gpusort.sort(rows, descending=descending, nans=nans)
    check_sorted(rows, values, indices, descending, nans=nans)
    offsets = np.array([0, 100, 101, 300, x.size], dtype=np.int64)
    values, indices = gpusort.sort_segmented(x, offsets, descending=descending, nans=nans)
    for begin, end in zip(offsets[:-1], offsets[1:]):
        check_sorted(x[begin:end], values[begin:end], indices[begin:end] - begin, descending, nans=nans)


def test_nans_last_in_both_orders_by_default(rng):
    x = float_specials("float32", rng, 100)
    numpy_order = np.sort(x)  # NumPy: NaNs last
    assert np.array_equal(np.isnan(gpusort.sort(x).values), np.isnan(numpy_order))
    descending = gpusort.sort(x, descending=True).values
    assert np.isnan(descending[-int(np.isnan(x).sum()):]).all()
    assert not np.isnan(descending[0])
    y = x.copy()
    gpusort.sort_(y, descending=True, nans="first")
    assert np.isnan(y[0])
    assert np.array_equal(gpusort.argsort(x, nans="first"), gpusort.sort(x, nans="first").indices)


def test_nans_errors():
    x = np.arange(10, dtype=np.float32)
    for call in (gpusort.sort, gpusort.argsort, gpusort.sort_):
        with pytest.raises(ValueError, match="nans: must be 'last' or 'first', got 'middle'"):
            call(x, nans="middle")
    with pytest.raises(ValueError, match="nans: must be"):
        gpusort.sort_segmented(x, np.array([0, 10]), nans=None)


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("shape", [(1000,), (7, 33)])
def test_int32_indices(shape, stable, rng):
    x = random_keys("float32", int(np.prod(shape)), rng, distinct=50).reshape(shape)
    values, indices = gpusort.sort(x, stable=stable, indices_dtype="int32")
    assert indices.dtype == np.int32 and indices.shape == shape
    wide = gpusort.sort(x, stable=stable).indices
    assert wide.dtype == np.int64
    check_sorted(x, values, indices.astype(np.int64), stable=stable)
    if stable:
        assert np.array_equal(indices, wide)
    only = gpusort.argsort(x, descending=True, stable=True, indices_dtype="int32")
    assert only.dtype == np.int32
    assert np.array_equal(only, gpusort.argsort(x, descending=True, stable=True))
    with pytest.raises(ValueError, match="indices_dtype: must be 'int64' or 'int32', got 'int16'"):
        gpusort.sort(x, indices_dtype="int16")
