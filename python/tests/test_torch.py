"""gpusort on PyTorch CUDA tensors against torch.sort / torch.topk: the same results, the
caller's stream, no synchronization, no copies for sort_. Skipped without torch or a GPU."""

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import gpusort  # noqa: E402
from reference import (check_sorted, float_specials, order_key, random_keys, same_bits,  # noqa: E402
                       stable_argsort)

DTYPES = ["int32", "int64", "float32", "float64", "uint32", "uint64"]
TORCH_SORTS = ["int32", "int64", "float32", "float64"]  # dtypes torch.sort takes everywhere


def on_gpu(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def host(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", [0, 1, 2, 33, 1023, 1025, 2**16 + 1, 2**20])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sort(dtype, n, descending, rng):
    x_host = random_keys(dtype, n, rng)
    x = on_gpu(x_host)
    values, indices = gpusort.sort(x, descending=descending)
    assert isinstance(values, torch.Tensor) and values.device == x.device
    assert values.dtype == x.dtype and indices.dtype == torch.int64
    check_sorted(x_host, host(values), host(indices), descending)
    if dtype in TORCH_SORTS:
        expected = torch.sort(x, descending=descending).values
        assert torch.equal(values, expected)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_specials(dtype, descending, rng):
    x_host = float_specials(dtype, rng, n=5000)
    values, indices = gpusort.sort(on_gpu(x_host), descending=descending)
    check_sorted(x_host, host(values), host(indices), descending)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", [100, 5000, 2**18])
@pytest.mark.parametrize("dtype", DTYPES)
def test_stable_matches_torch(dtype, n, descending, rng):
    x_host = random_keys(dtype, n, rng, distinct=11)
    x = on_gpu(x_host)
    values, indices = gpusort.sort(x, descending=descending, stable=True)
    check_sorted(x_host, host(values), host(indices), descending, stable=True)
    if dtype in TORCH_SORTS:
        assert torch.equal(indices, torch.sort(x, descending=descending, stable=True).indices)


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("row_len", [1, 32, 256, 1024, 4096, 10000])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rows(dtype, row_len, descending, stable, rng):
    rows = max(1, 2**16 // row_len)
    x_host = random_keys(dtype, rows * row_len, rng, distinct=13 if stable else None)
    x_host = x_host.reshape(rows, row_len)
    x = on_gpu(x_host)
    values, indices = gpusort.sort(x, dim=-1, descending=descending, stable=stable)
    check_sorted(x_host, host(values), host(indices), descending, stable)
    if dtype in TORCH_SORTS:
        assert torch.equal(values, torch.sort(x, dim=-1, descending=descending).values)


@pytest.mark.parametrize("algorithm", gpusort.ALGORITHMS)
def test_every_algorithm(algorithm, rng):
    x_host = random_keys("int32", 100003, rng)
    values, indices = gpusort.sort(on_gpu(x_host), algorithm=algorithm)
    check_sorted(x_host, host(values), host(indices))


@pytest.mark.parametrize("algorithm", ["automatic", "bitonic"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint64"])
def test_sort_in_place_shares_memory(dtype, algorithm, rng):
    x_host = random_keys(dtype, 2**20 + 3, rng)
    x = on_gpu(x_host)
    pointer = x.data_ptr()
    before = torch.cuda.memory_allocated()
    assert gpusort.sort_(x, algorithm=algorithm) is x
    assert x.data_ptr() == pointer
    if algorithm == "bitonic":
        assert torch.cuda.memory_allocated() == before
    assert same_bits(host(x), np.sort(x_host))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 1000, 100000])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "int64"])
def test_topk_matches_torch(dtype, k, largest, rng):
    x = on_gpu(random_keys(dtype, 2**20, rng))
    values, indices = gpusort.topk(x, k, largest=largest)
    expected = torch.topk(x, k, largest=largest)
    assert torch.equal(values, expected.values)
    assert torch.equal(x[indices], values)


@pytest.mark.parametrize("k", [1, 77, 1000])
def test_kthvalue_matches_torch(k, rng):
    x = on_gpu(random_keys("float32", 64 * 1000, rng).reshape(64, 1000))
    values, indices = gpusort.kthvalue(x, k)
    expected = torch.kthvalue(x, k)
    assert torch.equal(values, expected.values)
    assert torch.equal(torch.gather(x, 1, indices.unsqueeze(1)).squeeze(1), values)
    if k <= 64:  # down the columns too, keeping dim
        kept = gpusort.kthvalue(x, k, dim=0, keepdim=True)
        assert torch.equal(kept.values, torch.kthvalue(x, k, dim=0, keepdim=True).values)


def test_topk_rows(rng):
    x = on_gpu(random_keys("float32", 64 * 1000, rng).reshape(64, 1000))
    values, indices = gpusort.topk(x, 10)
    assert torch.equal(values, torch.topk(x, 10).values)
    assert torch.equal(torch.gather(x, 1, indices), values)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "float16", "bfloat16"])
