"""The calls users already type: torch's positional order for sort, argsort, topk and
kthvalue, dim= and axis= as one argument, every function's defaults and results against
NumPy's (always) and torch's (where torch is installed: CPU tensors, and CUDA ones where there
is a GPU), topk(sorted=False), out= for tensors, and docs/python.md's signature table."""

import ast
import inspect
import pathlib
import re
import warnings

import numpy as np
import pytest

import gpusort
from reference import order_key, random_keys, same_bits

# torch's signatures as its documentation gives them (docs.pytorch.org, torch 2.x); its parser
# takes `stable` by keyword only.
TORCH_SIGNATURES = {
    "sort": "(input, dim=-1, descending=False, *, stable=False, out=None)",
    "argsort": "(input, dim=-1, descending=False, *, stable=False)",
    "topk": "(input, k, dim=None, largest=True, sorted=True, *, out=None)",
    "kthvalue": "(input, k, dim=None, keepdim=False, *, out=None)",
}
# gpusort's functions with NumPy's counterpart, whose order they take where torch has none.
NUMPY_FUNCTIONS = ("sort", "argsort", "partition", "argpartition")


def positional(signature):
    """[(name, default)] of the parameters a call may give by position, after the array."""
    return [(p.name, p.default) for p in signature.parameters.values()
            if p.kind == p.POSITIONAL_OR_KEYWORD][1:]


def torch_signature(name):
    tree = ast.parse(f"def {name}{TORCH_SIGNATURES[name]}: pass")
    scope = {}
    exec(compile(tree, name, "exec"), scope)
    return inspect.signature(scope[name])


def distinct(shape, rng, dtype="float64"):
    """Keys without ties (indices are then unique), NaN-free."""
    return rng.permutation(int(np.prod(shape))).reshape(shape).astype(dtype)


# ---- signatures ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TORCH_SIGNATURES))
def test_positional_order_and_defaults_are_torch_s(name):
    """torch's positional parameters come first, in its order, with its defaults (dim=None,
    the last dimension, as -1)."""
    ours = positional(inspect.signature(getattr(gpusort, name)))
    theirs = [(n, -1 if n == "dim" and d is None else d) for n, d in positional(torch_signature(name))]
    assert [(n, repr(d)) for n, d in ours[: len(theirs)]] == [(n, repr(d)) for n, d in theirs]
    # out= is the for sort, argsort and topk; kthvalue has none yet.
    assert ("out" in inspect.signature(getattr(gpusort, name)).parameters) == (name != "kthvalue")


@pytest.mark.parametrize("name", NUMPY_FUNCTIONS)
def test_numpy_s_axis_sits_where_numpy_puts_it_with_its_default(name):
    numpy_params = list(inspect.signature(getattr(np, name)).parameters.values())
    where = [p.name for p in numpy_params].index("axis")
    ours = list(inspect.signature(getattr(gpusort, name)).parameters.values())
    assert ours[where].name in ("axis", "dim") and ours[where].kind == ours[where].POSITIONAL_OR_KEYWORD
    assert repr(ours[where].default) == repr(numpy_params[where].default) == "-1"


def test_the_docs_table_shows_the_signatures():
    """docs/python.md's table gives each gpusort function's signature and torch's as above."""
    docs = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
    docs = docs.read_text(encoding="utf-8")
    section = docs[docs.index("## Signatures: gpusort, torch and NumPy"):]
    table = "\n".join(line for line in section.splitlines() if line.startswith("| "))
    shown = dict(re.findall(r"`gpusort\.(\w+)(\(.*?\))`", table))
    names = [n for n in gpusort.__all__ if inspect.isfunction(getattr(gpusort, n))
             and n not in ("sort_file", "sort_records_file", "sort_lines", "gpu_available")]
    assert sorted(shown) == sorted(names)
    for name, text in shown.items():
        assert text == str(inspect.signature(getattr(gpusort, name))).replace("'", '"'), name
    assert dict(re.findall(r"`torch\.(\w+)(\(.*?\))`", table)) == TORCH_SIGNATURES


