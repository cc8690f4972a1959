"""gpusort.sort_lines against `LC_ALL=C sort` (coreutils) with the same options, byte for byte;
the list form; the errors. The library's own differential suite is tests/cpu/test_cpu_lines.cpp:
these check what the package adds (option names, the two forms, bytes-likes)."""

import os
import shutil
import subprocess

import pytest

import gpusort

pytestmark = pytest.mark.skipif(shutil.which("sort") is None, reason="no GNU sort here")


def gnu_sort(text, *options):
    done = subprocess.run(["sort", *options], input=text, capture_output=True, check=True,
                          env=dict(os.environ, LC_ALL="C"))
    return done.stdout


def csv_text(rng, lines=400):
    """CSV rows with a word, a signed decimal, a small integer with repeats, and blanks."""
    words = [b"pear", b"apple", b" fig", b"Kiwi", b"", b"apple2", b"\xc3\xa9clair"]
    rows = []
    for _ in range(lines):
        word = words[rng.integers(len(words))]
        number = f"{rng.normal() * 1000:.{rng.integers(0, 3)}f}".encode()
        rows.append(b",".join([word, number, str(rng.integers(0, 9)).encode(), b"  x"]))
    return b"\n".join(rows)  # no final newline: GNU adds one


@pytest.mark.parametrize("options, gnu", [
    ({}, []),
    ({"reverse": True}, ["-r"]),
    ({"unique": True}, ["-u"]),
    ({"key": "2,2n", "separator": ","}, ["-t,", "-k2,2n"]),
    ({"key": ["3,3", "2,2nr"], "separator": ",", "stable": True}, ["-t,", "-k3,3", "-k2,2nr", "-s"]),
    ({"key": "3,3", "separator": ",", "unique": True, "reverse": True}, ["-t,", "-k3,3", "-u", "-r"]),
    ({"numeric": True, "key": "2", "separator": ","}, ["-n", "-t,", "-k2"]),
    ({"key": "1.2,1.3b", "skip_blanks": True}, ["-b", "-k1.2,1.3b"]),
])
def test_bytes_match_gnu_sort(rng, options, gnu):
    text = csv_text(rng)
    assert gpusort.sort_lines(text, **options) == gnu_sort(text, *gnu)
    assert gpusort.sort_lines(bytearray(text), **options) == gnu_sort(text, *gnu)


def test_zero_terminated_records_match_gnu_sort(rng):
    text = b"\0".join(csv_text(rng, 50).replace(b",", b"\n").split(b"  x"))
    assert gpusort.sort_lines(text, zero_terminated=True) == gnu_sort(text, "-z")


def test_lists_come_back_in_order():
    words = ["pear", "apple", "Zebra", "éclair", "apple", ""]
    assert gpusort.sort_lines(words) == sorted(words, key=lambda w: w.encode())
    assert gpusort.sort_lines(words, unique=True, reverse=True) == ["éclair", "pear", "apple", "Zebra", ""]
    assert gpusort.sort_lines([b"b 2", b"a 10", b"c 1"], key="2n") == [b"c 1", b"b 2", b"a 10"]
    assert gpusort.sort_lines([]) == []
    assert gpusort.sort_lines(b"") == b""


def test_errors_before_any_work():
    with pytest.raises(ValueError, match="M"):
        gpusort.sort_lines(b"a\n", key="1M")  # month order: not taken
    with pytest.raises(ValueError):
        gpusort.sort_lines(b"a\n", key="0,1")  # GNU refuses field 0
    with pytest.raises(ValueError, match="one byte"):
        gpusort.sort_lines(b"a\n", separator=",;")
    with pytest.raises(ValueError, match="terminator"):
        gpusort.sort_lines(["a\nb"])
    with pytest.raises(TypeError):
        gpusort.sort_lines("a\nb\n")  # a str is not bytes: encode it, or pass its lines
    with pytest.raises(TypeError):
        gpusort.sort_lines([b"a", 1])
    with pytest.raises(TypeError):
        gpusort.sort_lines(b"a", key=[1])
