"""Argument checks shared by the ``ops.array`` functions."""

from __future__ import annotations

import builtins
import os
from typing import Any

import numpy as np

from ... import dtype as _dt
from ..._backend import Device, get_device
from ...errors import check_int, op_error
from ...tensor import Tensor

_brange = builtins.range
_bslice = builtins.slice

# ---- helpers ------------------------------------------------------------------------------


def _tensor(op: str, arg: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(op, arg, value, "a Tensor", TypeError)
    return value


def _index(array: np.ndarray, like: Tensor) -> Tensor:
    """An int64 index tensor on ``like``'s device."""
    return Tensor(np.asarray(array, np.int64), device=like._device)


def _ints(op: str, arg: str, value: Any, length: int | None = None) -> tuple[int, ...]:
    """An int or a sequence (or 1-d Tensor) of ints as a tuple, optionally of a given length."""
    if isinstance(value, Tensor):
        value = value.tolist()
    items = value if isinstance(value, (tuple, list)) else [value]
    out = tuple(check_int(op, arg, v) for v in items)
    if length is not None and len(out) != length:
        raise op_error(op, arg, value, f"{length} ints")
    return out


def _scalar(op: str, arg: str, value: Any) -> Any:
    """A Python number from a number or a one-element Tensor."""
    if isinstance(value, Tensor):
        if value.size != 1:
            raise op_error(op, arg, value, "a number or a one-element Tensor")
        return value.item()
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return value
    raise op_error(op, arg, value, "a number or a one-element Tensor", TypeError)


def _device(device: Any) -> Device | None:
    return device if device is None or isinstance(device, Device) else get_device(device)


def _dtype_or(value: Any, default: _dt.DType, op: str, arg: str) -> _dt.DType:
    if value is None:
        return default
    try:
        return _dt.to_dtype(value, arg)
    except TypeError:
        raise op_error(op, arg, value, "a sporeling dtype", TypeError) from None


def _int_family(op: str, arg: str, t: Tensor) -> Tensor:
    if t.dtype.category != 1:
        raise op_error(op, arg, t, "an integer tensor", TypeError)
    return t


def check_alloc(op: str, shape: tuple[int, ...], dtype: _dt.DType, arg: str = "shape") -> None:
    """Refuse a result that could never fit in this machine's memory, naming the op (NumPy
    would raise a bare MemoryError, or a ValueError about its own limits)."""
    n = 1
    for d in shape:
        n *= int(d)
    need = n * dtype.bits // 8
    try:
        have = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        have = 1 << 50
    if need > have:
        raise ValueError(
            f"{op}: argument '{arg}' {tuple(shape)} asks for {need / 2**30:.3g} GiB of "
            f"{dtype}, more than this machine's {have / 2**30:.3g} GiB of memory"
        )
