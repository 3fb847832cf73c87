"""Binary float ops: atan2, hypot, logaddexp, xlogy, xdivy and friends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import as_op, op_error
from ...tensor import Tensor
from .._compare import not_equal
from .._core import as_tensor, cast
from .._elementwise import (
    binary_op,
    exp,
    float_input,
    neg,
)
from ._common import _float_pair, _quiet, _unb
from .transcendental import exp2

__all__ = [
    "atan2",
    "hypot",
    "ldexp",
    "lerp",
    "logaddexp",
    "logaddexp2",
    "xdivy",
    "xlogy",
]

# ---- binary float ops ---------------------------------------------------------------------


def _atan2_vjp(g: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> Any:
    def dx() -> Tensor:
        return _unb(g * y / (x * x + y * y), x)

    def dy() -> Tensor:
        return _unb(neg(g * x) / (x * x + y * y), y)

    return dx, dy


def _hypot_vjp(g: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> Any:
    return (lambda: _unb(g * x / out, x)), (lambda: _unb(g * y / out, y))


def _logaddexp_vjp(base2: bool) -> Callable[..., Any]:
    def vjp(g: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> Any:
        share = exp2 if base2 else exp
        return (lambda: _unb(g * share(x - out), x)), (lambda: _unb(g * share(y - out), y))

    return vjp


def _nonzero(x: Tensor) -> Tensor:
    return cast(not_equal(x, 0), x.dtype)


def _xlogy_vjp(g: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> Any:
    return (lambda: _unb(g * xlogy(_nonzero(x), y), x)), (lambda: _unb(g * xdivy(x, y), y))


def _xdivy_vjp(g: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> Any:
    def dx() -> Tensor:
        return _unb(g * xdivy(_nonzero(x), y), x)

    def dy() -> Tensor:
        return _unb(neg(g * xdivy(x, y * y)), y)

    return dx, dy


atan2_p = binary_op("atan2", "arctan2", family="float", vjp=_atan2_vjp, scalar="atan2(x, y)")
hypot_p = binary_op("hypot", family="float", vjp=_hypot_vjp, scalar="sqrt(x * x + y * y)")
# equal inputs first: NumPy gives x + log(2) there, also for infinities (inf - inf is NaN)
logaddexp_p = binary_op(
    "logaddexp",
    family="float",
    vjp=_logaddexp_vjp(False),
    scalar="where(x == y, x + 0.6931471805599453, max(x, y) + log1p(exp(-abs(x - y))))",
)
logaddexp2_p = binary_op(
    "logaddexp2",
    family="float",
    vjp=_logaddexp_vjp(True),
    scalar="where(x == y, x + 1.0, max(x, y) + "
    "log1p(exp(-abs(x - y) * 0.6931471805599453)) * 1.4426950408889634)",
)
xlogy_p = binary_op(
    "xlogy",
    family="float",
    vjp=_xlogy_vjp,
    scalar="where(x == 0, 0, x * log(y))",
    impl=_quiet(lambda xp, x, y: xp.where(x == 0, xp.zeros_like(x), x * xp.log(y))),
)
xdivy_p = binary_op(
    "xdivy",
    family="float",
    vjp=_xdivy_vjp,
    scalar="where(x == 0, 0, x / y)",
    impl=_quiet(lambda xp, x, y: xp.where(x == 0, xp.zeros_like(x), x / y)),
)


def atan2(x: Any, y: Any) -> Tensor:
    """Elementwise angle of the point ``(y, x)``: ``arctan(x / y)`` in the right quadrant."""
    return atan2_p.bind(*_float_pair("atan2", x, y, ("x", "y")))


def hypot(x: Any, other: Any) -> Tensor:
    """Elementwise ``sqrt(x**2 + other**2)`` without intermediate overflow.

    >>> hypot(Tensor([3.0]), Tensor([4.0])).tolist()
    [5.0]
    """
    return hypot_p.bind(*_float_pair("hypot", x, other, ("x", "other")))


def logaddexp(x1: Any, x2: Any) -> Tensor:
    """Elementwise ``log(exp(x1) + exp(x2))`` without overflow."""
    return logaddexp_p.bind(*_float_pair("logaddexp", x1, x2, ("x1", "x2")))


def logaddexp2(x1: Any, x2: Any) -> Tensor:
    """Elementwise ``log2(2**x1 + 2**x2)`` without overflow."""
    return logaddexp2_p.bind(*_float_pair("logaddexp2", x1, x2, ("x1", "x2")))


def xlogy(x: Any, y: Any) -> Tensor:
    """Elementwise ``x * log(y)``, defined as 0 where ``x == 0`` (even for y == 0)."""
    return xlogy_p.bind(*_float_pair("xlogy", x, y, ("x", "y")))


def xdivy(x: Any, y: Any) -> Tensor:
    """Elementwise ``x / y``, defined as 0 where ``x == 0`` (even for y == 0)."""
    return xdivy_p.bind(*_float_pair("xdivy", x, y, ("x", "y")))


def lerp(start: Any, end: Any, weight: Any) -> Tensor:
    """Linear interpolation ``start + weight * (end - start)``; ``weight`` is a float or
    a tensor broadcastable with the others."""
    s, e = _float_pair("lerp", start, end, ("start", "end"))
    if not isinstance(weight, Tensor) and (
        isinstance(weight, bool) or not isinstance(weight, (int, float))
    ):
        raise op_error("lerp", "weight", weight, "a float or a Tensor", TypeError)
    try:
        if isinstance(weight, Tensor):
            w, d = _float_pair("lerp", weight, e - s, ("weight", "end"))
            return s + w * d
        return s + (e - s) * float(weight)
    except (TypeError, ValueError) as exc:  # named after lerp, not its sub/mul
        raise as_op(exc, "lerp") from None


def ldexp(x: Any, other: Any) -> Tensor:
    """Elementwise ``x * 2**other`` (``other`` is usually an integer tensor)."""
    xt = float_input("ldexp", x)
    ot = as_tensor(other, "ldexp", "other", xt)
    if ot.dtype.category == 0:
        raise op_error("ldexp", "other", ot, "an integer or floating tensor", TypeError)
    return xt * exp2(cast(ot, xt.dtype))
