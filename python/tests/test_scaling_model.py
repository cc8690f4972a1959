"""scripts/scaling_model.py (docs/distributed.md's scaling model): its least squares recover
known coefficients, and a model fit to rows made from known phases predicts a held-out count
exactly, so that the documented fit and check mean what they say."""

import importlib.util
import math
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "scaling_model.py"


@pytest.fixture(scope="module")
def model():
    spec = importlib.util.spec_from_file_location("scaling_model", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_least_squares_recovers_the_coefficients(model):
    xs = [1.0, 2.0, 3.0, 5.0, 8.0]
    ys = [3.0 + 0.5 * x - 0.25 * x * x for x in xs]
    a, b, c = model.least_squares([[1.0] * len(xs), xs, [x * x for x in xs]], ys)
    assert (a, b, c) == pytest.approx((3.0, 0.5, -0.25))


def _rows(p_values, n_per_gpu, truth, record_bytes):
    """dist_sample_sort rows whose phases follow `truth` exactly."""
    rows = []
    for p in p_values:
        n = n_per_gpu
        sent = n * record_bytes * (p - 1) / p
        phases = {
            "local_sort_ms": n * truth["per_key"],
            "sampling_ms": truth["sampling"][0] + truth["sampling"][1] * p,
            "exchange_ms": (sent * truth["per_byte"] + truth["per_peer"] * (p - 1)) if p > 1 else 0,
            "merge_ms": n * (truth["merge"][0] + truth["merge"][1] * (math.ceil(math.log2(p)) if p > 1 else 0)),
        }
        row = {name: str(value * 1e3) for name, value in phases.items()}
        row.update(gpus=str(p), max_shard=str(n), bytes_sent_per_gpu=str(sent), mode="weak",
                   median_ms=str(sum(phases.values()) * 1e3))
        rows.append(row)
    return rows


def test_a_model_of_exact_rows_predicts_the_held_out_count(model):
    truth = {"per_key": 2e-11, "sampling": (2e-4, 1e-4), "per_byte": 1 / 350e9,
             "per_peer": 5e-5, "merge": (2e-12, 1.5e-12)}
    rows = _rows([1, 2, 4, 8], 2**29, truth, 4)
    fitted = model.Model([r for r in rows if r["gpus"] != "4"], 4)
    held_out = rows[2]
    assert sum(fitted.phases(2**29, 4)) * 1e3 == pytest.approx(float(held_out["median_ms"]), rel=1e-6)
    assert fitted.seconds_per_byte == pytest.approx(truth["per_byte"], rel=1e-6)
    # One NVLink domain of 2 and InfiniBand beyond: the exchange is the slower of the two parts.
    local, sampling, exchange, merge = fitted.phases(2**29, 8, domain=2)
    crossing = 2**29 * 4 / 8 * 6 / model.IB_BYTES_PER_S + 6 * model.IB_SECONDS_PER_PEER
    assert exchange == pytest.approx(crossing + fitted.seconds_per_peer, rel=1e-6)
