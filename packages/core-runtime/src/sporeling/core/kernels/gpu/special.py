"""Special functions as array expressions for the GPU path (CuPy, or NumPy in the stand-in).

:func:`apply` evaluates the same Chebyshev approximations as the Numba kernels in
:mod:`..cpu.special` (see that module for the forms, intervals and coefficients) with
whole-array operations of the array module ``xp``: every piece is evaluated on all
elements (clamped into its interval) and the results are merged with ``where``.

On a real GPU :func:`cupy_function` returns CuPy's own kernel (``cupyx.scipy.special``,
imported lazily so that this module imports without CuPy); ops use it when it exists and
fall back to :func:`apply` otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..cpu.special import J0_Z1, J0_Z2, J1_Z1, TABLES

__all__ = ["apply", "cupy_function", "FUNCTIONS"]

#: coefficients as Python floats (no host-to-device copy per coefficient)
_C = {name: tuple(float(c) for c in table) for name, table in TABLES.items()}
_TWO_OVER_PI = 2.0 / math.pi


def _cheb(name: str, t: Any) -> Any:
    """Clenshaw's recurrence for the series ``name`` at the array ``t``."""
    c = _C[name]
    b1 = 0.0 * t
    b2 = b1
    t2 = 2.0 * t
    for ck in c[:0:-1]:
        b1, b2 = ck + t2 * b1 - b2, b1
    return c[0] + t * b1 - b2


def _i0e(xp: Any, x: Any) -> Any:
    ax = xp.abs(x)
    small = _cheb("I0E_A", xp.minimum(ax, 8.0) / 4.0 - 1.0)
    big = xp.maximum(ax, 8.0)
    return xp.where(ax <= 8.0, small, _cheb("I0E_B", 16.0 / big - 1.0) / xp.sqrt(big))


def _i0(xp: Any, x: Any) -> Any:
    half = xp.exp(xp.abs(x) / 2.0)  # two halves: exp(|x|) alone overflows before i0 does
    return half * _i0e(xp, x) * half


def _i1e(xp: Any, x: Any) -> Any:
    ax = xp.abs(x)
    small = x * _cheb("I1E_A", xp.minimum(ax, 8.0) / 4.0 - 1.0)
    big = xp.maximum(ax, 8.0)
    large = xp.sign(x) * _cheb("I1E_B", 16.0 / big - 1.0) / xp.sqrt(big)
    return xp.where(ax <= 8.0, small, large)


def _i1(xp: Any, x: Any) -> Any:
    half = xp.exp(xp.abs(x) / 2.0)
    return half * _i1e(xp, x) * half


def _k_pieces(xp: Any, x: Any, order: int) -> tuple[Any, Any, Any]:
    """(k(x) on (0, 2], sqrt(x) k(x) e^x beyond, mask of x <= 2) for order 0 or 1."""
    s = xp.where(x > 0.0, xp.minimum(x, 2.0), 1.0)
    if order == 0:
        small = _cheb("K0_A", s * s / 2.0 - 1.0) - xp.log(s / 2.0) * _i0(xp, s)
    else:
        small = xp.log(s / 2.0) * _i1(xp, s) + _cheb("K1_A", s * s / 2.0 - 1.0) / s
    b = xp.maximum(x, 2.0)
    large = _cheb("K0_B" if order == 0 else "K1_B", 4.0 / b - 1.0) / xp.sqrt(b)
    return small, large, x <= 2.0


def _k_special(xp: Any, x: Any, value: Any) -> Any:
    value = xp.where(x == 0.0, math.inf, value)
    return xp.where(x < 0.0, math.nan, value)


def _k0(xp: Any, x: Any) -> Any:
    small, large, lo = _k_pieces(xp, x, 0)
    return _k_special(xp, x, xp.where(lo, small, large * xp.exp(-x)))


