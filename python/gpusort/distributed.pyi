# The types of gpusort.distributed (distributed.py): torch tensors in, torch tensors out.
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, overload

class DistSortResult(NamedTuple):
    keys: Any  # a tensor, or a list of them for a list of shards
    values: Any  # the same, or None without values
    counts: Any  # int64 tensor: how many keys every rank (shard) holds now

@overload
def sort(
    keys: Sequence[Any],
    values: Sequence[Any] | None = None,
    *,
    descending: bool = False,
    stable: bool = False,
    nans: Literal["last", "first"] = "last",
    group: Any = None,
    partition_first: bool = False,
    overwrite_input: bool = False,
) -> DistSortResult: ...
@overload
def sort(
    keys: Any,
    values: Any = None,
    *,
    descending: bool = False,
    stable: bool = False,
    nans: Literal["last", "first"] = "last",
    group: Any = None,
    partition_first: bool = False,
    overwrite_input: bool = False,
) -> DistSortResult: ...
def release(group: Any = None) -> None: ...
