"""The package as users install and type-check it: the Python it declares covers the code,
an ImportError that says how to build a missing compiled module, and type stubs (py.typed,
__init__.pyi) that match the functions, that mypy reads, and that the wheel carries."""

import ast
import inspect
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

import gpusort

PACKAGE = pathlib.Path(gpusort.__file__).resolve().parent  # the one imported: installed or not
SOURCE = pathlib.Path(__file__).resolve().parents[1]  # python/
STUB = SOURCE / "gpusort" / "__init__.pyi"
installed = os.environ.get("GPUSORT_TEST_INSTALLED") == "1"


# ---- requires-python ----------------------------------------------------------------------

# Calls of the standard library that are newer than Python 3.8, as the package has used them:
# (function or method name, keyword or None) -> the first Python that has it.
_NEWER_CALLS = {("zip", "strict"): (3, 10), ("removeprefix", None): (3, 9),
                ("removesuffix", None): (3, 9)}


def _python_needed(tree):
    """The newest Python among _NEWER_CALLS that the parsed module calls."""
    needed = (3, 8)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        for keyword in [None] + [k.arg for k in node.keywords]:
            needed = max(needed, _NEWER_CALLS.get((name, keyword), needed))
    return needed


def test_requires_python_covers_the_code(tmp_path, build_backend):
    """The wheel's Requires-Python (from pyproject.toml) is at least what the package and its
    tests need: every file parses as that Python's syntax, and no call needs a newer one."""
    dist_info = tmp_path / build_backend.prepare_metadata_for_build_wheel(str(tmp_path))
    metadata = (dist_info / "METADATA").read_text(encoding="utf-8")
    declared = re.search(r"^Requires-Python: >=(\d+)\.(\d+)$", metadata, re.M)
    assert declared, "METADATA has no Requires-Python: >=X.Y"
    declared = (int(declared[1]), int(declared[2]))
    needed = {}
    for path in sorted(SOURCE.glob("gpusort/*.py*")) + sorted(SOURCE.glob("tests/*.py")):
        name = path.relative_to(SOURCE).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), name, feature_version=declared)
        except SyntaxError as error:
            pytest.fail(f"{name} is not Python {declared} syntax: {error}")
        needed[name] = _python_needed(tree)
    assert max(needed.values()) <= declared, {k: v for k, v in needed.items() if v > declared}
    assert needed["gpusort/_core.py"] == (3, 10), "zip(strict=True) in _core.py is no longer seen"


# ---- without the compiled module -----------------------------------------------------------

_HIDE_THE_MODULE = """
import importlib.abc, sys

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.rpartition(".")[2] == "_gpusort":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Hide())
"""


def test_a_missing_module_raises_an_import_error_that_says_how_to_build_it():
    """With _gpusort hidden, gpusort and gpusort.plot import, and every public function
    raises ImportError naming the module and pip install, before any argument check."""
    check = _HIDE_THE_MODULE + textwrap.dedent("""
        import numpy as np
        import gpusort, gpusort.plot

        x = np.arange(5, dtype=np.int32)
        calls = {
            "sort": lambda: gpusort.sort(x), "argsort": lambda: gpusort.argsort(x, 0),
            "sort_": lambda: gpusort.sort_(x), "topk": lambda: gpusort.topk(x, 2),
            "kthvalue": lambda: gpusort.kthvalue(x, 1), "partition": lambda: gpusort.partition(x, 1),
            "argpartition": lambda: gpusort.argpartition(x, 1),
            "sort_segmented": lambda: gpusort.sort_segmented(x, np.array([0, 5])),
            "approx_sort": lambda: gpusort.approx_sort(x),
            "sort_file": lambda: gpusort.sort_file("in", "out", "int32"),
            "sort_records_file": lambda: gpusort.sort_records_file("in", "out", 8, 4),
            "sort_lines": lambda: gpusort.sort_lines(b"b a"),
            "unique": lambda: gpusort.unique(x),
            "searchsorted": lambda: gpusort.searchsorted(x, x),
            "bucketize": lambda: gpusort.bucketize(x, x),
            "lexsort": lambda: gpusort.lexsort([x]),
            "sample_top_k_top_p": lambda: gpusort.sample_top_k_top_p(x, 2),
            "gpu_available": gpusort.gpu_available,
            "a bad argument": lambda: gpusort.sort("not an array", dim=99, algorithm="none"),
        }
        functions = {n for n in gpusort.__all__ if callable(getattr(gpusort, n))
                     and not isinstance(getattr(gpusort, n), type)}
        assert functions <= set(calls), functions - set(calls)
        for name, call in calls.items():
            try:
                call()
            except ImportError as error:
                assert error.name == "gpusort._gpusort", (name, error.name)
                message = str(error)
                assert "gpusort._gpusort cannot be imported" in message, (name, message)
                assert "pip install ./python" in message and "build/python" in message, message
            else:
                raise AssertionError(name + " raised nothing")
        print(message)
    """)
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent))
    run = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True,
                         cwd=PACKAGE.parent, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "No module named 'gpusort._gpusort'" in run.stdout


