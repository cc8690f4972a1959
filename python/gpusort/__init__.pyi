# The types of gpusort's public API (PEP 561; py.typed marks the package). Arrays of any
# library go in and come back as the caller's type, which _A carries; NumPy arrays keep their
# dtype in values, and indices are NumPy integers. tests/test_packaging.py checks these
# signatures against the functions' own and runs mypy over a use of them.

from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any, Generic, Literal, NamedTuple, SupportsIndex, TypeVar, overload

import numpy as np

_A = TypeVar("_A")
_V = TypeVar("_V")
_I = TypeVar("_I")
_L = TypeVar("_L", str, bytes)
_D = TypeVar("_D", bound=np.dtype[Any])
_NumPy = np.ndarray[Any, _D]
_Indices = np.ndarray[Any, np.dtype[np.signedinteger[Any]]]  # int64, or int32 on request
_Int64 = np.ndarray[Any, np.dtype[np.int64]]
_Nans = Literal["last", "first"]
_IndicesDtype = Literal["int64", "int32"]
_Path = str | bytes | PathLike[str] | PathLike[bytes]
_Progress = Callable[[str, int, int], object]

# Each NumPy overload comes first: the generic one after it would also take NumPy arrays, and
# gives their indices the keys' type (mypy's "overlap with incompatible return types", misc).

__all__ = [
    "sort",
    "argsort",
    "sort_",
    "sort_segmented",
    "topk",
    "kthvalue",
    "partition",
    "argpartition",
    "approx_sort",
    "sort_file",
    "sort_records_file",
    "sort_lines",
    "unique",
    "searchsorted",
    "bucketize",
    "lexsort",
    "sample_top_k_top_p",
    "gpu_available",
    "Error",
    "ALGORITHMS",
    "ALGORITHM_TRAITS",
    "AlgorithmTraits",
    "KEY_DTYPES",
    "NARROW_KEY_DTYPES",
    "__version__",
]

__version__: str

class Error(RuntimeError): ...

class AlgorithmTraits:
    name: str
    stable: bool
    in_place: bool
    sorts_rows: bool
    capturable: bool
    takes_comparator: bool
    max_value_bytes: int
    def __init__(self, name: str, *traits: bool | int) -> None: ...

ALGORITHM_TRAITS: dict[str, AlgorithmTraits]
ALGORITHMS: tuple[str, ...]
KEY_DTYPES: tuple[str, ...]
NARROW_KEY_DTYPES: tuple[str, ...]
FILE_KEY_DTYPES: tuple[str, ...]

class SortResult(NamedTuple, Generic[_V, _I]):
    values: _V
    indices: _I

class TopkResult(NamedTuple, Generic[_V, _I]):
    values: _V
    indices: _I

# kthvalue of a 1-D NumPy array gives NumPy scalars, not arrays.
class KthvalueResult(NamedTuple):
    values: Any
    indices: Any

class ApproxResult(NamedTuple, Generic[_V, _I]):
    values: _V
    offsets: _I