# ---- NumPy --------------------------------------------------------------------------------


def test_positional_calls_mean_what_they_mean_to_numpy(rng):
    x = distinct((6, 40), rng)
    assert same_bits(gpusort.sort(x, 0).values, np.sort(x, 0))
    assert same_bits(gpusort.sort(x, 0, True).values, np.sort(x, 0)[::-1])
    ties = rng.integers(0, 3, (6, 40)).astype(np.int32)
    assert np.array_equal(gpusort.argsort(ties, 0, False, True), np.argsort(ties, 0, kind="stable"))
    values, indices = gpusort.topk(x, 4, 0, False, True)
    assert same_bits(values, np.sort(x, 0)[:4]) and same_bits(np.take_along_axis(x, indices, 0), values)
    value = gpusort.kthvalue(x, 3, 0, True).values
    assert value.shape == (1, 40) and same_bits(value, np.sort(x, 0)[2:3])
    assert same_bits(gpusort.partition(x, 2, 0)[2], np.partition(x, 2, 0)[2])
    assert same_bits(np.take_along_axis(x, gpusort.argpartition(x, 2, 0), 0)[2], np.sort(x, 0)[2])


CALLS_WITH_A_DIM = {
    "sort": lambda x, **d: gpusort.sort(x, **d).values,
    "argsort": lambda x, **d: gpusort.argsort(x, stable=True, **d),
    "sort_": lambda x, **d: gpusort.sort_(x.copy(), **d),
    "topk": lambda x, **d: gpusort.topk(x, 3, **d).values,
    "kthvalue": lambda x, **d: gpusort.kthvalue(x, 2, **d).values,
    "partition": lambda x, **d: gpusort.partition(x, 1, **d),
    "argpartition": lambda x, **d: gpusort.argpartition(x, 1, **d),
    "unique": lambda x, **d: gpusort.unique(x, **d),
    "lexsort": lambda x, **d: gpusort.lexsort([x], **d),
}


@pytest.mark.parametrize("name", sorted(CALLS_WITH_A_DIM))
def test_dim_and_axis_are_one_argument(name, rng):
    call = CALLS_WITH_A_DIM[name]
    x = distinct((5, 7), rng)
    by_dim, by_axis = call(x, dim=0), call(x, axis=0)
    assert same_bits(by_dim, by_axis) and not same_bits(by_dim, call(x))
    for both in ({"dim": 0, "axis": 0}, {"dim": -1, "axis": -1}, {"dim": 1, "axis": 0}):
        with pytest.raises(TypeError, match="dim and axis are one argument"):
            call(x, **both)


def test_every_function_with_dim_takes_axis_and_the_other_way_round():
    functions = {n: inspect.signature(getattr(gpusort, n)).parameters for n in gpusort.__all__
                 if inspect.isfunction(getattr(gpusort, n))}
    with_a_dim = {n for n, params in functions.items() if "dim" in params or "axis" in params}
    assert with_a_dim == set(CALLS_WITH_A_DIM)
    assert all({"dim", "axis"} <= set(functions[n]) for n in with_a_dim)