def _k0e(xp: Any, x: Any) -> Any:
    small, large, lo = _k_pieces(xp, x, 0)
    return _k_special(xp, x, xp.where(lo, small * xp.exp(xp.minimum(x, 2.0)), large))


def _k1(xp: Any, x: Any) -> Any:
    small, large, lo = _k_pieces(xp, x, 1)
    return _k_special(xp, x, xp.where(lo, small, large * xp.exp(-x)))


def _k1e(xp: Any, x: Any) -> Any:
    small, large, lo = _k_pieces(xp, x, 1)
    return _k_special(xp, x, xp.where(lo, small * xp.exp(xp.minimum(x, 2.0)), large))


def _hankel(xp: Any, ax: Any, order: int) -> tuple[Any, Any, Any, Any]:
    """P/sqrt(pi x), Q/sqrt(pi x), cos x, sin x for x = max(ax, 5) (finite)."""
    b = xp.where(xp.isfinite(ax), xp.maximum(ax, 5.0), 5.0)
    t = 50.0 / (b * b) - 1.0
    scale = xp.sqrt(1.0 / (math.pi * b))
    p = scale * _cheb("P0" if order == 0 else "P1", t)
    q = scale * _cheb("Q0" if order == 0 else "Q1", t) / b
    return p, q, xp.cos(b), xp.sin(b)


def _j0(xp: Any, x: Any) -> Any:
    ax = xp.abs(x)
    s5 = xp.minimum(ax, 5.0)
    zeros = (s5 - J0_Z1[0] - J0_Z1[1]) * (s5 + J0_Z1[0])
    zeros = zeros * ((s5 - J0_Z2[0] - J0_Z2[1]) * (s5 + J0_Z2[0]))
    small = zeros * _cheb("J0_A", s5 * s5 / 12.5 - 1.0)
    p, q, c, s = _hankel(xp, ax, 0)
    large = xp.where(xp.isinf(ax), 0.0, p * (c + s) - q * (s - c))
    return xp.where(ax <= 5.0, small, large)


def _y0(xp: Any, x: Any) -> Any:
    s5 = xp.where(x > 0.0, xp.minimum(x, 5.0), 1.0)
    small = _cheb("Y0_A", s5 * s5 / 12.5 - 1.0) + _TWO_OVER_PI * xp.log(s5) * _j0(xp, s5)
    p, q, c, s = _hankel(xp, x, 0)
    large = xp.where(xp.isinf(x), 0.0, p * (s - c) + q * (c + s))
    out = xp.where(x <= 5.0, small, large)
    return xp.where(x < 0.0, math.nan, xp.where(x == 0.0, -math.inf, out))


def _j1(xp: Any, x: Any) -> Any:
    ax = xp.abs(x)
    s5 = xp.minimum(ax, 5.0)
    zeros = (s5 - J1_Z1[0] - J1_Z1[1]) * (s5 + J1_Z1[0])
    small = x * zeros * _cheb("J1_A", s5 * s5 / 12.5 - 1.0)
    p, q, c, s = _hankel(xp, ax, 1)
    large = xp.where(xp.isinf(ax), 0.0, xp.sign(x) * (p * (s - c) + q * (s + c)))
    return xp.where(ax <= 5.0, small, large)


def _y1(xp: Any, x: Any) -> Any:
    s5 = xp.where(x > 0.0, xp.minimum(x, 5.0), 1.0)
    small = s5 * _cheb("Y1_A", s5 * s5 / 12.5 - 1.0)
    small = small + _TWO_OVER_PI * (_j1(xp, s5) * xp.log(s5) - 1.0 / s5)
    p, q, c, s = _hankel(xp, x, 1)
    large = xp.where(xp.isinf(x), 0.0, q * (s - c) - p * (s + c))
    out = xp.where(x <= 5.0, small, large)
    return xp.where(x < 0.0, math.nan, xp.where(x == 0.0, -math.inf, out))


