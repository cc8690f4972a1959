"""gpusort inside PyTorch: the operators under torch.compile(fullgraph=True), gradients of
sort and topk values (gradcheck), CUDA graph capture, any dim and strided tensors against
torch.sort, and the version counter of an in-place sort. Skipped without torch or a GPU."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import gpusort  # noqa: E402
from reference import random_keys  # noqa: E402


def distinct_floats(shape, dtype=torch.float64, seed=0):
    """Keys with no ties, so that gradients and indices are unique."""
    g = torch.Generator().manual_seed(seed)
    n = int(np.prod(shape))
    return (torch.randperm(n, generator=g).to(dtype) / n + 0.25).reshape(shape).cuda()


# ---- torch.compile ----------------------------------------------------------------------


def _calls(x, offsets):
    values, indices = gpusort.sort(x, descending=True)
    order = gpusort.argsort(x, stable=True)
    top = gpusort.topk(x, 5)
    flat = x.reshape(-1)
    seg_values, seg_indices = gpusort.sort_segmented(flat, offsets)
    return values * 2, indices, order, top.values + 1, top.indices, seg_values, seg_indices


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiles_without_graph_breaks(backend):
    x = distinct_floats((4, 64), torch.float32)
    offsets = torch.tensor([0, 10, 100, 256], device="cuda")
    torch._dynamo.reset()
    compiled = torch.compile(_calls, fullgraph=True, backend=backend)
    got = compiled(x, offsets)
    expected = _calls(x, offsets)
    for a, b in zip(got, expected):
        assert torch.equal(a, b)
    explanation = torch._dynamo.explain(_calls)(x, offsets)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


def test_in_place_sort_compiles():
    def f(x):
        y = x * 1
        gpusort.sort_(y)
        return y + 0

    x = distinct_floats((3, 100), torch.float32)
    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(x)
    assert torch.equal(got, torch.sort(x).values)


def test_fake_kernels_give_shapes_and_dtypes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(3, 7, 11, device="cuda")
        v, i = torch.ops.gpusort.sort(x, 1, False, False, "automatic", "last", "int32")
        assert v.shape == x.shape and v.dtype == x.dtype and i.dtype == torch.int32
        for in_order in ((), (False,)):  # the schema's in_order has a default
            v, i = torch.ops.gpusort.topk(x, 4, 1, True, *in_order)
            assert v.shape == (3, 4, 11) and i.dtype == torch.int64
        flat = torch.empty(50, device="cuda")
        v, i = torch.ops.gpusort.sort_segmented(flat, torch.empty(3, dtype=torch.int64, device="cuda"),
                                                False, "automatic", "last")
        assert v.shape == (50,) and i.shape == (50,)
        v, o = torch.ops.gpusort.approx_sort(flat, 8, False)
        assert o.shape == (9,)


# ---- autograd -----------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_values_gradcheck(dim):
    x = distinct_floats((5, 6), seed=dim + 7).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: gpusort.sort(t, dim=dim).values, (x,))
    assert torch.autograd.gradcheck(lambda t: gpusort.sort(t, dim=dim, descending=True).values, (x,))


@pytest.mark.parametrize("dim", [0, -1])
def test_topk_values_gradcheck(dim):
    x = distinct_floats((6, 9), seed=3).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: gpusort.topk(t, 3, dim=dim).values, (x,))
    assert torch.autograd.gradcheck(lambda t: gpusort.topk(t, 2, dim=dim, largest=False).values, (x,))


def test_gradients_match_torch():
    x = distinct_floats((8, 33), torch.float32, seed=5).requires_grad_()
    weight = torch.rand(8, 33, device="cuda")
    (gpusort.sort(x, dim=0).values * weight).sum().backward()
    ours, x.grad = x.grad, None
    (torch.sort(x, dim=0).values * weight).sum().backward()
    assert torch.equal(ours, x.grad)
    x.grad = None
    (gpusort.topk(x, 4).values * weight[:, :4]).sum().backward()
    ours, x.grad = x.grad, None
    (torch.topk(x, 4).values * weight[:, :4]).sum().backward()
    assert torch.equal(ours, x.grad)
    flat = distinct_floats((100,), seed=9).requires_grad_()
    offsets = torch.tensor([0, 30, 31, 100], device="cuda")
    assert torch.autograd.gradcheck(lambda t: gpusort.sort_segmented(t, offsets).values, (flat,))


def test_in_place_sort_of_a_saved_tensor_is_noticed():
    """As with torch's own in-place operations: backward refuses a tensor that was sorted in
    place after autograd saved it."""
    leaf = torch.rand(1000, device="cuda", requires_grad=True)
    x = leaf * 1
    y = x * x  # saves x
    version = x._version
    gpusort.sort_(x.detach(), algorithm="bitonic")
    assert x._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_operators_take_integer_likes_and_refuse_bools_and_floats():
    """Through the operators (a tensor autograd tracks) as on the eager path (issue 70): torch
    alone would take True for 1 and answer 1.0 with a RuntimeError."""
    x = distinct_floats((3, 4)).requires_grad_()
    assert gpusort.topk(x, np.int64(2), dim=np.int64(0)).values.shape == (2, 4)
    assert gpusort.sort(x, dim=np.int32(0)).values.shape == (3, 4)
    assert gpusort.kthvalue(x, np.int64(2), dim=np.uint8(0)).values.shape == (4,)
    assert gpusort.approx_sort(x.reshape(-1), np.int64(3)).offsets.shape == (4,)
    y = x * 1
    for bad in (True, np.bool_(True), 1.0):
        for argument, call in (("dim", lambda: gpusort.sort(x, dim=bad)),
                               ("dim", lambda: gpusort.sort_(y, dim=bad)),
                               ("k", lambda: gpusort.topk(x, bad)),
                               ("dim", lambda: gpusort.topk(x, 1, dim=bad)),
                               ("intervals", lambda: gpusort.approx_sort(x.reshape(-1), bad))):
            with pytest.raises(TypeError, match=f"^{argument}: must be an integer"):
                call()


# ---- CUDA graph capture ------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", gpusort.ALGORITHMS)
def test_graph_capture(algorithm, rng):
    traits = gpusort.ALGORITHM_TRAITS[algorithm]
    x = torch.from_numpy(random_keys("float32", 5000, rng)).cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch asks
        gpusort.sort(x, algorithm=algorithm)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    if not traits.capturable:
        with pytest.raises(gpusort.Error, match="graph capture"):
            with torch.cuda.graph(graph):
                gpusort.sort(x, algorithm=algorithm)
        return
    with torch.cuda.graph(graph):
        values, indices = gpusort.sort(x, algorithm=algorithm)
        top = gpusort.topk(x, 10)
    fresh = torch.from_numpy(random_keys("float32", 5000, rng)).cuda()
    x.copy_(fresh)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(values, torch.sort(fresh).values)
    assert torch.equal(fresh[indices.long()], values)
    assert torch.equal(top.values, torch.topk(fresh, 10).values)


def test_segmented_sort_refuses_capture():
    x = torch.rand(1000, device="cuda")
    offsets = torch.tensor([0, 500, 1000], device="cuda")
    gpusort.sort_segmented(x, offsets)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(gpusort.Error, match="graph capture"):
        with torch.cuda.graph(graph):
            gpusort.sort_segmented(x, offsets)


# ---- dim and strides -----------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float64])
def test_any_dim_matches_torch(dtype, dim):
    x = (torch.randn(5, 33, 17, device="cuda") * 50).to(dtype)
    for descending in (False, True):
        values, indices = gpusort.sort(x, dim=dim, descending=descending, stable=True)
        expected = torch.sort(x, dim=dim, descending=descending, stable=True)
        assert torch.equal(values, expected.values) and torch.equal(indices, expected.indices)
        assert values.is_contiguous() and indices.is_contiguous()
    top = gpusort.topk(x, 3, dim=dim)
    assert torch.equal(top.values, torch.topk(x, 3, dim=dim).values)
    assert torch.equal(torch.gather(x, dim, top.indices), top.values)
    y = x.clone()
    assert gpusort.sort_(y, dim=dim) is y
    assert torch.equal(y, torch.sort(x, dim=dim).values)


def test_strided_tensors():
    base = torch.randn(64, 40, device="cuda")
    view = base.t()[:, ::3]  # not contiguous in either dimension
    assert torch.equal(gpusort.sort(view).values, torch.sort(view).values)
    before = base.clone()
    gpusort.sort_(view)
    assert torch.equal(view, torch.sort(before.t()[:, ::3]).values)
    untouched = torch.ones_like(base, dtype=torch.bool)
    untouched.t()[:, ::3] = False
    assert torch.equal(base[untouched], before[untouched])


def test_foreign_arrays_sort_in_place_with_default_arguments(rng):
    """An object with only __cuda_array_interface__ (Numba, ...): the default algorithm's
    workspace comes from CUDA's stream-ordered allocator."""

    class Interface:
        def __init__(self, tensor):
            self.__cuda_array_interface__ = tensor.__cuda_array_interface__

    x_host = random_keys("float64", 300_000, rng)
    x = torch.from_numpy(x_host).cuda()
    torch.cuda.synchronize()
    gpusort.sort_(Interface(x))
    torch.cuda.synchronize()
    assert np.array_equal(x.cpu().numpy(), np.sort(x_host))
