"""addn (the sum of a list of tensors) and isreal."""

from __future__ import annotations

from typing import Any

from ... import dtype as _dt
from ..._primitive import Primitive, ShapedArray
from ...errors import op_error
from ...tensor import Tensor
from .._core import as_tensor
from .._elementwise import (
    unary_op,
)

__all__ = [
    "addn",
    "isreal",
]

# ---- addn, isreal -------------------------------------------------------------------------


def _addn_abstract(*xs: ShapedArray) -> ShapedArray:
    first = xs[0]
    for i, a in enumerate(xs[1:], 1):
        if a.dtype != first.dtype:
            raise TypeError(
                f"addn: argument 'x' expected tensors of one dtype, got {first.dtype} "
                f"(item 0) and {a.dtype} (item {i})"
            )
        if a.shape != first.shape:
            raise ValueError(
                f"addn: argument 'x' expected tensors of one shape, got {first.shape} "
                f"(item 0) and {a.shape} (item {i})"
            )
    if first.dtype == _dt.bool_:
        raise TypeError("addn: argument 'x' expected numeric tensors, got Bool")
    return ShapedArray(first.shape, first.dtype)


def _addn_impl(xp: Any, *xs: Any) -> Any:
    out = xs[0].copy()
    for a in xs[1:]:
        out += a
    return out


addn_p = Primitive(
    "addn",
    "elementwise",
    _addn_abstract,
    impl=_addn_impl,
    vjp=lambda g, *xs, out: tuple(g for _ in xs),
)


def addn(x: Any) -> Tensor:
    """Elementwise sum of a list or tuple of tensors of one shape and dtype.

    >>> addn([Tensor([1.0, 2.0]), Tensor([3.0, 4.0])]).tolist()
    [4.0, 6.0]
    """
    if not isinstance(x, (list, tuple)) or not x:
        raise op_error("addn", "x", x, "a non-empty list or tuple of Tensors", TypeError)
    for i, t in enumerate(x):
        if not isinstance(t, Tensor):
            raise op_error("addn", f"x[{i}]", t, "a Tensor", TypeError)
        if t._device is not x[0]._device:
            raise ValueError(f"addn: x[0] is on {x[0].device} but x[{i}] is on {t.device}")
    if len(x) == 1:
        return x[0]
    return addn_p.bind(*x)


# every dtype the fuser handles is real: True, written so that it reads x
isreal_p = unary_op("isreal", family="all", out_dtype=_dt.bool_, scalar="x == x or x != x")


def isreal(x: Any) -> Tensor:
    """Elementwise test for a real value: True everywhere for real (non-complex) dtypes."""
    return isreal_p.bind(as_tensor(x, "isreal", "x"))
