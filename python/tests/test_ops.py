"""unique, searchsorted, bucketize and lexsort (issue 73) against NumPy's, on NumPy arrays and,
where installed, torch tensors (CPU, and CUDA with a GPU) and CuPy arrays: hostile inputs
(empty, one key, all equal, extremes, NaNs, -0.0), every key type, and the errors."""

import numpy as np
import pytest

import gpusort
from reference import DTYPES, NARROW_DTYPES, float_specials, random_keys


def _libraries():
    libraries = [("numpy", lambda a: a, lambda x: x)]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        host = lambda t: t.detach().cpu().numpy()  # noqa: E731
        libraries.append(("torch-cpu", lambda a: torch.from_numpy(np.ascontiguousarray(a)), host))
        if torch.cuda.is_available():
            libraries.append(("torch-cuda", lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda(), host))
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            libraries.append(("cupy", cupy.asarray, cupy.asnumpy))
    except Exception:  # no CuPy, or no GPU for it
        pass
    return libraries


LIBRARIES = _libraries()
# torch has no uint32/uint64 arithmetic on every device; it takes the other key types.
TORCH_DTYPES = ("int32", "int64", "float32", "float64", "bool", "int8", "uint8", "int16", "float16")


@pytest.fixture(params=LIBRARIES, ids=[name for name, _, _ in LIBRARIES])
def lib(request):
    return request.param


def _skip_unsupported(lib, dtype):
    if lib[0].startswith("torch") and dtype not in TORCH_DTYPES:
        pytest.skip(f"torch lacks {dtype} arithmetic")


def _keys(dtype, n, rng, shape):
    """Keys of many shapes: random, few distinct, and floats with NaNs, ±0, ±inf."""
    if shape == "few":
        return random_keys(dtype, n, rng, distinct=3)
    if shape == "specials" and np.dtype(dtype).kind == "f":
        return float_specials(dtype, rng, n)[:n]
    if shape == "equal":
        return np.repeat(random_keys(dtype, 1, rng), n)
    return random_keys(dtype, n, rng)


