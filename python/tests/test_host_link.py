"""Host arrays large enough for the host-array plans' staged copies (4 MiB and more: pinned
slots filled by several threads), sorted in place in the caller's buffer: NumPy arrays and
torch CPU tensors, pageable and pinned, keys and (through argsort) pairs, both orders. On the
CPU backend without a GPU."""

import numpy as np
import pytest

import gpusort
from reference import check_sorted, random_keys, same_bits

# Above the 4 MiB where staging starts, and not a whole number of the copier's chunks.
N = (1 << 21) + 12345


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "uint64", "int16"])
def test_numpy_arrays_sort_in_place_and_by_argsort(dtype, descending, rng):
    x = random_keys(dtype, N, rng, distinct=None if dtype == "int16" else N // 7)
    before = x.copy()
    y = x.copy()
    gpusort.sort_(y, descending=descending)
    values, indices = gpusort.sort(x, descending=descending, stable=True)
    assert same_bits(x, before), "the input changed"
    check_sorted(x, values, indices, descending, stable=True)
    assert same_bits(y, values), "sort_ and sort disagree"


@pytest.mark.parametrize("pinned", [False, True])
def test_torch_cpu_tensors_pageable_and_pinned(pinned, rng):
    torch = pytest.importorskip("torch")
    if pinned and not (torch.cuda.is_available() and gpusort.gpu_available()):
        pytest.skip("pinned memory needs a GPU")
    keys = torch.from_numpy(random_keys("float32", N, rng, distinct=N // 3))
    if pinned:
        keys = keys.pin_memory()
    expected, order = torch.sort(keys, stable=True)
    values, indices = gpusort.sort(keys, stable=True)
    assert torch.equal(values, expected) and torch.equal(indices, order)
    gpusort.sort_(keys)
    assert torch.equal(keys, expected)
