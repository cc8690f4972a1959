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

def _fake_program(path, isolated_output, plain_output):
    """A program that fails under pip's build isolation (PYTHONPATH holding a pip-build-env
    folder), as pip's own CMake script does, and prints plain_output without it."""
    path.write_text(
        "#!/bin/sh\n"
        'case "$PYTHONPATH" in *pip-build-env*) echo "' + isolated_output + '" >&2; exit 1;; esac\n'
        'echo "' + plain_output + '"\n'
    )
    path.chmod(0o755)


def test_the_backend_finds_tools_hidden_by_pip_isolation(tmp_path, monkeypatch, build_backend):
    """Under pip's build isolation, a CMake and a pybind11 installed with pip are still found,
    so an offline `pip install ./python` asks the index for neither."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_program(bin_dir / "cmake", "ModuleNotFoundError: No module named 'cmake'",
                  "cmake version 3.31.6")
    cmake_dir = tmp_path / "pybind11" / "share" / "cmake" / "pybind11"
    cmake_dir.mkdir(parents=True)
    _fake_program(tmp_path / "python", "ModuleNotFoundError: No module named 'pybind11'",
                  str(cmake_dir))
    isolation = tmp_path / "pip-build-env-abc" / "site"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", f"{isolation}{os.pathsep}/kept")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setitem(sys.modules, "pybind11", None)  # not importable in-process

    assert build_backend._tool_env()["PYTHONPATH"] == "/kept"
    assert build_backend._cmake() == (str(bin_dir / "cmake"), (3, 31))
    assert build_backend._pybind11_cmake_dir() == str(cmake_dir)
    assert build_backend.get_requires_for_build_wheel() == []
    # Where CMake is nowhere, it is asked for (pybind11 may still be the system's).
    (bin_dir / "cmake").unlink()
    monkeypatch.setenv("PATH", str(bin_dir))
    (tmp_path / "python").write_text("#!/bin/sh\nexit 1\n")
    assert "cmake>=3.25" in build_backend.get_requires_for_build_wheel()
    assert build_backend._pybind11_cmake_dir() is None
