"""One token a row from the top-k and top-p of logits, as LLM decoding samples (issue 76):
gpusort's top-k of each row, then the softmax, the nucleus cut and the draw on those k
candidates alone, in PyTorch on the logits' device and stream."""

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
    in proportion to those probabilities. It is torch's usual recipe (topk, softmax,
    cumulative-sum mask, multinomial), with gpusort.topk for the top-k. temperature=0 takes
    the most likely token; generator, a torch.Generator on the logits' device, makes the draw
    repeatable. The result has logits' shape without its last dimension. Logits with NaNs
    make the draw raise (torch.multinomial's RuntimeError)."""
    import torch

    from . import topk

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
    probabilities = torch.softmax(values.float() / temperature, dim=-1)
    if p < 1.0:
        more_likely = probabilities.cumsum(-1) - probabilities  # the mass before each token
        probabilities = probabilities.masked_fill(more_likely >= p, 0.0)
    choice = torch.multinomial(probabilities, 1, generator=generator)  # weights need no sum of 1
    return indices.gather(-1, choice).reshape(logits.shape[:-1])
