"""``Cell.flatten_weights(fusion_size=0)``: the trainable parameters of one dtype (and device)
become views into one contiguous buffer, as MindSpore's method makes them.

Values, names and flags are unchanged; only where the data lives changes. An optimizer built
afterwards over the same parameters in the same order adopts that buffer as its own flat
bank (no copy; see ``optim.optimizer._Bank``), so the cell's buffer stays the live one
during training. ``fusion_size`` (bytes, 0 = unlimited) splits a dtype's parameters into
chunks of at most that size; a parameter larger than it gets a chunk of its own.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FlattenWeightsMixin", "flat_buffer_of"]


class FlattenWeightsMixin:
    """Mixed into :class:`~sporeling.core.nn.Cell`."""

    def flatten_weights(self, fusion_size: int = 0) -> None:
        """Put the trainable parameters of each dtype into contiguous memory (see module)."""
        if isinstance(fusion_size, bool) or not isinstance(fusion_size, int) or fusion_size < 0:
            raise ValueError(
                f"{type(self).__name__}.flatten_weights: argument 'fusion_size' expected an "
                f"int >= 0 (bytes, 0 for unlimited), got {fusion_size!r}"
            )
        groups: dict[tuple[int, str], list[Any]] = {}
        for p in self.trainable_params():  # type: ignore[attr-defined]
            groups.setdefault((id(p._device), str(p._data.dtype)), []).append(p)
        buffers = []
        for params in groups.values():
            for chunk in _chunks(params, fusion_size):
                buffers.append(_flatten(chunk))
        object.__setattr__(self, "_flat_weights", buffers)


def _chunks(params: list[Any], limit: int) -> list[list[Any]]:
    if limit == 0:
        return [params]
    out: list[list[Any]] = [[]]
    used = 0
    for p in params:
        size = p._data.nbytes
        if out[-1] and used + size > limit:
            out.append([])
            used = 0
        out[-1].append(p)
        used += size
    return out


def _flatten(params: list[Any]) -> Any:
    xp = params[0]._device.xp
    total = sum(int(p._data.size) for p in params)
    flat = xp.empty(total, params[0]._data.dtype)
    start = 0
    for p in params:
        stop = start + int(p._data.size)
        flat[start:stop] = p._data.reshape(-1)
        p._data = flat[start:stop].reshape(p._data.shape)
        p._node = None
        start = stop
    return flat


def flat_buffer_of(params: list[Any], dtype: Any, total: int) -> Any:
    """The 1-D buffer ``params`` are consecutive views into, in order, or None."""
    import numpy as np

    first = params[0]._data
    base = first.base
    if not isinstance(first, np.ndarray) or not isinstance(base, np.ndarray):
        return None
    if base.ndim != 1 or base.dtype != dtype or base.size != total or not base.flags.c_contiguous:
        return None
    start = base.__array_interface__["data"][0]
    offset = 0
    for p in params:
        a = p._data
        if (
            not isinstance(a, np.ndarray)
            or a.base is not base
            or not a.flags.c_contiguous
            or a.__array_interface__["data"][0] != start + offset * base.itemsize
        ):
            return None
        offset += a.size
    return base if offset == total else None
