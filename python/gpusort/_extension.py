"""The compiled module _gpusort, or a stand-in where it cannot be imported, so that the
package's pure-Python parts (gpusort.plot, which `gpusort plot` runs) still import; any
sort then raises the original ImportError."""


class _MissingExtension:
    def __init__(self, error):
        self._error = error

    def __getattr__(self, name):
        raise ImportError(f"gpusort's compiled module _gpusort is missing: {self._error}")


try:
    from . import _gpusort as ext
except ImportError:
    try:  # a development build: the module sits in the CMake build folder
        import _gpusort as ext
    except ImportError as _error:
        ext = _MissingExtension(_error)
