"""gpusort.sample_top_k_top_p (issue 76): the draw's distribution against the exact one of
torch's recipe on fixed seeds (a chi-square test), greedy and k = 1, shapes, repeatability with
a generator, and the refusals; on the CPU and, where there is one, the GPU."""

import numpy as np
import pytest

import gpusort

torch = pytest.importorskip("torch")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
LOGITS = [2.0, -1.0, 0.5, 3.0, 1.5, -0.2, 0.9, 2.5, -3.0, 0.0, 1.0, 2.2]


def _exact(logits, k, p, temperature):
    """token -> probability under top-k, then top-p, at temperature (torch's recipe)."""
    order = np.argsort(-np.asarray(logits), kind="stable")[:k]
    scaled = np.asarray(logits)[order] / temperature
    probabilities = np.exp(scaled - scaled.max())
    probabilities /= probabilities.sum()
    before = np.cumsum(probabilities) - probabilities
    kept = before < p
    probabilities = np.where(kept, probabilities, 0.0)
    return dict(zip(order.tolist(), (probabilities / probabilities.sum()).tolist()))


# The 0.9999 quantile of the chi-square distribution for df = 1 .. 11: a fixed seed then fails
# only for a wrong distribution.
CHI2_9999 = [15.14, 18.42, 21.11, 23.51, 25.74, 27.86, 29.88, 31.83, 33.72, 35.56, 37.37]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("k, p, temperature", [(6, 0.8, 0.7), (12, 1.0, 1.0), (4, 0.5, 2.0),
                                               (8, 0.95, 0.3)])
def test_the_draws_follow_the_recipe_s_distribution(device, dtype, k, p, temperature):
    """16-bit logits (drawn from as they are on a GPU) against the exact distribution of
    their rounded values."""
    rows = 40000
    row = torch.tensor(LOGITS, device=device).to(getattr(torch, dtype))
    logits = row.repeat(rows, 1)
    generator = torch.Generator(device=device).manual_seed(12345)
    tokens = gpusort.sample_top_k_top_p(logits, k, p, temperature, generator=generator)
    assert tokens.shape == (rows,) and tokens.dtype == torch.int64
    counts = np.bincount(tokens.cpu().numpy(), minlength=len(LOGITS))
    exact = _exact(row.float().cpu().tolist(), k, p, temperature)
    outside = [t for t in range(len(LOGITS)) if exact.get(t, 0.0) == 0.0]
    assert counts[outside].sum() == 0, "tokens drawn outside the top-k / top-p set"
    kept = [t for t, q in exact.items() if q > 0]
    chi2 = sum((counts[t] - rows * exact[t]) ** 2 / (rows * exact[t]) for t in kept)
    assert chi2 < CHI2_9999[len(kept) - 2], (chi2, counts, exact)


@pytest.mark.parametrize("device", DEVICES)
def test_greedy_shapes_and_repeatable_draws(device):
    logits = torch.randn(2, 3, 50, device=device)
    best = logits.argmax(-1)
    assert torch.equal(gpusort.sample_top_k_top_p(logits, 10, temperature=0), best)
    assert torch.equal(gpusort.sample_top_k_top_p(logits, 1, p=0.5), best)
    draw = lambda seed: gpusort.sample_top_k_top_p(  # noqa: E731
        logits, 20, 0.9, 1.3, generator=torch.Generator(device=device).manual_seed(seed))
    assert draw(7).shape == (2, 3) and torch.equal(draw(7), draw(7))
    for dtype in (torch.bfloat16, torch.float16):
        half = gpusort.sample_top_k_top_p(logits.to(dtype), 5, 0.9)
        assert half.shape == (2, 3) and half.dtype == torch.int64


def test_refusals():
    logits = torch.randn(3, 8)
    with pytest.raises(TypeError, match="logits"):
        gpusort.sample_top_k_top_p(np.zeros((3, 8), np.float32), 2)
    for k in (0, 9, 2.5, True):
        with pytest.raises(ValueError, match="k:"):
            gpusort.sample_top_k_top_p(logits, k)
    for p in (0.0, 1.5, -1):
        with pytest.raises(ValueError, match="p:"):
            gpusort.sample_top_k_top_p(logits, 2, p=p)
    with pytest.raises(ValueError, match="temperature"):
        gpusort.sample_top_k_top_p(logits, 2, temperature=-0.1)
    with pytest.raises(TypeError, match="temperature"):
        gpusort.sample_top_k_top_p(logits, 2, temperature="hot")
    with pytest.raises(ValueError, match="logits"):
        gpusort.sample_top_k_top_p(torch.zeros(3, 0), 1)
