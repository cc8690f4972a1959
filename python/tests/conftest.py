"""Finds the package: the source folder python/gpusort with the extension module from a
CMake build (GPUSORT_MODULE_DIR, else build/python or build-py/python beside python/), or,
with GPUSORT_TEST_INSTALLED=1, the installed package (pip install ./python)."""

import os
import pathlib
import sys

import pytest

_here = pathlib.Path(__file__).resolve().parent
_python = _here.parent

if os.environ.get("GPUSORT_TEST_INSTALLED") != "1":
    candidates = [os.environ.get("GPUSORT_MODULE_DIR")] + [
        str(_python.parent / build / "python") for build in ("build", "build-py")
    ]
    for folder in candidates:
        if folder and any(pathlib.Path(folder).glob("_gpusort*.so")):
            sys.path.insert(0, folder)
            break
    sys.path.insert(0, str(_python))
sys.path.insert(0, str(_here))  # reference.py


def pytest_report_header(config):
    """Names the gpusort the tests import (the installed one with GPUSORT_TEST_INSTALLED=1)."""
    try:
        import gpusort
    except ImportError as error:
        return f"gpusort: not importable ({error})"
    return f"gpusort: {gpusort.__file__}"


@pytest.fixture(scope="session")
def build_backend():
    """The build backend pip runs (python/build_backend/gpusort_build.py), as a module."""
    folder = str(_python / "build_backend")
    sys.path.insert(0, folder)
    try:
        import gpusort_build
    finally:
        sys.path.remove(folder)
    return gpusort_build


@pytest.fixture
def rng(request):
    """A NumPy generator seeded from the test's name (the seed is printed: pytest shows it
    for a failing test)."""
    import numpy as np

    seed = abs(hash(request.node.name)) % 2**32
    print(f"seed {seed}")
    return np.random.default_rng(seed)
