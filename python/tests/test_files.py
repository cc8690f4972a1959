"""gpusort.sort_file and sort_records_file: files sorted out of core under budgets small enough
to force runs and a merge (the CPU backend without a GPU), against numpy's stable sort; the
progress reports, a stop from the progress callback, and the errors."""

import os

import numpy as np
import pytest

import gpusort

# Budgets that cut 50,000 records into runs of a few thousand.
BUDGETS = dict(device_memory=160 * 1024, memory=320 * 1024)


def leftovers(folder, *expected):
    return sorted(set(os.listdir(folder)) - set(expected))


@pytest.mark.parametrize("dtype", gpusort.KEY_DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_file(tmp_path, dtype, descending, rng):
    keys = (rng.standard_normal(50_000) * 1000).astype(dtype)
    keys[::7] = keys[0]
    src, dst = tmp_path / "in", tmp_path / "out"
    keys.tofile(src)
    gpusort.sort_file(src, dst, dtype, descending=descending, **BUDGETS)
    want = np.sort(keys, kind="stable")
    if descending:
        want = want[::-1]
    np.testing.assert_array_equal(np.fromfile(dst, dtype=dtype), want)
    np.testing.assert_array_equal(np.fromfile(src, dtype=dtype), keys)
    assert leftovers(tmp_path, "in", "out") == []


@pytest.mark.parametrize("dtype", [d for d in gpusort.NARROW_KEY_DTYPES if d != "bool"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("budgets", [{}, BUDGETS], ids=["in memory", "runs"])
def test_sort_file_of_narrow_keys(tmp_path, dtype, descending, budgets, rng):
    # bfloat16 keys are the top halves of float32 bits (NumPy has none)
    wide = (rng.standard_normal(200_001) * 100).astype("float32")  # runs under BUDGETS
    bfloat16 = dtype == "bfloat16"
    keys = (wide.view("uint32") >> 16).astype("uint16") if bfloat16 else wide.astype(dtype)
    keys[::9] = keys[1]
    value_of = (lambda k: (k.astype("uint32") << 16).view("float32")) if bfloat16 else (lambda k: k)
    src, dst = tmp_path / "in", tmp_path / "out"
    keys.tofile(src)
    stats = gpusort.sort_file(src, dst, dtype, descending=descending, **budgets)
    assert ("runs" in stats["plan"]) == bool(budgets), stats
    want = np.sort(value_of(keys), kind="stable")
    # the same values in order (floats: -0.0 and +0.0 compare equal here)
    np.testing.assert_array_equal(value_of(np.fromfile(dst, dtype=keys.dtype)),
                                  want[::-1] if descending else want)
    np.testing.assert_array_equal(np.fromfile(src, dtype=keys.dtype), keys)
    assert leftovers(tmp_path, "in", "out") == []


def test_sort_pairs_file_is_stable(tmp_path, rng):
    record = np.dtype([("key", "<f8"), ("value", "<u4")])
    data = np.empty(40_000, dtype=record)
    data["key"] = rng.integers(0, 50, len(data)).astype("float64")
    data["value"] = np.arange(len(data), dtype="uint32")
    data.tofile(tmp_path / "in")
    gpusort.sort_file(tmp_path / "in", tmp_path / "out", "float64", pairs=True, **BUDGETS)
    got = np.fromfile(tmp_path / "out", dtype=record)
    np.testing.assert_array_equal(got, data[np.argsort(data["key"], kind="stable")])


def test_sort_records_file(tmp_path, rng):
    records = rng.integers(0, 256, (30_000, 100), dtype=np.uint8)
    records[:, 10:18] = rng.integers(0, 2, (30_000, 1), dtype=np.uint8)  # shared prefixes
    records.tofile(tmp_path / "in")
    gpusort.sort_records_file(tmp_path / "in", tmp_path / "out", 100, 12, key_offset=10,
                              **BUDGETS)
    got = np.fromfile(tmp_path / "out", dtype=np.uint8).reshape(-1, 100)
    keys = [bytes(r[10:22]) for r in records]
    order = sorted(range(len(records)), key=lambda i: keys[i])  # stable
    np.testing.assert_array_equal(got, records[order])


def test_progress_and_a_stop_from_it(tmp_path, rng):
    rng.integers(0, 2**32, 60_000, dtype=np.uint32).tofile(tmp_path / "in")
    reports = []
    stats = gpusort.sort_file(tmp_path / "in", tmp_path / "out", "uint32",
                              progress=lambda *r: reports.append(r), **BUDGETS)
    assert "runs of" in stats["plan"] and stats["read"].endswith(" s")
    phases = [phase for phase, _, _ in reports]
    assert "runs" in phases and any(p.startswith("merge") for p in phases)
    assert all(done <= total for _, done, total in reports if total)

    (tmp_path / "out").write_bytes(b"old")

    def stop(phase, done, total):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        gpusort.sort_file(tmp_path / "in", tmp_path / "out", "uint32", progress=stop, **BUDGETS)
    assert (tmp_path / "out").read_bytes() == b"old"
    assert leftovers(tmp_path, "in", "out") == []


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="missing"):
        gpusort.sort_file(tmp_path / "missing", tmp_path / "out", "int32")
    (tmp_path / "odd").write_bytes(b"12345")
    with pytest.raises(ValueError, match="whole number"):
        gpusort.sort_file(tmp_path / "odd", tmp_path / "out", "int32", **BUDGETS)
    with pytest.raises(TypeError, match="dtype"):
        gpusort.sort_file(tmp_path / "odd", tmp_path / "out", "complex64")
    with pytest.raises(TypeError, match="dtype"):
        gpusort.sort_file(tmp_path / "odd", tmp_path / "out", "bool")
    with pytest.raises(ValueError, match="whole number"):
        gpusort.sort_file(tmp_path / "odd", tmp_path / "out", "float16", **BUDGETS)
    with pytest.raises(ValueError, match="device_memory"):
        gpusort.sort_file(tmp_path / "odd", tmp_path / "out", "int32", device_memory=-1)
    with pytest.raises(ValueError):
        gpusort.sort_records_file(tmp_path / "odd", tmp_path / "out", 8, 8, key_offset=4)
    assert leftovers(tmp_path, "odd") == []


@pytest.mark.parametrize("nans", ["last", "first"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_file_places_nans(tmp_path, descending, nans, rng):
    keys = rng.standard_normal(30_000).astype("float32")
    keys[::5] = np.nan
    src, dst = tmp_path / "in", tmp_path / "out"
    keys.tofile(src)
    gpusort.sort_file(src, dst, "float32", descending=descending, nans=nans, **BUDGETS)
    out = np.fromfile(dst, dtype="float32")
    count = int(np.isnan(keys).sum())
    block = out[:count] if nans == "first" else out[len(out) - count:]
    assert np.isnan(block).all() and not np.isnan(out).sum() > count
    numbers = np.sort(keys[~np.isnan(keys)])
    want = numbers[::-1] if descending else numbers
    got = out[count:] if nans == "first" else out[: len(out) - count]
    np.testing.assert_array_equal(got, want)