def _same(a, b):
    """Equal arrays, NaN equal to NaN and -0.0 to +0.0."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


@pytest.mark.parametrize("shape", ["random", "few", "specials", "equal"])
@pytest.mark.parametrize("n", [0, 1, 2, 1000, 2**16 + 3])
@pytest.mark.parametrize("dtype", DTYPES + NARROW_DTYPES)
def test_unique_matches_numpy(lib, dtype, n, shape, rng):
    _skip_unsupported(lib, dtype)
    name, to, back = lib
    a = _keys(dtype, n, rng, shape)
    got = gpusort.unique(to(a), return_index=True, return_inverse=True, return_counts=True,
                         equal_nan=True)
    want = np.unique(a, return_index=True, return_inverse=True, return_counts=True, equal_nan=True)
    values, index, inverse, counts = (back(g) for g in got)
    assert values.dtype == a.dtype and _same(values, want[0])
    assert index.dtype == np.int64 and np.array_equal(index, want[1])
    assert np.array_equal(inverse.reshape(-1), want[2].reshape(-1)) and inverse.shape == a.shape
    assert np.array_equal(counts, want[3])
    # The bare call gives the keys alone, of the caller's type; with counts alone the keys
    # are sorted without indices (another path). Neither touches the caller's array.
    pristine, given = a.copy(), to(a)
    alone = gpusort.unique(given, equal_nan=True)
    assert type(alone) is type(given) and _same(back(alone), want[0])
    values, counts = gpusort.unique(given, return_counts=True, equal_nan=True)
    assert _same(back(values), want[0]) and np.array_equal(back(counts), want[3])
    values, inverse = gpusort.unique(given, return_inverse=True, equal_nan=True)  # no stable sort
    assert _same(back(values), want[0])
    assert np.array_equal(back(inverse).reshape(-1), want[2].reshape(-1))
    assert np.array_equal(back(given), pristine, equal_nan=a.dtype.kind == "f")


def test_unique_nans_follow_the_library_or_equal_nan(lib):
    name, to, back = lib
    a = np.array([np.nan, 1.0, np.nan, -0.0, 0.0], np.float32)
    one_per_nan = name.startswith("torch")
    assert back(gpusort.unique(to(a))).shape == ((4,) if one_per_nan else (3,))
    assert back(gpusort.unique(to(a), equal_nan=False)).shape == (4,)
    values, counts = gpusort.unique(to(a), return_counts=True, equal_nan=True)
    assert _same(back(values), [0.0, 1.0, np.nan]) and back(counts).tolist() == [2, 1, 2]
    assert np.signbit(back(values)[0]) == False  # noqa: E712  (+0.0 for the pair)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_slices_along_a_dim_match_numpy(lib, dim, rng):
    name, to, back = lib
    a = rng.integers(0, 3, (40, 3)).astype(np.int32)
    if dim != 0:
        a = a.T.copy()
    got = gpusort.unique(to(a), dim=dim, return_index=True, return_inverse=True, return_counts=True)
    want = np.unique(a, axis=dim, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        assert np.array_equal(back(g), np.asarray(w).reshape(back(g).shape))
    assert _same(back(gpusort.unique(to(a), axis=dim)), want[0])
    with pytest.raises(TypeError, match="dim and axis are one argument"):
        gpusort.unique(to(a), dim=0, axis=0)


def test_unique_refuses_what_is_not_an_array_or_a_flag(rng):
    with pytest.raises(TypeError):
        gpusort.unique([1, 2, 3])
    with pytest.raises(TypeError, match="return_counts"):
        gpusort.unique(np.arange(3), return_counts=1)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("m", [0, 1, 1000, 2**16 + 1])
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "float32", "float64"])
def test_searchsorted_matches_numpy(lib, dtype, m, side, rng):
    _skip_unsupported(lib, dtype)
    name, to, back = lib
    sequence = np.sort(_keys(dtype, 5000, rng, "few" if m == 1000 else "random"))
    queries = np.concatenate([_keys(dtype, m, rng, "random"), sequence[: m // 10]])
    if np.dtype(dtype).kind == "f" and m:
        queries[:: max(1, m // 7)] = np.nan
        sequence[-3:] = np.nan  # NumPy's sorted order: NaNs last
    # The array's library decides where NaNs go: NumPy (and CuPy) after every number, torch
    # by its own comparisons.
    if name.startswith("torch"):
        want = back(_torch_searchsorted(to(sequence), to(queries), side))
    else:
        want = np.searchsorted(sequence, queries, side=side)
    got = back(gpusort.searchsorted(to(sequence), to(queries), side))
    assert got.dtype == np.int64 and np.array_equal(got, want)
    right = back(gpusort.searchsorted(to(sequence), to(queries), right=side == "right", out_int32=True))
    assert right.dtype == np.int32 and np.array_equal(right, want)
    # bucketize is searchsorted with its arguments the other way round.
    assert np.array_equal(back(gpusort.bucketize(to(queries), to(sequence), right=side == "right")), want)


def test_searchsorted_takes_a_sorter_and_keeps_the_queries_shape(lib, rng):
    name, to, back = lib
    sequence = rng.integers(0, 100, 300).astype(np.int64)
    sorter = np.argsort(sequence, kind="stable")
    queries = rng.integers(-5, 105, (7, 9)).astype(np.int64)
    got = back(gpusort.searchsorted(to(sequence), to(queries), "right", to(sorter)))
    assert np.array_equal(got, np.searchsorted(sequence, queries, "right", sorter))
    with pytest.raises(ValueError, match="side"):
        gpusort.searchsorted(to(sequence), to(queries), "middle")
    with pytest.raises(ValueError, match="side"):
        gpusort.searchsorted(to(sequence), to(queries), "left", right=True)


def _torch_searchsorted(sequence, queries, side):
    import torch

    return torch.searchsorted(sequence, queries, side=side)


def _lexsort_reference(keys, descending):
    """np.lexsort over each key's dense ranks, negated where descending (NaNs still last)."""
    codes = []
    for key, down in zip(keys, descending):
        key = np.asarray(key)
        if key.dtype.kind == "f":  # -0.0 equal to +0.0; NaNs last in both orders
            nan = np.isnan(key)
            values, dense = np.unique(np.where(nan, 0, key + 0.0), return_inverse=True)
            dense = dense.reshape(key.shape).astype(np.int64)
            codes.append(np.where(nan, len(values), -dense if down else dense))
            continue
        values, dense = np.unique(key, return_inverse=True)
        dense = dense.reshape(key.shape).astype(np.int64)
        codes.append(-dense if down else dense)
    return np.lexsort(codes)


