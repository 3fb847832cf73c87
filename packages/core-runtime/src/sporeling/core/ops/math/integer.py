"""Integer division and remainders (floor and truncating), gcd, lcm and bitwise ops."""

from __future__ import annotations

from typing import Any

from ..._primitive import Primitive
from ...tensor import Tensor
from .._core import as_tensor
from .._elementwise import (
    binary_op,
    neg,
    promote_args,
    unary_op,
)
from ._common import _int_args, _quiet, _unb

__all__ = [
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "floor_div",
    "floor_mod",
    "invert",
    "lcm",
    "gcd",
    "truncate_div",
    "truncate_mod",
]

# ---- integer division and remainders ------------------------------------------------------


def _truncate_div_impl(xp: Any, x: Any, y: Any) -> Any:
    if x.dtype.kind == "f":
        return xp.trunc(x / y)
    q = xp.floor_divide(x, y)
    # floor and truncation differ when the division is inexact and the signs differ
    fix = (q * y != x) & ((x < 0) != (y < 0)) & (y != 0)
    return q + fix.astype(q.dtype)


def _floor_mod_vjp(g: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> Any:
    return (lambda: _unb(g, x)), (lambda: _unb(neg(g) * floor_div(x, y), y))


def _truncate_mod_vjp(g: Tensor, x: Tensor, y: Tensor, *, out: Tensor) -> Any:
    return (lambda: _unb(g, x)), (lambda: _unb(neg(g) * truncate_div(x, y), y))


floor_div_p = binary_op("floor_div", impl=_quiet(lambda xp, x, y: xp.floor_divide(x, y)))
floor_mod_p = binary_op(
    "floor_mod", impl=_quiet(lambda xp, x, y: xp.remainder(x, y)), vjp=_floor_mod_vjp
)
truncate_div_p = binary_op("truncate_div", impl=_quiet(_truncate_div_impl))
truncate_mod_p = binary_op(
    "truncate_mod", impl=_quiet(lambda xp, x, y: xp.fmod(x, y)), vjp=_truncate_mod_vjp
)


def floor_div(x: Any, y: Any) -> Tensor:
    """Elementwise division rounded down (``x // y``); zero gradient.

    >>> floor_div(Tensor([7, -7]), 2).tolist()
    [3, -4]
    """
    return floor_div_p.bind(*promote_args("floor_div", x, y))


def floor_mod(x: Any, y: Any) -> Tensor:
    """Elementwise remainder of :func:`floor_div`, with the sign of ``y`` (``x % y``).

    Gradients: ``dx = g``, ``dy = -g * floor_div(x, y)``.
    """
    return floor_mod_p.bind(*promote_args("floor_mod", x, y))


def truncate_div(x: Any, y: Any) -> Tensor:
    """Elementwise division rounded toward zero; zero gradient.

    >>> truncate_div(Tensor([7, -7]), 2).tolist()
    [3, -3]
    """
    return truncate_div_p.bind(*promote_args("truncate_div", x, y))


def truncate_mod(x: Any, y: Any) -> Tensor:
    """Elementwise remainder of :func:`truncate_div`, with the sign of ``x`` (C's fmod)."""
    return truncate_mod_p.bind(*promote_args("truncate_mod", x, y))


# ---- integer and bitwise ops --------------------------------------------------------------

gcd_p = binary_op("gcd", family="int", scalar="gcd(x, y)")
lcm_p = binary_op("lcm", family="int", scalar="where(x == 0 or y == 0, 0, abs(x // gcd(x, y) * y))")
bitwise_and_p = binary_op("bitwise_and", family="intbool", scalar="x & y")
bitwise_or_p = binary_op("bitwise_or", family="intbool", scalar="x | y")
bitwise_xor_p = binary_op("bitwise_xor", family="intbool", scalar="x ^ y")
invert_p = unary_op("invert", family="intbool", scalar="~x")


def _int_binary(
    op: str, prim: Primitive, x: Any, y: Any, names: tuple[str, str], allow_bool: bool
) -> Tensor:
    _int_args(op, {names[0]: x, names[1]: y}, allow_bool)
    return prim.bind(*promote_args(op, x, y, names))


def gcd(x1: Any, x2: Any) -> Tensor:
    """Elementwise greatest common divisor of integer tensors (non-negative).

    >>> gcd(Tensor([12, -18]), Tensor([8, 12])).tolist()
    [4, 6]
    """
    return _int_binary("gcd", gcd_p, x1, x2, ("x1", "x2"), False)


def lcm(x1: Any, x2: Any) -> Tensor:
    """Elementwise least common multiple of integer tensors (non-negative)."""
    return _int_binary("lcm", lcm_p, x1, x2, ("x1", "x2"), False)


def bitwise_and(x: Any, y: Any) -> Tensor:
    """Elementwise bitwise AND of integer (or bool) tensors."""
    return _int_binary("bitwise_and", bitwise_and_p, x, y, ("x", "y"), True)


def bitwise_or(x: Any, y: Any) -> Tensor:
    """Elementwise bitwise OR of integer (or bool) tensors."""
    return _int_binary("bitwise_or", bitwise_or_p, x, y, ("x", "y"), True)


def bitwise_xor(x: Any, y: Any) -> Tensor:
    """Elementwise bitwise XOR of integer (or bool) tensors."""
    return _int_binary("bitwise_xor", bitwise_xor_p, x, y, ("x", "y"), True)


def invert(x: Any) -> Tensor:
    """Elementwise bitwise NOT (``~x``) of an integer (or bool) tensor.

    >>> invert(Tensor([0, 5], dtype="int8")).tolist()
    [-1, -6]
    """
    _int_args("invert", {"x": x}, allow_bool=True)
    return invert_p.bind(as_tensor(x, "invert", "x"))