def test_narrow_dtypes_match_torch_stable_sort(dtype, descending):
    # sorted at their own width by the library: the stable order is unique, so values and
    # indices equal torch's
    generator = torch.Generator(device="cuda").manual_seed(7)
    wide = torch.randint(-300, 300, (3, 5000), device="cuda", generator=generator)
    x = (wide > 0) if dtype == "bool" else wide.to(getattr(torch, dtype))
    values, indices = gpusort.sort(x, descending=descending, stable=True)
    expected = torch.sort(x, descending=descending, stable=True)
    assert values.dtype == x.dtype
    assert torch.equal(values, expected.values) and torch.equal(indices, expected.indices)
    y = x.clone()
    gpusort.sort_(y, dim=0, descending=descending)
    assert torch.equal(y, torch.sort(x, dim=0, descending=descending).values)


def narrow_keys_on_host(t):
    """NumPy keys in the order of the tensor t's (bfloat16 as float32; uint16, which torch
    cannot copy to NumPy, through its bits)."""
    if t.dtype == torch.bfloat16:
        return host(t.float())
    if t.dtype == torch.uint16:
        return host(t.view(torch.int16)).view(np.uint16)
    return host(t)


def bits_of(t):
    return t.view(torch.uint8 if t.element_size() == 1 else torch.int16)


@pytest.mark.parametrize("algorithm", ["automatic", "bitonic", "sample_sort"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "float16",
                                   "bfloat16"])
def test_narrow_dtypes_sort_arrays_segments_and_rows(dtype, algorithm):
    # against NumPy's stable order, special floats (both zeros, +-inf, NaNs) among the keys
    generator = torch.Generator(device="cuda").manual_seed(11)
    wide = torch.randint(-40000, 40000, (6007,), device="cuda", generator=generator)
    if dtype == "bool":
        x = wide > 0
    elif dtype in ("float16", "bfloat16"):
        x = (wide.float() / 7).to(getattr(torch, dtype))
        x[:6] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), -float("nan")])
    elif dtype == "uint16":
        x = (wide & 0xFFFF).to(torch.int32).to(torch.int16).view(torch.uint16)
    else:
        x = wide.to(getattr(torch, dtype))
    keys = narrow_keys_on_host(x)
    for nans in ("last", "first"):
        values, indices = gpusort.sort(x, algorithm=algorithm, nans=nans)
        i = host(indices)
        assert values.dtype == x.dtype and np.array_equal(np.sort(i), np.arange(x.numel()))
        want = keys[stable_argsort(keys, nans=nans)]
        assert np.array_equal(order_key(keys[i]), order_key(want))
        assert torch.equal(bits_of(values), bits_of(x)[indices])
    bounds = [0, 1, 1, 2048, 4099, 6000]
    values, indices = gpusort.sort_segmented(x, torch.tensor(bounds, device="cuda"),
                                             descending=True)
    i = host(indices)
    for b, e in zip(bounds, bounds[1:]):
        assert np.array_equal(np.sort(i[b:e]), np.arange(b, e))
        want = keys[b:e][stable_argsort(keys[b:e], descending=True)]
        assert np.array_equal(order_key(keys[i[b:e]]), order_key(want))
    assert torch.equal(bits_of(values), bits_of(x)[indices])
    assert np.array_equal(i[6000:], np.arange(6000, 6007))
    rows = x[:6000].reshape(3, 2000).clone()
    gpusort.sort_(rows, descending=True, algorithm=algorithm if algorithm != "sample_sort" else
                  "automatic")  # sample_sort takes no rows
    for got, row in zip(narrow_keys_on_host(rows), keys[:6000].reshape(3, 2000)):
        assert np.array_equal(order_key(got), order_key(row[stable_argsort(row, descending=True)]))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_partition_matches_a_sort(dtype):
    generator = torch.Generator(device="cuda").manual_seed(3)
    x = (torch.randn(4, 3000, device="cuda", generator=generator) * 100).to(getattr(torch, dtype))
    for kth in (0, 77, 2999, [5, 77]):
        # partition and argpartition each (one kth takes the smallest keys unordered on a GPU,
        # so two calls may order them differently; NumPy promises no order either).
        where = gpusort.argpartition(x, kth)
        for out in (gpusort.partition(x, kth), torch.gather(x, 1, where)):
            assert out.device == x.device and out.dtype == x.dtype
            for j in kth if isinstance(kth, list) else [kth]:
                pivot = torch.sort(x, dim=-1).values[:, j : j + 1]
                assert torch.equal(out[:, j : j + 1], pivot)
                assert (out[:, :j] <= pivot).all() and (out[:, j + 1 :] >= pivot).all()
            assert torch.equal(torch.sort(out, dim=-1).values, torch.sort(x, dim=-1).values)