def gpu_available() -> bool: ...
@overload
def sort(  # type: ignore[misc]
    x: _NumPy[_D],
    dim: SupportsIndex = -1,
    descending: bool = False,
    stable: bool = False,
    *,
    axis: SupportsIndex = -1,
    algorithm: str = "automatic",
    nans: _Nans = "last",
    indices_dtype: _IndicesDtype = "int64",
    out: None = None,
) -> SortResult[_NumPy[_D], _Indices]: ...
@overload
def sort(
    x: _A,
    dim: SupportsIndex = -1,
    descending: bool = False,
    stable: bool = False,
    *,
    axis: SupportsIndex = -1,
    algorithm: str = "automatic",
    nans: _Nans = "last",
    indices_dtype: _IndicesDtype = "int64",
    out: tuple[_A, _A] | list[_A] | None = None,
) -> SortResult[_A, _A]: ...
@overload
def argsort(
    x: _NumPy[Any],
    dim: SupportsIndex = -1,
    descending: bool = False,
    stable: bool = False,
    *,
    axis: SupportsIndex = -1,
    algorithm: str = "automatic",
    nans: _Nans = "last",
    indices_dtype: _IndicesDtype = "int64",
    out: None = None,
) -> _Indices: ...
@overload
def argsort(
    x: _A,
    dim: SupportsIndex = -1,
    descending: bool = False,
    stable: bool = False,
    *,
    axis: SupportsIndex = -1,
    algorithm: str = "automatic",
    nans: _Nans = "last",
    indices_dtype: _IndicesDtype = "int64",
    out: _A | None = None,
) -> _A: ...
def sort_(
    x: _A,
    *,
    dim: SupportsIndex = -1,
    axis: SupportsIndex = -1,
    descending: bool = False,
    stable: bool = False,
    algorithm: str = "automatic",
    nans: _Nans = "last",
) -> _A: ...
@overload
def sort_segmented(  # type: ignore[misc]
    x: _NumPy[_D],
    offsets: object,
    *,
    descending: bool = False,
    algorithm: str = "automatic",
    nans: _Nans = "last",
) -> SortResult[_NumPy[_D], _Int64]: ...
@overload
def sort_segmented(
    x: _A,
    offsets: object,
    *,
    descending: bool = False,
    algorithm: str = "automatic",
    nans: _Nans = "last",
) -> SortResult[_A, _A]: ...
@overload
def topk(  # type: ignore[misc]
    x: _NumPy[_D],
    k: SupportsIndex,
    dim: SupportsIndex = -1,
    largest: bool = True,
    sorted: bool = True,
    *,
    axis: SupportsIndex = -1,
    out: None = None,
) -> TopkResult[_NumPy[_D], _Int64]: ...
@overload
def topk(
    x: _A,
    k: SupportsIndex,
    dim: SupportsIndex = -1,
    largest: bool = True,
    sorted: bool = True,
    *,
    axis: SupportsIndex = -1,
    out: tuple[_A, _A] | list[_A] | None = None,
) -> TopkResult[_A, _A]: ...
def kthvalue(
    x: object,
    k: SupportsIndex,
    dim: SupportsIndex = -1,
    keepdim: bool = False,
    *,
    axis: SupportsIndex = -1,
) -> KthvalueResult: ...
def partition(
    x: _A,
    kth: SupportsIndex | Sequence[SupportsIndex],
    axis: SupportsIndex | None = -1,
    *,
    dim: SupportsIndex | None = -1,
) -> _A: ...
@overload
def argpartition(
    x: _NumPy[Any],
    kth: SupportsIndex | Sequence[SupportsIndex],
    axis: SupportsIndex | None = -1,
    *,
    dim: SupportsIndex | None = -1,
) -> _Int64: ...
@overload
def argpartition(
    x: _A,
    kth: SupportsIndex | Sequence[SupportsIndex],
    axis: SupportsIndex | None = -1,
    *,
    dim: SupportsIndex | None = -1,
) -> _A: ...
@overload
def approx_sort(  # type: ignore[misc]
    x: _NumPy[_D], intervals: SupportsIndex = 10000, *, descending: bool = False
) -> ApproxResult[_NumPy[_D], _Int64]: ...
@overload
def approx_sort(
    x: _A, intervals: SupportsIndex = 10000, *, descending: bool = False
) -> ApproxResult[_A, _A]: ...
def sort_file(
    src: _Path,
    dst: _Path,
    dtype: object,
    *,
    pairs: bool = False,
    descending: bool = False,
    algorithm: str = "automatic",
    device_memory: SupportsIndex | None = None,
    memory: SupportsIndex | None = None,
    scratch_dir: _Path | None = None,
    progress: _Progress | None = None,
    nans: _Nans = "last",
) -> dict[str, str]: ...
def sort_records_file(
    src: _Path,
    dst: _Path,
    record_bytes: SupportsIndex,
    key_bytes: SupportsIndex,
    key_offset: SupportsIndex = 0,
    *,
    descending: bool = False,
    device_memory: SupportsIndex | None = None,
    memory: SupportsIndex | None = None,
    scratch_dir: _Path | None = None,
    progress: _Progress | None = None,
) -> dict[str, str]: ...
@overload
def sort_lines(
    text: bytes | bytearray | memoryview,
    *,
    key: str | Sequence[str] = (),
    separator: str | bytes | None = None,
    numeric: bool = False,
    reverse: bool = False,
    skip_blanks: bool = False,
    unique: bool = False,
    stable: bool = False,
    zero_terminated: bool = False,
) -> bytes: ...
@overload
def sort_lines(
    text: Sequence[_L],
    *,
    key: str | Sequence[str] = (),
    separator: str | bytes | None = None,
    numeric: bool = False,
    reverse: bool = False,
    skip_blanks: bool = False,
    unique: bool = False,
    stable: bool = False,
    zero_terminated: bool = False,
) -> list[_L]: ...
def unique(
    x: _A,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: SupportsIndex | None = None,
    *,
    axis: SupportsIndex | None = None,
    return_index: bool = False,
    equal_nan: bool | None = None,
) -> Any: ...  # x's type, or a tuple of it (NumPy's order) with any return_ flag
@overload
def searchsorted(
    sorted_sequence: _NumPy[Any],
    values: _NumPy[Any],
    side: Literal["left", "right"] | None = None,
    sorter: _NumPy[Any] | None = None,
    *,
    right: bool = False,
    out_int32: bool = False,
) -> _Indices: ...
@overload
def searchsorted(
    sorted_sequence: _A,
    values: _A,
    side: Literal["left", "right"] | None = None,
    sorter: _A | None = None,
    *,
    right: bool = False,
    out_int32: bool = False,
) -> _A: ...
@overload
def bucketize(
    input: _NumPy[Any], boundaries: _NumPy[Any], *, out_int32: bool = False, right: bool = False
) -> _Indices: ...
@overload
def bucketize(input: _A, boundaries: _A, *, out_int32: bool = False, right: bool = False) -> _A: ...
@overload
def lexsort(
    keys: Sequence[_NumPy[Any]],
    axis: SupportsIndex = -1,
    *,
    dim: SupportsIndex = -1,
    descending: bool | Sequence[bool] = False,
) -> _Int64: ...
@overload
def lexsort(
    keys: Sequence[_A],
    axis: SupportsIndex = -1,
    *,
    dim: SupportsIndex = -1,
    descending: bool | Sequence[bool] = False,
) -> _A: ...
def sample_top_k_top_p(
    logits: _A,
    k: int,
    p: float = 1.0,
    temperature: float = 1.0,
    generator: Any = None,
) -> _A: ...