def test_axis_none_flattens_in_partition_alone(rng):
    x = distinct((4, 6), rng)
    assert same_bits(gpusort.partition(x, 5, None)[5], np.partition(x, 5, None)[5])
    assert same_bits(gpusort.partition(x, 5, dim=None)[5], np.partition(x, 5, None)[5])
    with pytest.raises(TypeError, match="dim and axis"):
        gpusort.partition(x, 5, None, dim=0)
    with pytest.raises(TypeError, match="must be an integer"):
        gpusort.sort(x, axis=None)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_defaults_and_results_match_numpy(dtype, rng):
    """Each function with nothing but its required arguments, against NumPy's counterpart
    with its defaults: the last axis, ascending, NaNs last, int64 indices."""
    x = random_keys(dtype, 4 * 300, rng).reshape(4, 300)
    if dtype == "float32":
        x[1, ::17] = np.nan
    values, indices = gpusort.sort(x)
    assert same_bits(values, np.sort(x)) and indices.dtype == np.int64
    assert same_bits(np.take_along_axis(x, indices, -1), values)
    assert np.array_equal(gpusort.argsort(x, stable=True), np.argsort(x, kind="stable"))
    in_place = x.copy()
    in_place.sort()
    assert same_bits(gpusort.sort_(x.copy()), in_place)
    largest = np.argsort(~order_key(x), axis=-1, kind="stable")  # NaNs count as the largest keys
    top = gpusort.topk(x, 5)
    assert same_bits(top.values, np.take_along_axis(x, largest, -1)[:, :5])
    assert top.indices.dtype == np.int64
    assert same_bits(gpusort.kthvalue(x, 9).values, np.partition(x, 8)[:, 8])
    for kth in (0, 150, -1):
        assert same_bits(gpusort.partition(x, kth)[:, kth], np.partition(x, kth)[:, kth])
        where = gpusort.argpartition(x, kth)
        assert where.dtype == np.int64
        assert same_bits(np.take_along_axis(x, where, -1)[:, kth], np.partition(x, kth)[:, kth])
    flat = x.reshape(-1)
    offsets = np.array([0, 100, 100, 700, flat.size])
    seg = gpusort.sort_segmented(flat, offsets)
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        assert same_bits(seg.values[a:b], np.sort(flat[a:b]))
    approx = gpusort.approx_sort(flat)
    assert approx.offsets.shape == (10001,) and same_bits(np.sort(approx.values), np.sort(flat))


def test_results_are_named_as_torch_names_them(rng):
    x = distinct((3, 8), rng)
    for result in (gpusort.sort(x), gpusort.topk(x, 2), gpusort.kthvalue(x, 2),
                   gpusort.sort_segmented(x[0], np.array([0, 8]))):
        assert result._fields == ("values", "indices")
    assert gpusort.approx_sort(x[0])._fields == ("values", "offsets")


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape,k", [((1000,), 10), ((6, 3000), 100), ((5, 40), 40), ((3, 0), 0)])
def test_topk_unsorted_gives_the_same_keys(shape, k, largest, rng):
    x = random_keys("float32", int(np.prod(shape)), rng).reshape(shape)
    values, indices = gpusort.topk(x, k, largest=largest, sorted=False)
    ordered = np.sort(x, axis=-1)
    want = ordered[..., ::-1][..., :k] if largest else ordered[..., :k]
    assert same_bits(np.sort(values, axis=-1), np.sort(want, axis=-1))
    assert same_bits(np.take_along_axis(x, indices, -1), values)


def test_out_takes_tensors_alone(rng):
    x = distinct((10,), rng)
    with pytest.raises(TypeError, match="out: takes PyTorch tensors only"):
        gpusort.sort(x, out=(np.empty(10), np.empty(10, np.int64)))
    with pytest.raises(TypeError, match="out: takes PyTorch tensors only"):
        gpusort.argsort(x, out=np.empty(10, np.int64))
    with pytest.raises(TypeError, match="out: takes PyTorch tensors only"):
        gpusort.topk(x, 2, out=(np.empty(2), np.empty(2, np.int64)))


# ---- torch: CPU tensors, and CUDA ones where there is a GPU ---------------------------------


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(params=["cpu", "cuda"])
def device(request, torch):
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return request.param


def tensor(torch, a, device):
    return torch.from_numpy(np.ascontiguousarray(a)).to(device)


def empty_results(torch, x, shape):
    """(values, indices) tensors of shape for out=: x's dtype and int64, on x's device."""
    return (torch.empty(shape, dtype=x.dtype, device=x.device),
            torch.empty(shape, dtype=torch.int64, device=x.device))


