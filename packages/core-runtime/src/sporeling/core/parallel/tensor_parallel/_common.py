"""Helpers the sharded layers share: divisibility checks, slicing parameters, the mixin."""

from __future__ import annotations

from ...tensor import Parameter, Tensor
from .regions import _chunk, group_rank_size

# ---- helpers ------------------------------------------------------------------------------


def _divisible(cls: str, what: str, n: int, size: int) -> int:
    if n % size:
        raise ValueError(
            f"{cls}: {what} ({n}) must be divisible by the model-parallel group size ({size}); "
            "choose a group size that divides it"
        )
    return n // size


def _shard_param(param: Parameter, axis: int, rank: int, size: int) -> None:
    """Replace ``param``'s data with this rank's slice of ``axis`` (name and flags kept)."""
    if size == 1:
        return
    xp = param._device.xp
    param.set_data(Tensor._wrap(_chunk(xp, param._data, axis, rank, size), param._device))


def _copy_from(param: Parameter, source: Tensor, axis: int | None, rank: int, size: int) -> None:
    data = source._data
    if axis is not None and size > 1:
        data = _chunk(source._device.xp, data, axis, rank, size)
    param.set_data(Tensor._wrap(data.copy(), source._device))


class _ParallelMixin:
    """``group``, ``rank``/``group_size`` and the sharded-axis table."""

    tensor_parallel_axes: dict[str, int | tuple[int, int]]
    group: str | None
    mp_rank: int
    mp_size: int

    def _init_group(self, group: str | None) -> None:
        if group is not None and not isinstance(group, str):
            raise TypeError(
                f"{type(self).__name__}: argument 'group' expected a group name (str) or None, "
                f"got {type(group).__name__}"
            )
        self.group = group
        self.mp_rank, self.mp_size = group_rank_size(group)
