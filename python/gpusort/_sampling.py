"""One token a row from the top-k and top-p of logits, as LLM decoding samples (issue 76):
gpusort's top-k of each row, one uniform a row from torch's generator, then the softmax, the
nucleus cut and the draw over those k candidates in one kernel (gpusort::sample_candidates: a
block a row; on the CPU the same loop), on the logits' device and stream."""

import numbers


def _number(value, argument, low, high, low_open):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{argument}: must be a number, got {type(value).__name__}")
    value = float(value)
    if not ((value > low if low_open else value >= low) and value <= high):
        raise ValueError(f"{argument}: must be in {'(' if low_open else '['}{low}, {high}], got {value}")
    return value


def sample_top_k_top_p(logits, k, p=1.0, temperature=1.0, generator=None):
    """A token id (int64) for each row of logits, a torch tensor of rows along its last
    dimension (the vocabulary): drawn from the row's k most likely tokens, cut to the
    fewest of them whose probabilities at `temperature` reach p (the most likely always kept),
    in proportion to those probabilities: the distribution of torch's usual recipe (topk,
    softmax, cumulative-sum mask, multinomial), drawn by gpusort.topk and one kernel over the
    k candidates with a uniform a row from torch.rand. temperature=0 takes
    the most likely token; generator, a torch.Generator on the logits' device, makes the draw
    repeatable (the draws are not torch.multinomial's, whose uniforms are used otherwise). The
    result has logits' shape without its last dimension. NaN logits are never drawn (a row of
    NaNs gives its first token); +inf logits share the draw among themselves."""
    import torch

    from . import _arrays, topk
    from ._extension import ext as _ext

    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits: must be a torch tensor, got {type(logits).__name__}")
    if logits.ndim == 0 or logits.shape[-1] == 0:
        raise ValueError(f"logits: must have a last dimension of one token or more, got shape "
                         f"{tuple(logits.shape)}")
    vocabulary = logits.shape[-1]
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= vocabulary:
        raise ValueError(f"k: must be an integer from 1 to {vocabulary}, got {k!r}")
    p = _number(p, "p", 0.0, 1.0, low_open=True)
    temperature = _number(temperature, "temperature", 0.0, float("inf"), low_open=False)
    rows = logits.reshape(-1, vocabulary)
    values, indices = topk(rows, int(k), dim=-1)  # each row's k largest, most likely first
    if temperature == 0.0 or k == 1:
        return indices[:, 0].reshape(logits.shape[:-1])
    count = rows.shape[0]
    uniforms = torch.rand(count, generator=generator, device=logits.device, dtype=torch.float32)
    tokens = torch.empty(count, dtype=torch.int64, device=logits.device)
    if logits.is_cuda:
        # float16 and bfloat16 candidates as they are: the kernel reads them as floats.
        candidates = values.detach()
        if candidates.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            candidates = candidates.float()
        candidates = candidates.contiguous()
        xp = _arrays.namespace_of(logits, "logits")
        stream = xp.stream(logits)
        _ext.sample_candidates_device(*(xp.handle(a, stream) for a in (candidates, indices, uniforms, tokens)),
                                      int(k), p, temperature, stream)
    else:
        candidates = values.detach().float().contiguous()  # the host loop takes float32
        _ext.sample_candidates_host(candidates.numpy(), indices.numpy(), uniforms.numpy(),
                                    tokens.numpy(), int(k), p, temperature)
    return tokens.reshape(logits.shape[:-1])
