"""python -m gpusort.plot: the figures a benchmark CSV gives (names, valid PNG files), the
later-row rule, the no-figure case and the errors. The plotter runs in a child process with
only the source package on its path, as `gpusort plot` runs it: without the compiled module."""

import os
import pathlib
import struct
import subprocess
import sys
import zlib

import pytest

PYTHON_DIR = pathlib.Path(__file__).resolve().parent.parent

try:
    import matplotlib  # noqa: F401

    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False
needs_matplotlib = pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib is not installed")

HEADER = ("algorithm,key_type,value_type,distribution,n,segment_size,median_ms,keys_per_s,"
          "extra_device_bytes,gpu,commit,min_ms,max_ms,reps,std_ms\n")


def row(algo, dist, n, rate, segments="0", gpu='"Test GPU, ""rev A"""'):
    return f"{algo},u32,none,{dist},{n},{segments},1.0,{rate},0,{gpu},abc1234,0.9,1.1,5,0.01\n"


def sample_csv():
    """alpha, beta, gamma at three sizes (one not a power of two) on uniform; alpha and beta on
    zipf at 1024 (a spread; gamma has one distribution there, no box); alpha in segments of 32
    at two sizes; a later gamma row at 3000 replaces the earlier."""
    text = HEADER
    for n in (1024, 2048, 3000):
        text += row("alpha", "uniform", n, 4e9) + row("beta", "uniform", n, 2.5e9)
        text += row("gamma", "uniform", n, 1e9)
    text += row("alpha", "zipf", 1024, 3e9) + row("beta", "zipf", 1024, 2e9)
    text += row("alpha", "uniform", 1024, 5e8, "32") + row("alpha", "uniform", 2048, 7e8, "32")
    text += row("gamma", "uniform", 3000, 1.2e9)
    return text


def run_plot(*args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), PYTHONDONTWRITEBYTECODE="1")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "gpusort.plot", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)


