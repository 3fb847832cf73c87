"""Trigonometric, hyperbolic, exponential and logarithmic functions."""

from __future__ import annotations

import math
from typing import Any

from ...tensor import Tensor
from .._elementwise import (
    float_input,
    neg,
    sqrt,
    unary_op,
)
from ..complex_numbers import conjugate
from ._common import _LN2, _quiet

__all__ = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cos",
    "cosh",
    "sin",
    "sinh",
    "tan",
    "tanh",
    "deg2rad",
    "rad2deg",
    "exp2",
    "expm1",
    "inv",
    "reciprocal",
    "log1p",
    "log2",
    "rsqrt",
]

# ---- trigonometric, hyperbolic, exponential and logarithmic -------------------------------

acos_p = unary_op(
    "acos", "arccos", vjp=lambda g, x, *, out: neg(g) / sqrt(1 - x * x), scalar="acos(x)"
)
acosh_p = unary_op(
    "acosh", "arccosh", vjp=lambda g, x, *, out: g / sqrt(x * x - 1), scalar="acosh(x)"
)
asin_p = unary_op("asin", "arcsin", vjp=lambda g, x, *, out: g / sqrt(1 - x * x), scalar="asin(x)")
asinh_p = unary_op(
    "asinh", "arcsinh", vjp=lambda g, x, *, out: g / sqrt(x * x + 1), scalar="asinh(x)"
)
atan_p = unary_op("atan", "arctan", vjp=lambda g, x, *, out: g / (x * x + 1), scalar="atan(x)")
atanh_p = unary_op("atanh", "arctanh", vjp=lambda g, x, *, out: g / (1 - x * x), scalar="atanh(x)")
sin_p = unary_op(
    "sin", family="inexact", vjp=lambda g, x, *, out: g * conjugate(cos(x)), scalar="sin(x)",
    ufunc=True,
)  # fmt: skip
cos_p = unary_op(
    "cos", family="inexact", vjp=lambda g, x, *, out: neg(g * conjugate(sin(x))), scalar="cos(x)",
    ufunc=True,
)  # fmt: skip
# complex too, with MindSpore's conjugate convention (g * conj(f'(z)))
tan_p = unary_op(
    "tan", family="inexact", vjp=lambda g, x, *, out: g * conjugate(out * out + 1),
    scalar="sin(x) / cos(x)",
)  # fmt: skip
sinh_p = unary_op(
    "sinh", family="inexact", vjp=lambda g, x, *, out: g * conjugate(cosh(x)),
    scalar="(exp(x) - exp(-x)) / 2",
)  # fmt: skip
cosh_p = unary_op(
    "cosh", family="inexact", vjp=lambda g, x, *, out: g * conjugate(sinh(x)),
    scalar="(exp(x) + exp(-x)) / 2",
)  # fmt: skip
tanh_p = unary_op(
    "tanh", family="inexact", vjp=lambda g, x, *, out: g * conjugate(1 - out * out),
    scalar="tanh(x)", ufunc=True,
)  # fmt: skip
exp2_p = unary_op("exp2", vjp=lambda g, x, *, out: g * out * _LN2, scalar=f"exp(x * {_LN2!r})")
expm1_p = unary_op("expm1", vjp=lambda g, x, *, out: g * (out + 1), scalar="expm1(x)")
log1p_p = unary_op("log1p", vjp=lambda g, x, *, out: g / (x + 1), scalar="log1p(x)")
log2_p = unary_op("log2", vjp=lambda g, x, *, out: g / (x * _LN2), scalar=f"log(x) * {1 / _LN2!r}")
rsqrt_p = unary_op(
    "rsqrt",
    impl=_quiet(lambda xp, x: 1 / xp.sqrt(x)),
    vjp=lambda g, x, *, out: g * out * out * out * -0.5,
    scalar="1 / sqrt(x)",
)
reciprocal_p = unary_op(
    "reciprocal",
    family="inexact",
    impl=_quiet(lambda xp, x: xp.reciprocal(x)),
    vjp=lambda g, x, *, out: neg(g * conjugate(out * out)),
    scalar="1 / x",
)


def acos(x: Any) -> Tensor:
    """Elementwise arccosine, in radians (NaN outside [-1, 1])."""
    return acos_p.bind(float_input("acos", x))


def acosh(x: Any) -> Tensor:
    """Elementwise inverse hyperbolic cosine (NaN below 1)."""
    return acosh_p.bind(float_input("acosh", x))


def asin(x: Any) -> Tensor:
    """Elementwise arcsine, in radians (NaN outside [-1, 1])."""
    return asin_p.bind(float_input("asin", x))


def asinh(x: Any) -> Tensor:
    """Elementwise inverse hyperbolic sine."""
    return asinh_p.bind(float_input("asinh", x))


def atan(x: Any) -> Tensor:
    """Elementwise arctangent, in radians."""
    return atan_p.bind(float_input("atan", x))


def atanh(x: Any) -> Tensor:
    """Elementwise inverse hyperbolic tangent (infinite at +-1, NaN beyond)."""
    return atanh_p.bind(float_input("atanh", x))


def sin(x: Any) -> Tensor:
    """Elementwise sine.

    >>> sin(Tensor([0.0])).tolist()
    [0.0]
    """
    return sin_p.bind(float_input("sin", x))


def cos(x: Any) -> Tensor:
    """Elementwise cosine."""
    return cos_p.bind(float_input("cos", x))


def tan(x: Any) -> Tensor:
    """Elementwise tangent."""
    return tan_p.bind(float_input("tan", x))


def sinh(x: Any) -> Tensor:
    """Elementwise hyperbolic sine."""
    return sinh_p.bind(float_input("sinh", x))


def cosh(x: Any) -> Tensor:
    """Elementwise hyperbolic cosine."""
    return cosh_p.bind(float_input("cosh", x))


def tanh(input_x: Any) -> Tensor:
    """Elementwise hyperbolic tangent; d/dx = 1 - tanh(x)**2."""
    return tanh_p.bind(float_input("tanh", input_x, "input_x"))


def exp2(x: Any) -> Tensor:
    """Elementwise ``2 ** x``.

    >>> exp2(Tensor([3.0])).tolist()
    [8.0]
    """
    return exp2_p.bind(float_input("exp2", x))


def expm1(x: Any) -> Tensor:
    """Elementwise ``exp(x) - 1``, accurate for small ``x``."""
    return expm1_p.bind(float_input("expm1", x))


def log1p(x: Any) -> Tensor:
    """Elementwise ``log(1 + x)``, accurate for small ``x``."""
    return log1p_p.bind(float_input("log1p", x))


def log2(x: Any) -> Tensor:
    """Elementwise base-2 logarithm."""
    return log2_p.bind(float_input("log2", x))


def rsqrt(x: Any) -> Tensor:
    """Elementwise ``1 / sqrt(x)``."""
    return rsqrt_p.bind(float_input("rsqrt", x))


def reciprocal(x: Any) -> Tensor:
    """Elementwise ``1 / x`` (integers are promoted to float32)."""
    return reciprocal_p.bind(float_input("reciprocal", x))


def inv(x: Any) -> Tensor:
    """Elementwise ``1 / x`` (MindSpore's name for :func:`reciprocal`)."""
    return reciprocal_p.bind(float_input("inv", x))


def deg2rad(x: Any) -> Tensor:
    """Degrees to radians: ``x * pi / 180``."""
    return float_input("deg2rad", x) * (math.pi / 180.0)


def rad2deg(x: Any) -> Tensor:
    """Radians to degrees: ``x * 180 / pi``."""
    return float_input("rad2deg", x) * (180.0 / math.pi)