def test_positional_calls_match_torch(torch, device, rng):
    x = tensor(torch, distinct((6, 50), rng), device)
    for ours, theirs in ((gpusort.sort(x, 0, True), torch.sort(x, 0, True)),
                         (gpusort.topk(x, 5, 0, False, True), torch.topk(x, 5, 0, False, True)),
                         (gpusort.kthvalue(x, 2, 0, True), torch.kthvalue(x, 2, 0, True))):
        assert ours.values.device == theirs.values.device
        assert torch.equal(ours.values, theirs.values) and torch.equal(ours.indices, theirs.indices)
    assert torch.equal(gpusort.argsort(x, 0, True), torch.argsort(x, 0, True))
    ties = tensor(torch, rng.integers(0, 4, (6, 50)), device)
    # torch's parser takes dim and descending by keyword where stable is given.
    assert torch.equal(gpusort.sort(ties, 0, False, True).indices,
                       torch.sort(ties, dim=0, stable=True).indices)
    assert torch.equal(gpusort.argsort(ties, 1, True, True),
                       torch.argsort(ties, dim=1, descending=True, stable=True))


def test_defaults_and_results_match_torch(torch, device, rng):
    x_host = random_keys("float32", 4 * 300, rng).reshape(4, 300)
    x_host[1, ::17] = np.nan  # ascending, torch and gpusort both put NaNs last
    x = tensor(torch, x_host, device)
    values, indices = gpusort.sort(x)
    expected = torch.sort(x)
    assert torch.equal(values.nan_to_num(7.0), expected.values.nan_to_num(7.0))
    assert indices.dtype == expected.indices.dtype == torch.int64
    ties = tensor(torch, rng.integers(0, 5, (4, 300)).astype(np.int32), device)
    assert torch.equal(gpusort.argsort(ties, stable=True), torch.argsort(ties, stable=True))
    distinct_keys = tensor(torch, distinct((4, 300), rng), device)
    for ours, theirs in ((gpusort.topk(distinct_keys, 7), torch.topk(distinct_keys, 7)),
                         (gpusort.kthvalue(distinct_keys, 7), torch.kthvalue(distinct_keys, 7)),
                         (gpusort.sort(distinct_keys), torch.sort(distinct_keys))):
        assert torch.equal(ours.values, theirs.values) and torch.equal(ours.indices, theirs.indices)
    # Descending, torch puts NaNs first: gpusort's nans="first".
    down = gpusort.sort(x, descending=True, nans="first").values
    assert torch.equal(down.nan_to_num(7.0), torch.sort(x, descending=True).values.nan_to_num(7.0))


# Rows that the per-row select takes, whose k it then leaves unsorted on a GPU
# (select_k_rows_indices: float32, and bfloat16 with ties), and one row past it (k above 2,048,
# or more than 2^22 keys), which selects its k without sorting them (select_k_indices).
@pytest.mark.parametrize("shape,k,dtype", [((8, 3000), 64, "float32"), ((4, 131072), 1024, "float32"),
                                           ((3, 131072), 50, "bfloat16"),
                                           ((300001,), 3000, "float32"), ((2**22 + 3,), 100, "float32")])
def test_topk_unsorted_gives_torch_s_keys(torch, device, rng, shape, k, dtype):
    x = tensor(torch, distinct(shape, rng, "float32"), device).to(getattr(torch, dtype))
    for largest in (True, False):
        ours = gpusort.topk(x, k, largest=largest, sorted=False)
        theirs = torch.topk(x, k, largest=largest, sorted=False)
        assert torch.equal(ours.values.sort().values, theirs.values.sort().values)
        assert torch.equal(x.gather(-1, ours.indices), ours.values)