# ---- type stubs ---------------------------------------------------------------------------


def _stub_tree():
    return ast.parse(STUB.read_text(encoding="utf-8"), str(STUB))


def _stub_names(tree):
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets)
    return names


def test_every_public_name_has_a_stub():
    tree = _stub_tree()
    stub_all = next(ast.literal_eval(n.value) for n in tree.body
                    if isinstance(n, ast.Assign) and n.targets[0].id == "__all__")
    assert stub_all == gpusort.__all__
    assert set(gpusort.__all__) <= _stub_names(tree)
    assert (STUB.parent / "py.typed").is_file()


def _stub_signatures(tree):
    """name -> (kind, name, default source) of each parameter of each stubbed function, the
    parameters of all its overloads being the same."""
    signatures = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        a = node.args
        positional = [(inspect.Parameter.POSITIONAL_OR_KEYWORD, p) for p in a.args]
        defaults = [None] * (len(a.args) - len(a.defaults)) + a.defaults
        params = [(kind, p.arg, d) for (kind, p), d in zip(positional, defaults, strict=True)]
        params += [(inspect.Parameter.KEYWORD_ONLY, p.arg, d)
                   for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
        params = [(kind, name, None if d is None else ast.unparse(d)) for kind, name, d in params]
        assert signatures.setdefault(node.name, params) == params, f"{node.name}: overloads differ"
    return signatures


def _runtime_signature(function):
    return [(p.kind, p.name, None if p.default is p.empty else repr(p.default))
            for p in inspect.signature(function).parameters.values()]


def test_stubs_match_the_functions():
    """Every public function's stub has its parameters: names, kinds and defaults."""
    stubs = _stub_signatures(_stub_tree())
    functions = [n for n in gpusort.__all__ if inspect.isfunction(getattr(gpusort, n))]
    assert sorted(functions) == sorted(stubs)
    for name in functions:
        assert stubs[name] == _runtime_signature(getattr(gpusort, name)), name


_TYPED_USE = """
import numpy as np
import numpy.typing as npt

import gpusort

x: npt.NDArray[np.float32] = np.zeros((4, 8), np.float32)
values, indices = gpusort.sort(x, 0, True, False, algorithm="automatic", nans="first")
kept: npt.NDArray[np.float32] = values
where: npt.NDArray[np.signedinteger[npt.NBitBase]] = indices
order: npt.NDArray[np.signedinteger[npt.NBitBase]] = gpusort.argsort(x, axis=0, indices_dtype="int32")
top = gpusort.topk(x, 3, -1, False, False)
largest: npt.NDArray[np.float32] = top.values
columns: npt.NDArray[np.int64] = top.indices
third = gpusort.kthvalue(x, 3, 1, True).values
same: npt.NDArray[np.float32] = gpusort.sort_(x, dim=1)
parts: npt.NDArray[np.float32] = gpusort.partition(x, [1, 2], None)
picks: npt.NDArray[np.int64] = gpusort.argpartition(x, 1, dim=0)
flat = x.reshape(-1)
segments = gpusort.sort_segmented(flat, np.array([0, 16, 32]), descending=True)
intervals: npt.NDArray[np.int64] = gpusort.approx_sort(flat, 4).offsets
stats: dict[str, str] = gpusort.sort_file("in", "out", np.float32, progress=lambda p, d, t: None)
gpusort.sort_records_file(b"in", "out", 100, 10, 0, memory=2**30)
lines_out: bytes = gpusort.sort_lines(b"b,2 a,1", key="2,2n", separator=",")
words: list[str] = gpusort.sort_lines(["b", "a"], unique=True)
distinct = gpusort.unique(flat, return_counts=True)
places: npt.NDArray[np.signedinteger[npt.NBitBase]] = gpusort.searchsorted(flat, flat, "right")
buckets: npt.NDArray[np.signedinteger[npt.NBitBase]] = gpusort.bucketize(flat, flat, right=True)
by_keys: npt.NDArray[np.int64] = gpusort.lexsort([flat, flat], descending=[True, False])
tokens = gpusort.sample_top_k_top_p(x, 5, p=0.9, temperature=0.7)
import gpusort.distributed
ranges = gpusort.distributed.sort([flat, flat], stable=True, nans="first")
held = ranges.counts
traits: bool = gpusort.ALGORITHM_TRAITS["bitonic"].stable
names: tuple[str, ...] = gpusort.ALGORITHMS
version: str = gpusort.__version__
found: bool = gpusort.gpu_available()


class Tensor:  # any other library's array comes back as its own type
    pass


t_values, t_indices = gpusort.sort(Tensor(), out=(Tensor(), Tensor()))
as_tensor: Tensor = t_indices
"""

# Each line must draw an error of mypy's (the comment says which).
_WRONG_USE = """
import numpy as np

import gpusort

x = np.zeros(8, np.float32)
gpusort.sort(x, 0, False, False, "automatic")  # too many positional arguments
gpusort.sort(x, nans="middle")  # not a NaN placement
gpusort.sort(x, indices_dtype="int16")  # not an index type
gpusort.sort_(x, 0)  # sort_ takes dim by keyword
gpusort.topk(x)  # k is missing
gpusort.kthvalue(x, 1, 0, True, 0)  # too many positional arguments
gpusort.partition(x, "1")  # kth is not an integer
gpusort.sort_file(1, "out", "int32")  # src is not a path
gpusort.sort_lines(b"a", "1,1")  # key is a keyword
wrong: str = gpusort.sort(x).values  # values are arrays
"""


@pytest.fixture(scope="module")
def mypy(tmp_path_factory):
    """Runs mypy (strict, as Python 3.10) over a file of code that uses the source folder's
    stubs; (exit status, output)."""
    pytest.importorskip("mypy", reason="mypy is not installed (Debian: python3-mypy)")
    folder = tmp_path_factory.mktemp("mypy")
    env = dict(os.environ, MYPYPATH=str(SOURCE))

    def run(name, code):
        path = folder / name
        path.write_text(code, encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--python-version", "3.10",
                               "--cache-dir", str(folder / "cache"), "--no-error-summary",
                               "--hide-error-context", str(path)],
                              env=env, cwd=folder, capture_output=True, text=True, timeout=300)
        return done.returncode, done.stdout + done.stderr

    return run


def test_mypy_accepts_typed_use_of_every_function(mypy):
    status, output = mypy("typed_use.py", _TYPED_USE)
    assert status == 0, output


def test_mypy_refuses_wrong_calls(mypy):
    status, output = mypy("wrong_use.py", _WRONG_USE)
    lines = _WRONG_USE.split("\n")
    expected = {n + 1 for n, line in enumerate(lines) if "  # " in line}
    flagged = {int(m) for m in re.findall(r"wrong_use\.py:(\d+): error", output)}
    assert status == 1 and flagged == expected, output


def test_the_wheel_carries_the_stubs(build_backend):
    files = {name for name, _ in build_backend._package_files()}
    assert {"gpusort/py.typed", "gpusort/__init__.pyi"} <= files


@pytest.mark.skipif(not installed, reason="GPUSORT_TEST_INSTALLED is not 1")
def test_the_installed_package_carries_the_stubs():
    assert (PACKAGE / "py.typed").is_file()
    assert (PACKAGE / "__init__.pyi").read_bytes() == STUB.read_bytes()
