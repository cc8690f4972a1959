"""gpusort's operations as PyTorch operators (torch.library custom ops), so that torch sees
them as it sees its own: torch.compile traces them without a graph break (each has a fake
kernel that says what it returns), autograd differentiates sort and topk values (the
gradient scatters back through the indices, as for torch.sort), and an in-place sort bumps
the tensor's version so that autograd notices.

Plain eager calls on ordinary tensors skip the operator registry: it would add tens of
microseconds to a call that otherwise costs less than torch.sort's own overhead."""

import torch
from torch import Tensor

from . import _core

_CONTIGUOUS = torch.contiguous_format


def wants_operator(x):
    """Whether a call on tensor x must go through torch's operator registry: while
    torch.compile traces, for a tensor autograd tracks, and for tensor subclasses (fake,
    functional and other wrapper tensors) that only the registry knows how to handle."""
    return (
        torch.compiler.is_compiling()
        or type(x) is not torch.Tensor
        or (x.requires_grad and torch.is_grad_enabled())
    )


def _scatter_back(ctx, grad_values):
    """The input's gradient: each output's gradient sent to the key it came from."""
    (indices,) = ctx.saved_tensors
    grad = grad_values.new_zeros(ctx.input_shape)
    return grad.scatter_(ctx.dim, indices.long(), grad_values)


def _save_indices(ctx, x, dim, indices):
    ctx.input_shape = x.shape
    ctx.dim = dim % x.dim()
    ctx.save_for_backward(indices)


# ---- sort / argsort -------------------------------------------------------------------


@torch.library.custom_op("gpusort::sort", mutates_args=())
def sort(x: Tensor, dim: int, descending: bool, stable: bool, algorithm: str, nans: str,
         indices_dtype: str) -> tuple[Tensor, Tensor]:
    return _core.sort(x, dim, descending, stable, algorithm, nans, indices_dtype)


@sort.register_fake
def _(x, dim, descending, stable, algorithm, nans, indices_dtype):
    _core._dim_of(_core._arrays._Torch(torch), x, dim)
    _core._indices_dtype(indices_dtype, 0)
    return (torch.empty_like(x, memory_format=_CONTIGUOUS),
            torch.empty_like(x, dtype=getattr(torch, indices_dtype), memory_format=_CONTIGUOUS))


def _sort_context(ctx, inputs, output):
    _save_indices(ctx, inputs[0], inputs[1], output[1])


def _sort_backward(ctx, grad_values, grad_indices):
    return _scatter_back(ctx, grad_values), None, None, None, None, None, None


sort.register_autograd(_sort_backward, setup_context=_sort_context)


# ---- sort_ (in place) -----------------------------------------------------------------


@torch.library.custom_op("gpusort::sort_", mutates_args=("x",))
def sort_(x: Tensor, dim: int, descending: bool, stable: bool, algorithm: str,
          nans: str) -> None:
    _core.sort_(x, dim, descending, stable, algorithm, nans)


@sort_.register_fake
def _(x, dim, descending, stable, algorithm, nans):
    return None


def sort_in_place_eager(x, dim, descending, stable, algorithm, nans):
    """The eager in-place sort: the data sorted, then the version bumped as an in-place torch
    operation would, so that backward refuses a tensor it saved before the sort."""
    _core.sort_(x, dim, descending, stable, algorithm, nans)
    torch.autograd.graph.increment_version(x)


# ---- topk -------------------------------------------------------------------------------


@torch.library.custom_op("gpusort::topk", mutates_args=())
def topk(x: Tensor, k: int, dim: int, largest: bool,
         in_order: bool = True) -> tuple[Tensor, Tensor]:
    # in_order has a default so that callers of the op's four-argument schema keep working.
    return _core.topk(x, k, dim, largest, in_order)


@topk.register_fake
def _(x, k, dim, largest, in_order=True):
    axis = _core._dim_of(_core._arrays._Torch(torch), x, dim)
    shape = _core.topk_shape(tuple(x.shape), axis, k)
    return x.new_empty(shape), x.new_empty(shape, dtype=torch.int64)


def _topk_context(ctx, inputs, output):
    _save_indices(ctx, inputs[0], inputs[2], output[1])


def _topk_backward(ctx, grad_values, grad_indices):
    return _scatter_back(ctx, grad_values), None, None, None, None


topk.register_autograd(_topk_backward, setup_context=_topk_context)


# ---- sort_segmented ----------------------------------------------------------------------


@torch.library.custom_op("gpusort::sort_segmented", mutates_args=())
def sort_segmented(x: Tensor, offsets: Tensor, descending: bool, algorithm: str,
                   nans: str) -> tuple[Tensor, Tensor]:
    return _core.sort_segmented(x, offsets, descending, algorithm, nans)


@sort_segmented.register_fake
def _(x, offsets, descending, algorithm, nans):
    if x.dim() != 1:
        raise ValueError(f"x: must be 1-D, got shape {tuple(x.shape)}")
    return torch.empty_like(x, memory_format=_CONTIGUOUS), x.new_empty(x.shape, dtype=torch.int64)


def _segmented_context(ctx, inputs, output):
    _save_indices(ctx, inputs[0], 0, output[1])


def _segmented_backward(ctx, grad_values, grad_indices):
    return _scatter_back(ctx, grad_values), None, None, None, None


sort_segmented.register_autograd(_segmented_backward, setup_context=_segmented_context)


# ---- approx_sort --------------------------------------------------------------------------


@torch.library.custom_op("gpusort::approx_sort", mutates_args=())
def approx_sort(x: Tensor, intervals: int, descending: bool) -> tuple[Tensor, Tensor]:
    return _core.approx_sort(x, intervals, descending)


@approx_sort.register_fake
def _(x, intervals, descending):
    if x.dim() != 1:
        raise ValueError(f"x: must be 1-D, got shape {tuple(x.shape)}")
    return torch.empty_like(x, memory_format=_CONTIGUOUS), x.new_empty((intervals + 1,), dtype=torch.int64)
