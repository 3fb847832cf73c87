"""Logical ops on bool tensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import dtype as _dt
from ..._primitive import Primitive, ShapedArray
from ...tensor import Tensor
from .._core import broadcast_shapes
from ._common import _bool_args

__all__ = [
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
]

# ---- logical ops --------------------------------------------------------------------------


def _logical_abstract(name: str) -> Callable[..., ShapedArray]:
    def abstract(*avals: ShapedArray) -> ShapedArray:
        for arg, a in zip(("x", "y"), avals):
            if a.dtype != _dt.bool_:
                raise TypeError(f"{name}: argument '{arg}' expected a bool tensor, got {a.dtype}")
        return ShapedArray(broadcast_shapes(name, *(a.shape for a in avals)), _dt.bool_)

    return abstract


def _logical_prim(name: str, scalar: str) -> Primitive:
    return Primitive(
        name,
        "elementwise",
        _logical_abstract(name),
        impl=lambda xp, *arrays: getattr(xp, name)(*arrays),  # same name in NumPy and CuPy
        scalar=scalar,
    )


logical_and_p = _logical_prim("logical_and", "x and y")
logical_or_p = _logical_prim("logical_or", "x or y")
logical_xor_p = _logical_prim("logical_xor", "x != y")
logical_not_p = _logical_prim("logical_not", "not x")


def _logical(op: str, prim: Primitive, x: Any, y: Any) -> Tensor:
    xt, yt = _bool_args(op, {"x": x, "y": y})
    if xt._device is not yt._device:
        raise ValueError(f"{op}: 'x' is on {xt.device} but 'y' is on {yt.device}")
    return prim.bind(xt, yt)


def logical_and(x: Any, y: Any) -> Tensor:
    """Elementwise AND of bool tensors (or Python bools).

    >>> logical_and(Tensor([True, True]), Tensor([True, False])).tolist()
    [True, False]
    """
    return _logical("logical_and", logical_and_p, x, y)


def logical_or(x: Any, y: Any) -> Tensor:
    """Elementwise OR of bool tensors (or Python bools)."""
    return _logical("logical_or", logical_or_p, x, y)


def logical_xor(x: Any, y: Any) -> Tensor:
    """Elementwise XOR of bool tensors (or Python bools)."""
    return _logical("logical_xor", logical_xor_p, x, y)


def logical_not(x: Any) -> Tensor:
    """Elementwise NOT of a bool tensor."""
    (xt,) = _bool_args("logical_not", {"x": x})
    return logical_not_p.bind(xt)