def _exp_minus_square(xp: Any, ax: Any) -> Any:
    """exp(-ax**2) without amplifying the rounding error of ax**2 (ax >= 0)."""
    h = xp.floor(ax * 16.0 + 0.5) / 16.0  # h*h is exact for ax < 2**20
    lo = ax - h
    return xp.exp(-h * h) * xp.exp(-(2.0 * h + lo) * lo)


def _erfc_pos(xp: Any, ax: Any) -> Any:
    """erfc(ax) for ax >= 1 (other elements give finite filler values)."""
    mid = _cheb("ERFCX_B", (xp.clip(ax, 1.0, 4.0) - 2.5) / 1.5)
    b = xp.where(xp.isfinite(ax), xp.maximum(ax, 4.0), 4.0)
    far = _cheb("ERFCX_C", 32.0 / (b * b) - 1.0) / b
    big = xp.where(xp.isinf(ax), 0.0, _exp_minus_square(xp, xp.minimum(ax, 30.0)))
    return big * xp.where(ax <= 4.0, mid, far)


def _erf_small(xp: Any, x: Any) -> Any:
    s = xp.clip(x, -1.0, 1.0)
    return s * _cheb("ERF_A", 2.0 * s * s - 1.0)


def _erf(xp: Any, x: Any) -> Any:
    ax = xp.abs(x)
    return xp.where(ax <= 1.0, _erf_small(xp, x), xp.sign(x) * (1.0 - _erfc_pos(xp, ax)))


def _erfc(xp: Any, x: Any) -> Any:
    ax = xp.abs(x)
    tail = _erfc_pos(xp, ax)
    return xp.where(ax <= 1.0, 1.0 - _erf_small(xp, x), xp.where(x < 0.0, 2.0 - tail, tail))


def _erfinv(xp: Any, y: Any) -> Any:
    """Winitzki's closed form refined by three Halley steps (as in the Numba kernel)."""
    a = xp.abs(y)
    inside = a < 1.0
    a_in = xp.where(inside, a, 0.0)
    w = -xp.log((1.0 - a_in) * (1.0 + a_in))
    b = 2.0 / (math.pi * 0.147) - w / 2.0
    x = xp.sqrt(xp.sqrt(b * b + w / 0.147) - b)
    c = 1.0 - a_in
    upper = a_in >= 0.5
    for _ in range(3):
        f = xp.where(upper, c - _erfc(xp, x), _erf(xp, x) - a_in)
        x = x - f / (2.0 / math.sqrt(math.pi) * xp.exp(-x * x) + x * f)
    x = xp.where(inside, x, xp.where(a == 1.0, math.inf, math.nan))
    return xp.where(y < 0.0, -x, x)


#: public name -> array function ``f(xp, float64 array)``
FUNCTIONS: dict[str, Callable[[Any, Any], Any]] = {
    "i0": _i0,
    "i0e": _i0e,
    "i1": _i1,
    "i1e": _i1e,
    "j0": _j0,
    "j1": _j1,
    "y0": _y0,
    "y1": _y1,
    "k0": _k0,
    "k0e": _k0e,
    "k1": _k1,
    "k1e": _k1e,
    "erf": _erf,
    "erfc": _erfc,
    "erfinv": _erfinv,
}


def apply(name: str, xp: Any, x: Any) -> Any:
    """``name`` applied elementwise with the array module ``xp``, computed in float64."""
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    with np.errstate(all="ignore"):  # the unused piece of each ``where`` may overflow
        x64 = x.astype(np.float64)
        out = xp.where(xp.isnan(x64), math.nan, FUNCTIONS[name](xp, x64))
    return out.astype(dtype, copy=False)


def cupy_function(name: str) -> Callable[[Any], Any] | None:
    """CuPy's kernel for ``name`` from ``cupyx.scipy.special``, or None if unavailable."""
    try:
        import cupyx.scipy.special as cs
    except ImportError:  # pragma: no cover - depends on the machine
        return None
    return getattr(cs, name, None)
