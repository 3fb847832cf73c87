"""The error function and Bessel functions of order 0 and 1: Numba kernels on the CPU
(:mod:`...kernels.cpu.special`), CuPy's ``cupyx.scipy.special`` on a GPU, and array
expressions of the same approximations otherwise (:mod:`...kernels.gpu.special`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..._primitive import Primitive, ShapedArray
from ...kernels.gpu import special as _kgpu
from ...tensor import Tensor
from .._compare import select
from .._elementwise import (
    FAMILIES,
    exp,
    float_input,
    neg,
)
from ._common import _TWO_OVER_SQRT_PI
from .rounding import sign

__all__ = [
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
    "erf",
    "erfc",
    "erfinv",
]

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
        from ...kernels.cpu import special

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