# LLM decoding shapes (rows x vocabulary, k up to 2048: the per-row select), the shortest
# rows it takes, k the whole row, k = 0, and shapes it leaves to the batched sort (16-bit
# floats: the library's top-k of narrow keys).
TOPK_ROW_SHAPES = [((1, 262144), 50), ((4, 131072), 1024), ((3, 2048), 2048), ((5, 32000), 8),
                   ((2, 4096), 0), ((1, 5000), 5000), ((7, 1000), 10), ((2, 70001), 2048)]


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape,k", TOPK_ROW_SHAPES)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "int32", "float64", "int8", "uint8",
                                   "int16"])
def test_topk_rows_match_torch(dtype, shape, k, largest):
    generator = torch.Generator(device="cuda").manual_seed(shape[1] + k)
    x = torch.randn(shape, device="cuda", generator=generator) * 1000
    x = x.to(getattr(torch, dtype))
    values, indices = gpusort.topk(x, k, largest=largest)
    expected = torch.topk(x, k, largest=largest)
    assert values.dtype == x.dtype and indices.dtype == torch.int64
    assert torch.equal(values, expected.values)
    assert torch.equal(torch.gather(x, 1, indices), values)
    for row in indices:
        assert row.unique().numel() == k


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_topk_float16_specials(dtype, largest):
    # every bit pattern of the format, so NaNs of both signs and every payload, +-0, +-inf and
    # subnormals, in rows of 65,536 and 4,096
    x = torch.arange(-32768, 32768, dtype=torch.int32, device="cuda").to(torch.int16)
    x = x[torch.randperm(65536, device="cuda")].view(getattr(torch, dtype))
    for rows in (1, 16):
        m = x.reshape(rows, -1)
        values, indices = gpusort.topk(m, 1000, largest=largest)
        # NaNs count as the largest keys (torch.topk of these rows in bf16 returned more NaNs
        # than the row holds on the H100 host, torch 2.x: the reference is NumPy's, in f32)
        keys, got = host(m.float()), host(values.float())
        for row, out in zip(keys, got):
            numbers = np.sort(row[~np.isnan(row)])
            nans = min(1000, row.size - numbers.size) if largest else max(0, 1000 - numbers.size)
            want = (numbers[::-1] if largest else numbers)[: 1000 - nans]
            at = slice(0, nans) if largest else slice(1000 - nans, 1000)
            assert np.isnan(out[at]).all() and np.isnan(out).sum() == nans
            assert np.array_equal(out[~np.isnan(out)], want)  # -0.0 == +0.0 here
        assert torch.equal(torch.gather(m, 1, indices).view(torch.int16), values.view(torch.int16))


