"""Elementwise math: trigonometric and hyperbolic functions, exponentials and logarithms,
rounding, integer division and remainders, bitwise and logical ops, the error function and
Bessel functions of order 0 and 1 (MindSpore 1.8 names and arguments).

Dtypes: float-only ops promote integer/bool inputs to float32; integer ops (gcd, lcm,
bitwise ops, invert) reject floating inputs; logical ops need bool inputs. Rounding ops
(floor, ceil, round, trunc) return integer inputs unchanged. Ops that are piecewise
constant (rounding, sign, integer division, comparisons) have zero gradient, as in
MindSpore.

The special functions run as Numba kernels on the CPU (:mod:`..kernels.cpu.special`), as
CuPy's ``cupyx.scipy.special`` kernels on a GPU, and as array expressions of the same
approximations otherwise (:mod:`..kernels.gpu.special`); none needs SciPy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import dtype as _dt
from .._primitive import Primitive, ShapedArray
from ..errors import as_op, op_error
from ..kernels.gpu import special as _kgpu
from ..tensor import Tensor
from ._compare import not_equal, select
from ._core import as_tensor, broadcast_shapes, cast, sum_to
from ._elementwise import (
    FAMILIES,
    binary_op,
    exp,
    float_input,
    neg,
    promote_args,
    sqrt,
    unary_op,
)

__all__ = [
    "abs",
    "absolute",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "addn",
    "bessel_i0",
    "bessel_i0e",
    "bessel_i1",
    "bessel_i1e",
    "bessel_j0",
    "bessel_j1",
    "bessel_k0",
    "bessel_k0e",
    "bessel_k1",
    "bessel_k1e",
    "bessel_y0",
    "bessel_y1",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "ceil",
    "cos",
    "cosh",
    "sin",
    "sinh",
    "tan",
    "tanh",
    "deg2rad",
    "rad2deg",
    "erf",
    "erfc",
    "erfinv",
    "exp2",
    "expm1",
    "floor",
    "floor_div",
    "floor_mod",
    "hypot",
    "inv",
    "reciprocal",
    "invert",
    "isreal",
    "lcm",
    "gcd",
    "ldexp",
    "lerp",
    "log1p",
    "log2",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "round",
    "trunc",
    "truncate_div",
    "truncate_mod",
    "xdivy",
    "xlogy",
    "sign",
    "rsqrt",
]

_LN2 = math.log(2.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _unb(g: Tensor, t: Tensor) -> Tensor:
    return sum_to(g, t.shape)


def _quiet(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run an array function with NumPy's floating-point warnings off (x/0, log(0)...):
    the results (inf, nan, 0 for integer x // 0) are the defined outputs of these ops."""
    import numpy as np

    def impl(xp: Any, *arrays: Any) -> Any:
        with np.errstate(all="ignore"):
            return fn(xp, *arrays)

    return impl


# ---- dtype checks of public wrappers ------------------------------------------------------


def _is_int_like(value: Any, allow_bool: bool) -> bool:
    if isinstance(value, Tensor):
        return value.dtype.category == 1 or (allow_bool and value.dtype.category == 0)
    if isinstance(value, bool):
        return allow_bool
    if isinstance(value, int):
        return True
    kind = getattr(getattr(value, "dtype", None), "kind", None)  # NumPy arrays and scalars
    return kind is not None and kind in ("iub" if allow_bool else "iu")


def _int_args(op: str, args: dict[str, Any], allow_bool: bool = False) -> None:
    """TypeError naming the first argument that is not an integer (or bool) tensor/number."""
    what = "an integer or bool tensor" if allow_bool else "an integer tensor"
    for name, value in args.items():
        if not _is_int_like(value, allow_bool):
            raise op_error(op, name, value, what, TypeError)


def _bool_args(op: str, args: dict[str, Any]) -> list[Tensor]:
    """Bool tensors (Python bools allowed), or a TypeError naming the argument."""
    out = []
    like = next((v for v in args.values() if isinstance(v, Tensor)), None)
    for name, value in args.items():
        if isinstance(value, Tensor):
            if value.dtype != _dt.bool_:
                raise op_error(op, name, value, "a bool tensor", TypeError)
            out.append(value)
        elif isinstance(value, bool):
            out.append(as_tensor(value, op, name, like))
        else:
            raise op_error(op, name, value, "a bool tensor or a bool", TypeError)
    return out


