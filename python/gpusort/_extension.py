"""The compiled module _gpusort, or a stand-in where it cannot be imported, so that the
package's pure-Python parts (gpusort.plot, which `gpusort plot` runs) still import; every
public function then raises an ImportError that names the module and how to build it."""

import functools
import importlib

_HOW_TO_BUILD = (
    "gpusort's compiled module gpusort._gpusort cannot be imported ({cause}). Install the "
    "package with `pip install ./python` from the repository's root, which builds the module "
    "(it needs the CUDA toolkit, CMake >= 3.25, a C++20 compiler, Python's headers and "
    "pybind11); or, to use the module of a CMake build of the repository, put the build "
    "folder's python/ (build/python) on PYTHONPATH."
)


class _MissingExtension:
    def __init__(self, cause):
        self._cause = cause

    def fail(self):
        message = _HOW_TO_BUILD.format(cause=self._cause)
        raise ImportError(message, name="gpusort._gpusort") from self._cause

    def __getattr__(self, name):
        self.fail()


def _load():
    try:
        return importlib.import_module(f"{__package__}._gpusort")
    except ImportError as error:
        packaged = error
    try:  # a development build: the module sits in the CMake build folder
        return importlib.import_module("_gpusort")
    except ImportError as error:
        # A module that is there but does not load (a CUDA library missing, say) says more
        # than the other one's absence.
        if isinstance(packaged, ModuleNotFoundError) and not isinstance(error, ModuleNotFoundError):
            return _MissingExtension(error)
        return _MissingExtension(packaged)


ext = _load()


@functools.cache
def dist_module():
    """_gpusort_dist (gpusort::dist over NCCL, for gpusort.distributed), from the package or a
    development build as _gpusort is; None where the package was built without NCCL or the
    module does not load."""
    for name in (f"{__package__}._gpusort_dist", "_gpusort_dist"):
        try:
            return importlib.import_module(name)
        except ImportError:
            pass
    return None


def needs_module(function):
    """function itself; without the compiled module, a function that raises its ImportError
    before any argument check (which would fail for want of the module's algorithm table,
    with a misleading message)."""
    if not isinstance(ext, _MissingExtension):
        return function

    @functools.wraps(function)
    def missing(*args, **kwargs):
        ext.fail()

    return missing
