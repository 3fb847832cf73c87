"""abs, sign and rounding (floor, ceil, round, trunc); integer inputs pass through rounding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...tensor import Tensor
from .._core import as_tensor
from .._elementwise import (
    unary_op,
)
from ..complex_numbers import complex_abs_p

__all__ = [
    "abs",
    "absolute",
    "ceil",
    "floor",
    "round",
    "trunc",
    "sign",
]

# ---- abs, sign, rounding ------------------------------------------------------------------


def _rounding_impl(fn: str) -> Callable[..., Any]:
    def impl(xp: Any, x: Any) -> Any:
        return getattr(xp, fn)(x) if x.dtype.kind == "f" else x.copy()

    return impl


abs_p = unary_op("abs", family="numeric", vjp=lambda g, x, *, out: g * sign(x), scalar="abs(x)")
sign_p = unary_op("sign", family="numeric", scalar="where(x > 0, 1, where(x < 0, -1, 0))")
floor_p = unary_op("floor", family="numeric", impl=_rounding_impl("floor"), scalar="floor(x)")
ceil_p = unary_op("ceil", family="numeric", impl=_rounding_impl("ceil"), scalar="ceil(x)")
round_p = unary_op("round", family="numeric", impl=_rounding_impl("round"))
trunc_p = unary_op(
    "trunc",
    family="numeric",
    impl=_rounding_impl("trunc"),
    scalar="where(x < 0, ceil(x), floor(x))",
)


def abs(x: Any) -> Tensor:  # noqa: A001 - MindSpore's name
    """Elementwise absolute value (gradient ``sign(x)``, 0 at 0); the modulus, a real
    tensor, for a complex one (:func:`complex_abs`).

    >>> abs(Tensor([-1.5, 2.0])).tolist()
    [1.5, 2.0]
    """
    t = as_tensor(x, "abs", "x")
    if t.dtype.category == 3:
        return complex_abs_p.bind(t)
    return abs_p.bind(t)


def absolute(x: Any) -> Tensor:
    """Deprecated alias of :func:`abs`."""
    return abs(x)


def sign(x: Any) -> Tensor:
    """Elementwise sign: -1, 0 or 1 (NaN stays NaN); zero gradient."""
    return sign_p.bind(as_tensor(x, "sign", "x"))


def floor(x: Any) -> Tensor:
    """Elementwise largest integer <= x (integer inputs are returned unchanged)."""
    return floor_p.bind(as_tensor(x, "floor", "x"))


def ceil(x: Any) -> Tensor:
    """Elementwise smallest integer >= x (integer inputs are returned unchanged)."""
    return ceil_p.bind(as_tensor(x, "ceil", "x"))


def round(x: Any) -> Tensor:  # noqa: A001 - MindSpore's name
    """Elementwise rounding to the nearest integer, halves to even.

    >>> round(Tensor([0.5, 1.5, -2.5])).tolist()
    [0.0, 2.0, -2.0]
    """
    return round_p.bind(as_tensor(x, "round", "x"))


def trunc(input_x: Any) -> Tensor:
    """Elementwise rounding toward zero."""
    return trunc_p.bind(as_tensor(input_x, "trunc", "input_x"))