def test_topk_rows_smallest_of_a_transposed_view(rng):
    x = on_gpu(random_keys("int32", 64 * 1000, rng).reshape(1000, 64)).t()
    values, indices = gpusort.topk(x, 5, largest=False)
    assert torch.equal(values, torch.topk(x, 5, largest=False).values)
    assert torch.equal(torch.gather(x, 1, indices), values)


def test_sort_segmented(rng):
    x_host = random_keys("float32", 10000, rng)
    offsets = torch.tensor([0, 5, 5, 1000, 7000, 9000], device="cuda")
    values, indices = gpusort.sort_segmented(on_gpu(x_host), offsets)
    v, i = host(values), host(indices)
    for b, e in zip([0, 5, 5, 1000, 7000], [5, 5, 1000, 7000, 9000]):
        check_sorted(x_host[b:e], v[b:e], i[b:e] - b)
    assert same_bits(v[9000:], x_host[9000:])


def test_sort_segmented_rejects_bad_offsets_before_moving_keys(rng):
    x = on_gpu(random_keys("int32", 100, rng))
    before = x.clone()
    with pytest.raises(ValueError, match="offsets"):
        gpusort.sort_segmented(x, torch.tensor([0, 50, 101], device="cuda"))
    with pytest.raises(TypeError, match="offsets: must be a torch array on the same device"):
        gpusort.sort_segmented(x, torch.tensor([0, 50]))
    assert torch.equal(x, before)


def test_approx_sort(rng):
    x = on_gpu(random_keys("float32", 2**20, rng))
    values, offsets = gpusort.approx_sort(x, 1000)
    assert offsets.dtype == torch.int64 and offsets.shape == (1001,) and offsets.is_cuda
    o = host(offsets)
    assert o[0] == 0 and o[-1] == x.numel()
    assert torch.equal(values.sort().values, x.sort().values)
    v = host(values)
    for i in range(0, 999, 37):
        if o[i] < o[i + 1] < o[i + 2]:
            assert v[o[i] : o[i + 1]].max() <= v[o[i + 1] : o[i + 2]].min()


def test_errors_before_any_work(rng):
    x = on_gpu(random_keys("float32", 1000, rng))
    with pytest.raises(TypeError, match="x: dtype complex64"):
        gpusort.sort(x.to(torch.complex64))
    with pytest.raises(ValueError, match="k:"):
        gpusort.topk(x, 1001)
    with pytest.raises(ValueError, match="dim:"):
        gpusort.sort(x.view(10, 100), dim=2)


def test_requires_grad_and_cpu_tensors(rng):
    x_host = random_keys("float32", 1000, rng)
    x = on_gpu(x_host).requires_grad_()
    values, indices = gpusort.sort(x)
    check_sorted(x_host, host(values), host(indices))
    cpu = torch.from_numpy(x_host.copy())
    values, indices = gpusort.sort(cpu)  # host tensors: the host path, torch out
    assert isinstance(values, torch.Tensor) and not values.is_cuda
    check_sorted(x_host, values.numpy(), indices.numpy())


def test_runs_on_the_current_stream_without_waiting(rng):
    """Work queued on a side stream (a long sleep, then the copy that fills x) must come
    before the sort, and the call must return while the stream is still busy."""
    x_host = random_keys("float32", 2**22, rng)
    source = on_gpu(x_host)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.empty_like(source)
        torch.cuda._sleep(200_000_000)  # about 0.1 s at the H100's clock
        x.copy_(source)
        values, indices = gpusort.sort(x)
        gpusort.sort_(x, algorithm="bitonic")
        busy = not side.query()
    assert busy, "gpusort waited for the stream"
    side.synchronize()
    check_sorted(x_host, host(values), host(indices))
    assert same_bits(host(x), host(values))


