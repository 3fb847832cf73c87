"""Argument checks and padding arithmetic shared by the ``ops.nn`` layer functions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtype as _dt
from ...errors import op_error
from ...tensor import Tensor
from .._core import cast

Pads = tuple[tuple[int, int], ...]

# ---- argument helpers ---------------------------------------------------------------


def _tensor(op: str, arg: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise op_error(op, arg, value, "a Tensor", TypeError)
    return value


def _ints(
    op: str, arg: str, value: Any, n: int, minimum: int = 1, lengths: tuple[int, ...] = ()
) -> tuple[int, ...]:
    """An int or a tuple/list of ``n`` ints (or of one of ``lengths``), each >= minimum."""
    if isinstance(value, Tensor):
        value = value.tolist()
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    ok_len = (1, n) + lengths
    if len(items) not in ok_len or any(
        isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) for v in items
    ):
        raise op_error(op, arg, value, f"an int or a tuple of {n} ints", TypeError)
    if any(v < minimum for v in items):
        raise op_error(op, arg, value, f"ints >= {minimum}")
    if len(items) == 1:
        items = items * n
    return tuple(int(v) for v in items)


def _check_ndim(op: str, arg: str, t: Tensor, ndims: tuple[int, ...], layout: str) -> None:
    if t.ndim not in ndims:
        raise op_error(op, arg, t, f"a {' or '.join(f'{d}-d' for d in ndims)} tensor ({layout})")


def _real(op: str, arg: str, t: Tensor) -> Tensor:
    """``t``, refusing complex tensors (the nn ops compute in real arithmetic)."""
    if t.dtype.category == 3:
        raise op_error(op, arg, t, "a real (not complex) tensor", TypeError)
    return t


def _float_pair(op: str, x: Any, w: Any, names: tuple[str, str]) -> tuple[Tensor, Tensor]:
    xt = _real(op, names[0], _tensor(op, names[0], x))
    wt = _real(op, names[1], _tensor(op, names[1], w))
    dt = _dt.promote_types(xt.dtype, wt.dtype)
    if dt.category < 2:
        dt = _dt.float32
    return cast(xt, dt), cast(wt, dt)


def _float(op: str, arg: str, x: Any) -> Tensor:
    t = _real(op, arg, _tensor(op, arg, x))
    return t if t.dtype.category == 2 else cast(t, _dt.float32)


def _const(like: Tensor, array: np.ndarray, dtype: Any = None) -> Tensor:
    return Tensor(array, dtype=dtype or like.dtype, device=like._device)


def _out_size(n: int, k: int, s: int, lo: int, hi: int, d: int) -> int:
    return (n + lo + hi - d * (k - 1) - 1) // s + 1


def _out_spatial(
    sp: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: Pads,
    dilation: tuple[int, ...],
) -> tuple[int, ...]:
    return tuple(
        _out_size(n, k, s, lo, hi, d)
        for n, k, s, (lo, hi), d in zip(sp, kernel, stride, pads, dilation)
    )


def _same_pads(
    sp: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]
) -> Pads:
    """TensorFlow/MindSpore "same": out = ceil(in / stride), the odd pixel at the end."""
    pads = []
    for n, k, s, d in zip(sp, kernel, stride, dilation):
        out = -(-n // s)
        total = max((out - 1) * s + d * (k - 1) + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


def _conv_pads(
    op: str,
    pad_mode: Any,
    padding: Any,
    nd: int,
    sp: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
) -> Pads:
    mode = pad_mode.lower() if isinstance(pad_mode, str) else pad_mode
    if mode not in ("valid", "same", "pad"):
        raise op_error(op, "pad_mode", pad_mode, "one of 'valid', 'same', 'pad'")
    flat = _ints(op, "padding", padding, nd, minimum=0, lengths=(2 * nd,))
    if isinstance(padding, (tuple, list)) and len(padding) == 2 * nd:
        pads = tuple((flat[2 * i], flat[2 * i + 1]) for i in range(nd))
    else:
        pads = tuple((p, p) for p in flat)
    if mode != "pad":
        if any(p != (0, 0) for p in pads):
            raise op_error(op, "padding", padding, f"0 when pad_mode is {pad_mode!r}")
        if mode == "same":
            return _same_pads(sp, kernel, stride, dilation)
    return pads


_LAYOUT = {1: "N, C, W", 2: "N, C, H, W", 3: "N, C, D, H, W"}
