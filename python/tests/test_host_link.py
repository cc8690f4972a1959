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


class _Interrupted(Exception):
    """What the test's SIGINT handler raises: a KeyboardInterrupt that came too late would
    stop the whole pytest session."""


def test_ctrl_c_stops_a_large_host_array_sort_early():
    """SIGINT during sort_ of a 16 GiB NumPy array reaches Python from the sort's next
    progress report (the GIL taken, the signal handlers run), well before the sort would end,
    and the module sorts again after it. On a GPU only: the CPU backend reports once before
    its sort and once after."""
    import os
    import signal
    import threading
    import time

    if not gpusort.gpu_available():
        pytest.skip("the CPU backend's sort has no progress reports inside it")
    if os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") < 96 << 30:
        pytest.skip("needs 96 GiB of host memory")
    n = (1 << 32) - 1
    x = np.arange(n, dtype=np.uint32)
    x *= np.uint32(2654435761)  # a permutation of 0 .. n - 1, in 16 GiB
    start = time.perf_counter()
    gpusort.sort_(x)
    whole = time.perf_counter() - start
    if whole < 0.6:
        pytest.skip(f"the sort takes {whole:.2f} s here: too quick to interrupt")
    x *= np.uint32(2654435761)

    def interrupted(signum, frame):
        raise _Interrupted

    previous = signal.signal(signal.SIGINT, interrupted)
    timer = threading.Timer(0.25 * whole, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        start = time.perf_counter()
        with pytest.raises(_Interrupted):
            gpusort.sort_(x)
        stopped = time.perf_counter() - start
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, previous)
    assert stopped < 0.8 * whole, f"stopped after {stopped:.2f} s of a {whole:.2f} s sort"
    y = np.array([3, 1, 2], np.uint32)
    gpusort.sort_(y)
    assert y.tolist() == [1, 2, 3]