def test_cuda_array_interface_in_place(rng):
    """Objects with only __cuda_array_interface__ (numba, ...) can be sorted in place."""

    class Interface:
        def __init__(self, tensor):
            self.tensor = tensor
            self.__cuda_array_interface__ = tensor.__cuda_array_interface__

    x_host = random_keys("int64", 5000, rng)
    x = on_gpu(x_host)
    wrapped = Interface(x)
    assert gpusort.sort_(wrapped, algorithm="bitonic") is wrapped
    torch.cuda.synchronize()
    assert np.array_equal(host(x), np.sort(x_host))
    with pytest.raises(TypeError, match="gpusort.sort_"):
        gpusort.sort(wrapped)


def test_producer_stream_waits_for_an_in_place_sort(rng):
    """An object whose __cuda_array_interface__ names its stream (a non-blocking torch
    stream): the sort runs on the legacy stream after that stream's work, and the stream's
    next work comes after the sort. The legacy stream is held up by a sleep first, so that a
    missing order would let the clone read unsorted keys."""
    x_host = random_keys("float32", 2**22, rng)
    x = on_gpu(x_host)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    torch.cuda.synchronize()

    class Interface:
        __cuda_array_interface__ = dict(x.__cuda_array_interface__, stream=side.cuda_stream)

    with torch.cuda.stream(torch.cuda.default_stream()):
        torch.cuda._sleep(100_000_000)  # the legacy stream, where foreign arrays are sorted
    gpusort.sort_(Interface(), algorithm="bitonic")
    with torch.cuda.stream(side):
        seen = x.clone()
    torch.cuda.synchronize()
    assert np.array_equal(host(seen), np.sort(x_host))


@pytest.mark.skipif(
    "GPUSORT_TEST_LARGE" not in __import__("os").environ, reason="set GPUSORT_TEST_LARGE=1"
)
def test_more_than_2_to_the_31_keys():
    n = 2**31 + 5
    x = torch.randint(0, 2**31 - 1, (n,), dtype=torch.int32, device="cuda")
    gpusort.sort_(x, algorithm="bitonic")
    assert bool((x[1:] >= x[:-1]).all())


def test_gpusort_imported_before_torch():
    """The H100 host's toolchain links libstdc++ into the module; exported, its symbols took
    over PyTorch's and `import gpusort; import torch` crashed in torch's import."""
    code = ("import gpusort, torch; x = torch.rand(1000, device='cuda'); "
            "assert torch.equal(gpusort.sort(x).values, torch.sort(x).values)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": ":".join(sys.path)})
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nans_first_descending_is_torch_order(dtype, descending, rng):
    """torch.sort treats NaN as the largest key: nans='last' ascending, 'first' descending."""
    x_host = float_specials(dtype, rng, 3000)
    x = on_gpu(x_host)
    nans = "first" if descending else "last"
    values, indices = gpusort.sort(x, descending=descending, nans=nans, stable=True)
    check_sorted(x_host, host(values), host(indices), descending, stable=True, nans=nans)
    ours, theirs = host(values), host(torch.sort(x, descending=descending, stable=True).values)
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    numbers = ~np.isnan(ours)
    # Equal as numbers: torch ties -0.0 with +0.0 (input order), gpusort puts -0.0 first.
    assert np.array_equal(ours[numbers], theirs[numbers])
    # The default (NumPy's): NaNs last in both orders.
    values, indices = gpusort.sort(x, descending=descending)
    check_sorted(x_host, host(values), host(indices), descending)


def test_tensors_of_expandable_segments_are_accepted():
    """With expandable segments PyTorch maps a large tensor as several driver allocations side
    by side; the pointer check walks them instead of refusing the array (issue 44)."""
    code = ("import torch, gpusort; x = torch.randint(0, 2**31 - 1, (3 << 24,), dtype=torch.int32,"
            " device='cuda'); y = torch.sort(x).values; gpusort.sort_(x);"
            " assert torch.equal(x, y)")
    env = {**os.environ, "PYTHONPATH": ":".join(sys.path),
           "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