def test_out_receives_the_results_as_torch_s_out_does(torch, device, rng):
    x = tensor(torch, distinct((5, 40), rng), device)
    values, indices = empty_results(torch, x, x.shape)
    result = gpusort.sort(x, 1, True, out=(values, indices))
    assert result.values is values and result.indices is indices
    expected = torch.sort(x, 1, True)
    assert torch.equal(values, expected.values) and torch.equal(indices, expected.indices)
    order = torch.empty(x.shape, dtype=torch.int32, device=device)
    assert gpusort.argsort(x, 0, indices_dtype="int32", out=order) is order
    assert torch.equal(order.long(), torch.argsort(x, 0))
    top = empty_results(torch, x, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = gpusort.topk(x, 3, 0, out=top)
    assert not [w for w in caught if "resized" in str(w.message)], "an empty out is resized silently"
    assert result.values is top[0] and top[0].shape == (3, 40)
    expected = torch.topk(x, 3, 0)
    assert torch.equal(top[0], expected.values) and torch.equal(top[1], expected.indices)


def test_out_of_another_shape_is_resized_with_torch_s_warning(torch, device, rng):
    x = tensor(torch, distinct((40,), rng), device)
    ours, theirs = empty_results(torch, x, 3), empty_results(torch, x, 3)
    with pytest.warns(UserWarning, match="resize"):
        gpusort.sort(x, out=ours)
    with pytest.warns(UserWarning, match="resized"):
        torch.sort(x, out=theirs)
    assert ours[0].shape == theirs[0].shape == (40,)
    assert torch.equal(ours[0], theirs[0]) and torch.equal(ours[1], theirs[1])
    strided = torch.empty((40, 2), dtype=x.dtype, device=device)[:, 0]  # written through its strides
    gpusort.sort(x, out=(strided, ours[1]))
    assert torch.equal(strided, theirs[0]) and strided.stride() == (2,)


def test_out_is_checked_before_any_work(torch, device, rng):
    x = tensor(torch, distinct((40,), rng), device)
    values = torch.zeros_like(x)
    wrong = [
        ((values, torch.empty(40, dtype=torch.int32, device=device)), "out\\[1\\]: must have the result"),
        ((values.float(), torch.empty(40, dtype=torch.int64, device=device)), "out\\[0\\]: must have"),
        ((values,), "out: must be a tuple of 2 tensors"),
        (values, "out: must be a tuple of 2 tensors"),
        ((values, np.empty(40, np.int64)), "out\\[1\\]: must be a torch.Tensor"),
    ]
    if device == "cuda":
        wrong.append(((values, torch.empty(40, dtype=torch.int64)), "out\\[1\\]: must be on x's device"))
    for out, message in wrong:
        with pytest.raises(TypeError, match=message):
            gpusort.sort(x, out=out)
        assert torch.equal(values, torch.zeros_like(x)), "out was written before the error"
    with pytest.raises(TypeError, match="out: must have the result's dtype torch.int64"):
        gpusort.argsort(x, out=torch.empty(40, dtype=torch.int32, device=device))
    grad = x.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        gpusort.topk(grad, 2, out=empty_results(torch, x, 2))
    with torch.no_grad():
        gpusort.topk(grad, 2, out=(values[:2], empty_results(torch, x, 2)[1]))
    assert torch.equal(values[:2], torch.topk(x, 2).values)


def test_out_compiles(torch, device, rng):
    """out= inside torch.compile(fullgraph=True): the copies into out are the graph's."""
    if device != "cuda":
        pytest.skip("gpusort's torch operators are compiled for CUDA tensors")
    x = tensor(torch, distinct((4, 64), rng, "float32"), device)

    def f(x, values, indices):
        gpusort.sort(x, -1, True, out=(values, indices))
        return values * 2

    values, indices = empty_results(torch, x, x.shape)
    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(x, values, indices)
    expected = torch.sort(x, -1, True)
    assert torch.equal(got, expected.values * 2) and torch.equal(indices, expected.indices)