def _float_pair(op: str, x: Any, y: Any, names: tuple[str, str]) -> tuple[Tensor, Tensor]:
    return promote_args(op, x, y, names, min_category=2)


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
sin_p = unary_op("sin", vjp=lambda g, x, *, out: g * cos(x), scalar="sin(x)", ufunc=True)
cos_p = unary_op("cos", vjp=lambda g, x, *, out: neg(g * sin(x)), scalar="cos(x)", ufunc=True)
tan_p = unary_op("tan", vjp=lambda g, x, *, out: g * (out * out + 1), scalar="sin(x) / cos(x)")
sinh_p = unary_op("sinh", vjp=lambda g, x, *, out: g * cosh(x), scalar="(exp(x) - exp(-x)) / 2")
cosh_p = unary_op("cosh", vjp=lambda g, x, *, out: g * sinh(x), scalar="(exp(x) + exp(-x)) / 2")
tanh_p = unary_op(
    "tanh", vjp=lambda g, x, *, out: g * (1 - out * out), scalar="tanh(x)", ufunc=True
)
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
    impl=_quiet(lambda xp, x: xp.reciprocal(x)),
    vjp=lambda g, x, *, out: neg(g * out * out),
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


# ---- error function and Bessel functions --------------------------------------------------


def _special_op(
    name: str, kernel: str, vjp: Callable[..., Any], scalar: str | None = None
) -> Primitive:
    """A float-only elementwise primitive evaluated by the special-function kernels."""

    def abstract(x: ShapedArray) -> ShapedArray:
        if not FAMILIES["float"](x.dtype):
            raise TypeError(f"{name}: argument 'x' expected a floating dtype, got {x.dtype}")
        return ShapedArray(x.shape, x.dtype)

    def cpu(xp: Any, x: Any) -> Any:
        from ..kernels.cpu import special

        return special.apply(kernel, x)

    def generic(xp: Any, x: Any) -> Any:
        return _kgpu.apply(kernel, xp, x)

    def gpu(xp: Any, x: Any) -> Any:
        fn = _kgpu.cupy_function(kernel)
        if fn is None:
            return _kgpu.apply(kernel, xp, x)
        # CuPy's special kernels take float32/float64; float16 goes through float32
        return fn(x.astype(xp.float32) if x.dtype == xp.float16 else x)

    return Primitive(
        name, "elementwise", abstract, impl=generic, cpu=cpu, gpu=gpu, vjp=vjp, scalar=scalar
    )


