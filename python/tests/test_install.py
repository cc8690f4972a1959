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


def test_the_wheel_metadata_names_the_license(tmp_path, build_backend):
    """The backend's METADATA says Apache-2.0 and the wheel's .dist-info carries the
    repository's LICENSE (what pip installs; checked on the installed package below)."""
    dist_info = tmp_path / build_backend.prepare_metadata_for_build_wheel(str(tmp_path))
    metadata = (dist_info / "METADATA").read_text(encoding="utf-8")
    assert "\nLicense: Apache-2.0\n" in metadata
    license_text = (pathlib.Path(__file__).resolve().parents[2] / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in license_text and "Version 2.0" in license_text
    assert (dist_info / "LICENSE").read_text(encoding="utf-8") == license_text


@pytest.mark.skipif(not installed, reason="GPUSORT_TEST_INSTALLED is not 1")
def test_the_installed_package_carries_its_license():
    from importlib import metadata

    assert metadata.metadata("gpusort")["License"] == "Apache-2.0"
    files = [f for f in metadata.files("gpusort") if f.name == "LICENSE"]
    assert files and "Apache License" in files[0].read_text(encoding="utf-8")
