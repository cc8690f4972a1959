"""out= of sort, argsort and topk: PyTorch tensors that receive the results, with torch's
rules. Each must have the result's dtype and x's device (checked before any work, as every
argument is); one of another shape is resized, with a warning (as torch warns) where it held
elements; autograd is refused, as torch refuses it for out= calls. The results are computed
as without out= and copied in, so out= saves no memory."""

import warnings


def check(out, x, torch, dtypes, function):
    """out as a tuple of tensors, one for each result: dtypes names their dtypes (None: x's).
    TypeError for anything else; RuntimeError where autograd would have to see through out=.
    torch: the torch module where it is imported, else None."""
    if torch is None or not isinstance(x, torch.Tensor):
        raise TypeError(f"out: takes PyTorch tensors only (as torch.{function}'s out=); x is "
                        f"{type(x).__module__}.{type(x).__name__}")
    if len(dtypes) == 1:
        outs = (out,)
    elif isinstance(out, (tuple, list)) and len(out) == len(dtypes):
        outs = tuple(out)
    else:
        raise TypeError(f"out: must be a tuple of {len(dtypes)} tensors (values, indices), "
                        f"got {type(out).__name__}")
    # No zip(strict=True) and no generator here: torch.compile traces this (out= of a call
    # under it), and versions of it may break the graph at either.
    for position, (tensor, dtype) in enumerate(zip(outs, dtypes)):
        name = "out" if len(outs) == 1 else f"out[{position}]"
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{name}: must be a torch.Tensor, got {type(tensor).__name__}")
        want = x.dtype if dtype is None else getattr(torch, dtype)
        if tensor.dtype != want:
            raise TypeError(f"{name}: must have the result's dtype {want}, got {tensor.dtype}")
        if tensor.device != x.device:
            raise TypeError(f"{name}: must be on x's device {x.device}, got {tensor.device}")
    if torch.is_grad_enabled() and any([t.requires_grad for t in (x, *outs)]):
        raise RuntimeError(f"{function}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    return outs


def write(outs, results):
    """Copies each result into its out tensor, resized first where its shape differs."""
    for tensor, result in zip(outs, results):
        if tensor.shape != result.shape:
            if tensor.numel():  # torch warns of this too, and deprecates it
                warnings.warn(
                    f"out: a tensor of shape {list(tensor.shape)} holding elements was resized to "
                    f"the result's shape {list(result.shape)}; resize it to no elements first "
                    "(t.resize_(0)) to reuse it without this warning", UserWarning, stacklevel=3)
            tensor.resize_(result.shape)
        tensor.copy_(result)
    return outs