KEY_SETS = {
    "three full-range int32": lambda rng, n: [random_keys("int32", n, rng) for _ in range(3)],
    "small ranges": lambda rng, n: [rng.integers(-3, 4, n).astype(np.int16) for _ in range(4)],
    "int64 extremes and uint64": lambda rng, n: [
        rng.choice(np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max]), n),
        random_keys("uint64", n, rng, distinct=5) + np.uint64(2**63),
        random_keys("int32", n, rng, distinct=4)],
    "floats and ints": lambda rng, n: [float_specials("float32", rng, n)[:n],
                                       random_keys("int32", n, rng, distinct=3),
                                       random_keys("float64", n, rng, distinct=4)],
    "constant and bool": lambda rng, n: [np.full(n, 7, np.int32),
                                         random_keys("bool", n, rng),
                                         random_keys("uint8", n, rng, distinct=3)],
    "all constant": lambda rng, n: [np.full(n, 7, np.int32), np.zeros(n, np.int64)],
}


@pytest.mark.parametrize("descending", [False, True, "mixed"])
@pytest.mark.parametrize("n", [0, 1, 257, 20000])
@pytest.mark.parametrize("keys", sorted(KEY_SETS))
def test_lexsort_matches_numpy(lib, keys, n, descending, rng):
    name, to, back = lib
    arrays = KEY_SETS[keys](rng, n)
    if name.startswith("torch") and any(a.dtype.name not in TORCH_DTYPES for a in arrays):
        pytest.skip("torch lacks a key type here")
    flags = ([i % 2 == 1 for i in range(len(arrays))] if descending == "mixed"
             else [descending] * len(arrays))
    got = back(gpusort.lexsort([to(a) for a in arrays], descending=flags))
    assert got.dtype == np.int64
    assert np.array_equal(got, _lexsort_reference(arrays, flags))
    if not any(flags):
        fine = [a + 0.0 if a.dtype.kind == "f" else a for a in arrays]
        assert np.array_equal(got, np.lexsort(fine))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_lexsort_along_an_axis(lib, axis, rng):
    name, to, back = lib
    arrays = [rng.integers(0, 4, (6, 50)).astype(np.int32) for _ in range(3)]
    got = back(gpusort.lexsort([to(a) for a in arrays], axis))
    assert np.array_equal(got, np.lexsort(arrays, axis))
    assert np.array_equal(back(gpusort.lexsort([to(a) for a in arrays], dim=axis)), got)


def test_lexsort_refuses_bad_keys(rng):
    with pytest.raises(ValueError, match="at least one key"):
        gpusort.lexsort([])
    with pytest.raises(ValueError, match="same library and shape"):
        gpusort.lexsort([np.arange(3), np.arange(4)])
    with pytest.raises(ValueError, match="one per key"):
        gpusort.lexsort([np.arange(3), np.arange(3)], descending=[True])
    with pytest.raises(ValueError, match="axis"):
        gpusort.lexsort([np.arange(3)], 1)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_unique_matches_torch_s(dtype, rng):
    torch = pytest.importorskip("torch")
    a = _keys(dtype, 3000, rng, "few")
    for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
        t = torch.from_numpy(a).to(device)
        got = gpusort.unique(t, True, True, True)
        want = torch.unique(t, sorted=True, return_inverse=True, return_counts=True)
        for g, w in zip(got, want):
            assert g.device == t.device and g.dtype == w.dtype and torch.equal(g, w)


def test_unique_and_lexsort_take_tensors_that_require_grad():
    torch = pytest.importorskip("torch")
    for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
        t = torch.tensor([2.0, -1.0, 2.0, 0.5], device=device, requires_grad=True)
        values, counts = gpusort.unique(t, return_counts=True)
        assert values.tolist() == [-1.0, 0.5, 2.0] and counts.tolist() == [1, 1, 2]
        assert gpusort.lexsort([t, t]).tolist() == [1, 3, 0, 2]