def png_size(path):
    """(width, height) of a PNG whose chunks all check out and whose pixel data inflates to the
    size its header implies; fails the test otherwise."""
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    at, chunks, idat = 8, [], b""
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert zlib.crc32(kind + body) == crc, (path, kind)
        chunks.append(kind)
        if kind == b"IDAT":
            idat += body
        at += 12 + length
    assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND", chunks
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    assert len(zlib.decompress(idat)) == height * (1 + width * channels * depth // 8)
    return width, height


def test_plot_imports_without_the_compiled_module_or_numpy():
    code = ("import sys, gpusort.plot; "
            "print('_gpusort' in sys.modules or 'gpusort._gpusort' in sys.modules, "
            "'numpy' in sys.modules, 'matplotlib' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded = out.stdout.split()
    assert loaded[1:] == ["False", "False"]


def test_later_rows_replace_earlier_ones(tmp_path):
    from gpusort import plot  # conftest puts the package on the path

    csv = tmp_path / "bench.csv"
    csv.write_text(sample_csv())
    rows = plot.read_rows(csv)
    assert len(rows) == 13
    assert (rows[8].algorithm, rows[8].n, rows[8].keys_per_s) == ("gamma", 3000, 1.2e9)
    assert rows[0].gpu == 'Test GPU, "rev A"'
    figures, numbers = plot.plan(rows)
    assert numbers == {"alpha": 0, "beta": 1, "gamma": 2}
    kinds = [(kind, stem) for kind, stem, _ in figures]
    assert kinds == [("rate", "rate_u32_none_uniform"), ("rate", "rate_u32_none_uniform_seg32"),
                     ("spread", "spread_u32_none_n1024")]
    # gamma measured on one distribution: no box; alpha and beta on two each.
    assert [(name, len(measured)) for name, measured in figures[2][2]] == [("alpha", 2), ("beta", 2)]
    # A measurement repeated is still one distribution: no spread figure.
    csv.write_text(HEADER + row("alpha", "zipf", 1024, 1e9) + row("alpha", "zipf", 1024, 2e9))
    assert plot.plan(plot.read_rows(csv))[0] == []


@needs_matplotlib
def test_writes_rate_and_spread_figures(tmp_path):
    csv = tmp_path / "bench.csv"
    csv.write_text(sample_csv())
    out = tmp_path / "figures"  # created by the plotter
    result = run_plot(csv, out)
    assert result.returncode == 0, result.stderr
    names = ["rate_u32_none_uniform.png", "rate_u32_none_uniform_seg32.png",
             "spread_u32_none_n1024.png"]
    assert result.stdout.splitlines() == [str(out / name) for name in names]
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    for name in names:
        assert png_size(out / name) == (1000, 650)
        # Axes, lines and text compress well; a blank figure would be a few kB.
        assert 10_000 < (out / name).stat().st_size < 300_000, name


@needs_matplotlib
def test_several_gpus_name_their_files(tmp_path):
    csv = tmp_path / "bench.csv"
    csv.write_text(HEADER + row("alpha", "uniform", 1024, 1e9, gpu="H100 80GB")
                   + row("alpha", "uniform", 2048, 2e9, gpu="H100 80GB")
                   + row("alpha", "uniform", 1024, 1e9, gpu="A100/40")
                   + row("alpha", "uniform", 2048, 2e9, gpu="A100/40"))
    result = run_plot(csv, tmp_path / "figures")
    assert result.returncode == 0, result.stderr
    assert [pathlib.Path(p).name for p in result.stdout.splitlines()] == [
        "rate_u32_none_uniform_H100-80GB.png", "rate_u32_none_uniform_A100-40.png"]


@needs_matplotlib
def test_no_figure_is_said_once(tmp_path):
    # One size, one distribution; the row of 2048 keys has no finite rate and is left out.
    csv = tmp_path / "bench.csv"
    csv.write_text(HEADER + row("alpha", "uniform", 1024, 1e9) + row("alpha", "uniform", 2048, "inf")
                   + row("alpha", "zipf", 1024, "nan"))
    result = run_plot(csv, tmp_path / "figures")
    assert result.returncode == 0
    assert result.stdout == ""
    assert result.stderr == "gpusort plot: no figure: no point set has 2 sizes or 2 distributions\n"
    assert list((tmp_path / "figures").iterdir()) == []


@pytest.mark.parametrize("name, text, named", [
    ("missing.csv", None, "no such file"),
    ("empty.csv", "", "empty"),
    ("header.csv", HEADER, "no rows"),
    ("columns.csv", "algorithm,key_type,value_type,distribution,n,segment_size\n"
                    "a,u32,none,uniform,1024,0\n", "keys_per_s"),
    ("n.csv", HEADER + row("a", "uniform", "2^10", 1e9), "2^10"),
    ("short.csv", HEADER + "a,u32,none,uniform,1024,0,1,1e9\n", "8 fields"),
    ("rate.csv", HEADER + row("a", "uniform", 1024, "fast"), "fast"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path, name, text, named):
    if text is not None:
        (tmp_path / name).write_text(text)
    result = run_plot(tmp_path / name, tmp_path / "figures")
    assert result.returncode == 2
    assert result.stderr.startswith("gpusort plot: ") and result.stderr.count("\n") == 1
    assert named in result.stderr
    assert not (tmp_path / "figures").exists()


@needs_matplotlib
def test_a_directory_that_cannot_be_made_is_status_3(tmp_path):
    csv = tmp_path / "bench.csv"
    csv.write_text(sample_csv())
    result = run_plot(csv, csv / "figures")  # under a file
    assert result.returncode == 3
    assert result.stderr.startswith("gpusort plot: ") and result.stderr.count("\n") == 1


def test_missing_matplotlib_is_one_line(tmp_path):
    (tmp_path / "matplotlib").mkdir()
    (tmp_path / "matplotlib" / "__init__.py").write_text("raise ImportError('not here')\n")
    csv = tmp_path / "bench.csv"
    csv.write_text(sample_csv())
    result = run_plot(csv, tmp_path / "figures",
                      env_extra={"PYTHONPATH": f"{tmp_path}{os.pathsep}{PYTHON_DIR}"})
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "python3-matplotlib" in result.stderr


def test_usage(tmp_path):
    result = run_plot(tmp_path / "bench.csv")
    assert result.returncode == 2 and "CSV and DIR" in result.stderr
    assert run_plot("--help").stdout.startswith("Figures of a benchmark CSV")


@needs_matplotlib
def test_python_bench_figure_has_one_bar_per_baseline(tmp_path):
    """gpusort.bench's figure: a PNG with a bar for each (case, baseline) that ran; a baseline
    that ran out of memory (NaN) draws no bar rather than failing."""
    sys.path.insert(0, str(PYTHON_DIR))
    try:
        from gpusort import bench
    finally:
        sys.path.remove(str(PYTHON_DIR))
    rows = [{"case": "sort", "n": 1024, "method": "gpusort", "median_ms": "0.5", "gpu": "G"},
            {"case": "sort", "n": 1024, "method": "torch.sort", "median_ms": "1.0", "gpu": "G"},
            {"case": "big", "n": 8, "method": "gpusort sort_", "median_ms": "2.0", "gpu": "G"},
            {"case": "big", "n": 8, "method": "torch.sort", "median_ms": "nan", "gpu": "G"}]
    path = bench.write_figure(rows, str(tmp_path / "figures"))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