def _where0(x: Tensor, at_zero: float, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """``fn(x)``, with the limit value ``at_zero`` where x == 0 (fn sees 1 there)."""
    zero = x == 0
    safe = select(zero, x * 0 + 1, x)
    return select(zero, x * 0 + at_zero, fn(safe))


def _sign_of(x: Tensor) -> Tensor:
    return sign(x)


erf_p = _special_op(
    "erf", "erf", lambda g, x, *, out: g * exp(neg(x * x)) * _TWO_OVER_SQRT_PI, "erf(x)"
)
erfc_p = _special_op(
    "erfc", "erfc", lambda g, x, *, out: g * exp(neg(x * x)) * -_TWO_OVER_SQRT_PI, "erfc(x)"
)
erfinv_p = _special_op(
    "erfinv", "erfinv", lambda g, x, *, out: g * exp(out * out) * (math.sqrt(math.pi) / 2)
)
bessel_i0_p = _special_op("bessel_i0", "i0", lambda g, x, *, out: g * bessel_i1(x))
bessel_i0e_p = _special_op(
    "bessel_i0e", "i0e", lambda g, x, *, out: g * (bessel_i1e(x) - _sign_of(x) * out)
)
bessel_i1_p = _special_op(
    "bessel_i1",
    "i1",
    lambda g, x, *, out: g * _where0(x, 0.5, lambda s: bessel_i0(s) - bessel_i1(s) / s),
)
bessel_i1e_p = _special_op(
    "bessel_i1e",
    "i1e",
    lambda g, x, *, out: (
        g * (_where0(x, 0.5, lambda s: bessel_i0e(s) - bessel_i1e(s) / s) - _sign_of(x) * out)
    ),
)
bessel_j0_p = _special_op("bessel_j0", "j0", lambda g, x, *, out: neg(g * bessel_j1(x)))
bessel_j1_p = _special_op(
    "bessel_j1",
    "j1",
    lambda g, x, *, out: g * _where0(x, 0.5, lambda s: bessel_j0(s) - bessel_j1(s) / s),
)
bessel_y0_p = _special_op("bessel_y0", "y0", lambda g, x, *, out: neg(g * bessel_y1(x)))
bessel_y1_p = _special_op("bessel_y1", "y1", lambda g, x, *, out: g * (bessel_y0(x) - out / x))
bessel_k0_p = _special_op("bessel_k0", "k0", lambda g, x, *, out: neg(g * bessel_k1(x)))
bessel_k0e_p = _special_op("bessel_k0e", "k0e", lambda g, x, *, out: g * (out - bessel_k1e(x)))
bessel_k1_p = _special_op("bessel_k1", "k1", lambda g, x, *, out: neg(g * (bessel_k0(x) + out / x)))
bessel_k1e_p = _special_op(
    "bessel_k1e", "k1e", lambda g, x, *, out: g * (out - bessel_k0e(x) - out / x)
)


def erf(x: Any) -> Tensor:
    """Elementwise error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``.

    >>> erf(Tensor([0.0])).tolist()
    [0.0]
    """
    return erf_p.bind(float_input("erf", x))


def erfc(x: Any) -> Tensor:
    """Elementwise complementary error function ``1 - erf(x)``, accurate where erf is near 1."""
    return erfc_p.bind(float_input("erfc", x))


def erfinv(input: Any) -> Tensor:  # noqa: A002 - MindSpore's argument name
    """Elementwise inverse error function on (-1, 1) (+-inf at +-1, NaN outside)."""
    return erfinv_p.bind(float_input("erfinv", input, "input"))


def bessel_i0(x: Any) -> Tensor:
    """Modified Bessel function of the first kind, order 0."""
    return bessel_i0_p.bind(float_input("bessel_i0", x))


def bessel_i0e(x: Any) -> Tensor:
    """Exponentially scaled ``bessel_i0``: ``exp(-|x|) * i0(x)``."""
    return bessel_i0e_p.bind(float_input("bessel_i0e", x))


def bessel_i1(x: Any) -> Tensor:
    """Modified Bessel function of the first kind, order 1."""
    return bessel_i1_p.bind(float_input("bessel_i1", x))


def bessel_i1e(x: Any) -> Tensor:
    """Exponentially scaled ``bessel_i1``: ``exp(-|x|) * i1(x)``."""
    return bessel_i1e_p.bind(float_input("bessel_i1e", x))


def bessel_j0(x: Any) -> Tensor:
    """Bessel function of the first kind, order 0."""
    return bessel_j0_p.bind(float_input("bessel_j0", x))


def bessel_j1(x: Any) -> Tensor:
    """Bessel function of the first kind, order 1."""
    return bessel_j1_p.bind(float_input("bessel_j1", x))


def bessel_y0(x: Any) -> Tensor:
    """Bessel function of the second kind, order 0 (x > 0; -inf at 0, NaN below)."""
    return bessel_y0_p.bind(float_input("bessel_y0", x))


def bessel_y1(x: Any) -> Tensor:
    """Bessel function of the second kind, order 1 (x > 0; -inf at 0, NaN below)."""
    return bessel_y1_p.bind(float_input("bessel_y1", x))


def bessel_k0(x: Any) -> Tensor:
    """Modified Bessel function of the second kind, order 0 (x > 0; inf at 0, NaN below)."""
    return bessel_k0_p.bind(float_input("bessel_k0", x))


def bessel_k0e(x: Any) -> Tensor:
    """Exponentially scaled ``bessel_k0``: ``exp(x) * k0(x)``."""
    return bessel_k0e_p.bind(float_input("bessel_k0e", x))


def bessel_k1(x: Any) -> Tensor:
    """Modified Bessel function of the second kind, order 1 (x > 0; inf at 0, NaN below)."""
    return bessel_k1_p.bind(float_input("bessel_k1", x))


def bessel_k1e(x: Any) -> Tensor:
    """Exponentially scaled ``bessel_k1``: ``exp(x) * k1(x)``."""
    return bessel_k1e_p.bind(float_input("bessel_k1e", x))


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
    """Elementwise absolute value (gradient ``sign(x)``, 0 at 0).

    >>> abs(Tensor([-1.5, 2.0])).tolist()
    [1.5, 2.0]
    """
    return abs_p.bind(as_tensor(x, "abs", "x"))


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
