"""With GPUSORT_TEST_INSTALLED=1 (scripts/test.sh, scripts/gpu-check.sh), the tests must run
against the package pip installed, not against the source folder python/gpusort."""

import importlib
import os
import pathlib
import sys
import sysconfig

import pytest

installed = os.environ.get("GPUSORT_TEST_INSTALLED") == "1"


@pytest.mark.skipif(not installed, reason="GPUSORT_TEST_INSTALLED is not 1")
def test_imports_the_installed_package():
    import gpusort

    package = pathlib.Path(gpusort.__file__).resolve().parent
    print(f"gpusort from {package}")
    site = {pathlib.Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    assert package.parent in site, f"{package} is not in this environment's site-packages {site}"
    source = pathlib.Path(__file__).resolve().parent.parent / "gpusort"
    assert package != source
    # The compiled module came with the package.
    module = importlib.import_module("gpusort._gpusort")
    assert pathlib.Path(module.__file__).resolve().parent == package
    # gpusort falls back to a top-level _gpusort (a CMake build folder's) only without its own.
    assert "_gpusort" not in sys.modules, "a _gpusort from a CMake build folder was imported"
