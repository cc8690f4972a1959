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


FILE_CALLS = {
    "sort_file": lambda src, dst, **options: gpusort.sort_file(src, dst, "uint32", **options),
    "sort_records_file":
        lambda src, dst, **options: gpusort.sort_records_file(src, dst, 4, 4, **options),
}


@pytest.mark.parametrize("call", FILE_CALLS.values(), ids=FILE_CALLS.keys())
def test_empty_paths_and_nul_characters_are_refused_before_any_work(tmp_path, call, rng):
    """A NUL ended the name in the C library ("victim\\0.sorted" wrote "victim"), and an
    empty dst failed only once the sort was done (issue 70)."""
    rng.integers(0, 2**32, 10_000, dtype=np.uint32).tofile(tmp_path / "in")
    src, victim = str(tmp_path / "in"), str(tmp_path / "victim")
    reports = []
    options = dict(progress=lambda *r: reports.append(r), **BUDGETS)
    for src_path, dst, scratch_dir, argument, problem in [
        (src, victim + "\0.sorted", None, "dst", "contain a NUL"),
        (src, os.fsencode(victim) + b"\0.sorted", None, "dst", "contain a NUL"),
        (src + "\0.more", victim, None, "src", "contain a NUL"),
        (src, victim, str(tmp_path) + "\0scratch", "scratch_dir", "contain a NUL"),
        (src, "", None, "dst", "be empty"),
        ("", victim, None, "src", "be empty"),
        (src, victim, "", "scratch_dir", "be empty"),
    ]:
        with pytest.raises(ValueError, match=f"{argument}: must not {problem}"):
            call(src_path, dst, scratch_dir=scratch_dir, **options)
    assert reports == [] and leftovers(tmp_path, "in") == []


@pytest.mark.parametrize("call", FILE_CALLS.values(), ids=FILE_CALLS.keys())
def test_sizes_take_numpy_integers_and_refuse_what_uint64_cannot_hold(tmp_path, call, rng):
    """Budgets of 2**64 and more raised pybind11's TypeError, which names no argument, and
    NumPy integers were refused (issue 70)."""
    keys = rng.integers(0, 2**32, 50_000, dtype=np.uint32)
    keys.tofile(tmp_path / "in")
    src, dst = tmp_path / "in", tmp_path / "out"
    stats = call(src, dst, device_memory=np.int64(BUDGETS["device_memory"]),
                 memory=np.uint64(BUDGETS["memory"]))
    assert "runs of" in stats["plan"]  # the budgets were taken
    np.testing.assert_array_equal(np.sort(np.fromfile(dst, dtype=np.uint32)), np.sort(keys))
    for budget in ("device_memory", "memory"):
        for value in (2**64, 2**70):
            with pytest.raises(ValueError, match=f"{budget}: {value} is too large"):
                call(src, dst, **{budget: value})
        for value in (0, -1, -(2**70)):
            with pytest.raises(ValueError, match=f"{budget}: must be at least 1"):
                call(src, dst, **{budget: value})
        for value in (1e9, True, "1000"):
            with pytest.raises(TypeError, match=f"{budget}: must be an integer"):
                call(src, dst, **{budget: value})
    assert leftovers(tmp_path, "in", "out") == []


def test_record_sizes_take_numpy_integers_and_refuse_what_uint64_cannot_hold(tmp_path, rng):
    records = rng.integers(0, 256, (1000, 8), dtype=np.uint8)
    records.tofile(tmp_path / "in")
    src, dst = tmp_path / "in", tmp_path / "out"
    gpusort.sort_records_file(src, dst, np.int64(8), np.uint8(4), key_offset=np.int32(2))
    got = np.fromfile(dst, dtype=np.uint8).reshape(-1, 8)
    order = sorted(range(1000), key=lambda i: bytes(records[i, 2:6]))  # stable
    np.testing.assert_array_equal(got, records[order])
    for argument, at in (("record_bytes", 2), ("key_bytes", 3), ("key_offset", 4)):
        sizes = [src, dst, 8, 4, 0]
        sizes[at] = 2**64
        with pytest.raises(ValueError, match=f"{argument}: {2**64} is too large"):
            gpusort.sort_records_file(*sizes)
        sizes[at] = -1
        with pytest.raises(ValueError, match=f"{argument}: must be at least 0"):
            gpusort.sort_records_file(*sizes)
        sizes[at] = 8.0
        with pytest.raises(TypeError, match=f"{argument}: must be an integer"):
            gpusort.sort_records_file(*sizes)


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
