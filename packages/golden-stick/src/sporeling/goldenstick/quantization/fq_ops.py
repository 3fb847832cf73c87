"""Fused fake-quant ops: the range observation and the fake quant of SimQAT's quantizers,
each one registered primitive with a Numba kernel (``cache=True``) on the CPU.

Written with the core's elementwise ops, one quantizer was ~45 op dispatches and ~20 tape
nodes per training step (casts, the nudge, clip/round/scale, the straight-through mask),
which made a SimQAT LeNet-5 step 2.2-2.8x a plain one. Here a quantizer is
``minmax_p`` (per-channel min and max, no gradient) and ``fake_quant_p`` (the
nudge and the quantization in one pass; its gradient ``fake_quant_grad_p`` is the
straight-through mask applied in one pass): one tape node.

The maths is :func:`.fake_quant.nudge` and :func:`.fake_quant.fake_quant` exactly, in
float64: the range widened to contain 0 (symmetric if asked), ``scale = (hi - lo) /
(qmax - qmin)`` (1 for an empty range), the zero point ``round(clip(qmin - lo / scale))``
(the exact midpoint when symmetric), then ``round((clip(x) - nmin) * (1 / scale)) * scale
+ nmin``; the gradient passes where ``nmin <= x <= nmax``. A channel whose range is
exactly [0, 0] passes through unchanged (a quantizer that has seen no data; a channel of
zeros gives the same). Both ops are traced as single (opaque) ops under ``jit``.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from sporeling.core import Tensor
from sporeling.core.extend import Primitive, ShapedArray

__all__ = ["minmax", "fake_quant_range", "minmax_p", "fake_quant_p", "fake_quant_grad_p"]


@numba.njit(cache=True)
def _grid(lo: float, hi: float, qmin: float, qmax: float, symmetric: bool) -> Any:
    lo = min(lo, 0.0)
    hi = max(hi, 0.0)
    if symmetric:
        a = max(-lo, hi)
        lo, hi = -a, a
    scale = (hi - lo) / (qmax - qmin)
    if not scale > 0:
        scale = 1.0
    if symmetric:
        zp = np.ceil((qmin + qmax) / 2)
    else:
        zp = np.rint(min(max(qmin - lo / scale, qmin), qmax))
    return (qmin - zp) * scale, (qmax - zp) * scale, scale


@numba.njit(cache=True)
def _fq_kernel(x, lo, hi, qmin, qmax, symmetric, out):  # type: ignore[no-untyped-def]
    rows, cols = x.shape
    for c in range(rows):
        if lo[c] == 0.0 and hi[c] == 0.0:
            for j in range(cols):
                out[c, j] = x[c, j]
            continue
        nmin, nmax, scale = _grid(lo[c], hi[c], qmin, qmax, symmetric)
        inv = 1.0 / scale
        for j in range(cols):
            v = np.float64(x[c, j])
            if v < nmin:
                v = nmin
            elif v > nmax:
                v = nmax
            out[c, j] = np.rint((v - nmin) * inv) * scale + nmin


@numba.njit(cache=True)
def _fq_grad_kernel(g, x, lo, hi, qmin, qmax, symmetric, out):  # type: ignore[no-untyped-def]
    rows, cols = x.shape
    for c in range(rows):
        if lo[c] == 0.0 and hi[c] == 0.0:
            for j in range(cols):
                out[c, j] = g[c, j]
            continue
        nmin, nmax, _ = _grid(lo[c], hi[c], qmin, qmax, symmetric)
        for j in range(cols):
            v = np.float64(x[c, j])
            out[c, j] = g[c, j] if nmin <= v <= nmax else 0.0


def _rows(xp: Any, x: Any, axis: int | None) -> Any:
    """``x`` as (channels, rest): one row for a per-layer range (axis None)."""
    if axis is None:
        return xp.reshape(x, (1, -1))
    moved = x if axis == 0 else xp.moveaxis(x, axis, 0)
    return xp.reshape(xp.ascontiguousarray(moved), (x.shape[axis], -1))


def _unrows(xp: Any, r: Any, shape: tuple[int, ...], axis: int | None) -> Any:
    if axis is None or axis == 0:
        return xp.reshape(r, shape)
    moved = (shape[axis],) + tuple(s for i, s in enumerate(shape) if i != axis)
    return xp.moveaxis(xp.reshape(r, moved), 0, axis)


def _levels(num_bits: int, narrow_range: bool) -> tuple[float, float]:
    return (1.0 if narrow_range else 0.0), float(2**num_bits - 1)


def _host_ok(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype in (np.float32, np.float64) and x.size > 0


# ---- generic (array-module) forms: other dtypes and devices ---------------------------
def _xp_grid(xp: Any, lo: Any, hi: Any, qmin: float, qmax: float, symmetric: bool) -> Any:
    lo = xp.minimum(xp.asarray(lo, dtype=xp.float64), 0.0)
    hi = xp.maximum(xp.asarray(hi, dtype=xp.float64), 0.0)
    if symmetric:
        a = xp.maximum(-lo, hi)
        lo, hi = -a, a
    scale = (hi - lo) / (qmax - qmin)
    scale = xp.where(scale > 0, scale, 1.0)
    if symmetric:
        zp = xp.full(scale.shape, float(np.ceil((qmin + qmax) / 2)))
    else:
        zp = xp.round(xp.clip(qmin - lo / scale, qmin, qmax))
    return (qmin - zp) * scale, (qmax - zp) * scale, scale


def _xp_fq(xp: Any, x: Any, lo: Any, hi: Any, *, axis, num_bits, symmetric, narrow_range):  # type: ignore[no-untyped-def]
    qmin, qmax = _levels(num_bits, narrow_range)
    r = _rows(xp, x, axis).astype(xp.float64)
    nmin, nmax, scale = (v[:, None] for v in _xp_grid(xp, lo, hi, qmin, qmax, symmetric))
    q = xp.round((xp.clip(r, nmin, nmax) - nmin) * (1.0 / scale)) * scale + nmin
    empty = ((xp.asarray(lo) == 0) & (xp.asarray(hi) == 0))[:, None]
    return _unrows(xp, xp.where(empty, r, q).astype(x.dtype), x.shape, axis)


def _xp_fq_grad(
    xp: Any, g: Any, x: Any, lo: Any, hi: Any, *, axis, num_bits, symmetric, narrow_range
):  # type: ignore[no-untyped-def]
    qmin, qmax = _levels(num_bits, narrow_range)
    r = _rows(xp, x, axis).astype(xp.float64)
    nmin, nmax, _ = (v[:, None] for v in _xp_grid(xp, lo, hi, qmin, qmax, symmetric))
    empty = ((xp.asarray(lo) == 0) & (xp.asarray(hi) == 0))[:, None]
    keep = empty | ((r >= nmin) & (r <= nmax))
    return g * _unrows(xp, keep, x.shape, axis).astype(g.dtype)


def _xp_minmax(xp: Any, x: Any, *, axis: int | None) -> tuple[Any, Any]:
    r = _rows(xp, x, axis)
    return r.min(axis=1), r.max(axis=1)


# ---- CPU forms (Numba) ----------------------------------------------------------------
def _cpu_fq(xp: Any, x: Any, lo: Any, hi: Any, *, axis, num_bits, symmetric, narrow_range):  # type: ignore[no-untyped-def]
    if not _host_ok(x):
        return _xp_fq(
            xp,
            x,
            lo,
            hi,
            axis=axis,
            num_bits=num_bits,
            symmetric=symmetric,
            narrow_range=narrow_range,
        )
    qmin, qmax = _levels(num_bits, narrow_range)
    r = _rows(np, x, axis)
    out = np.empty_like(r)
    lo64, hi64 = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    _fq_kernel(r, lo64, hi64, qmin, qmax, bool(symmetric), out)
    return _unrows(np, out, x.shape, axis)


def _cpu_fq_grad(
    xp: Any, g: Any, x: Any, lo: Any, hi: Any, *, axis, num_bits, symmetric, narrow_range
):  # type: ignore[no-untyped-def]
    if not _host_ok(x) or g.dtype != x.dtype:
        return _xp_fq_grad(
            xp,
            g,
            x,
            lo,
            hi,
            axis=axis,
            num_bits=num_bits,
            symmetric=symmetric,
            narrow_range=narrow_range,
        )
    qmin, qmax = _levels(num_bits, narrow_range)
    r = _rows(np, x, axis)
    gr = _rows(np, g, axis)
    out = np.empty_like(gr)
    lo64, hi64 = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    _fq_grad_kernel(gr, r, lo64, hi64, qmin, qmax, bool(symmetric), out)
    return _unrows(np, out, x.shape, axis)


# ---- abstract rules and registration ---------------------------------------------------
def _channels(x: ShapedArray, axis: int | None) -> int:
    return 1 if axis is None else x.shape[axis]


def _check_range(name: str, x: ShapedArray, lo: ShapedArray, hi: ShapedArray, axis: Any) -> None:
    if x.dtype.category != 2:
        raise TypeError(f"{name}: argument 'x' expected a floating dtype, got {x.dtype}")
    if axis is not None and not 0 <= axis < x.ndim:
        raise ValueError(f"{name}: argument 'axis' expected in [0, {x.ndim}), got {axis!r}")
    want = (_channels(x, axis),)
    for arg, v in (("lo", lo), ("hi", hi)):
        if v.shape != want:
            raise ValueError(
                f"{name}: argument '{arg}' expected shape {want} for x of shape {x.shape} "
                f"(axis {axis}), got {v.shape}"
            )


def _fq_abstract(x, lo, hi, *, axis, num_bits, symmetric, narrow_range):  # type: ignore[no-untyped-def]
    _check_range("fake_quant_range", x, lo, hi, axis)
    return ShapedArray(x.shape, x.dtype)


def _fq_grad_abstract(g, x, lo, hi, *, axis, num_bits, symmetric, narrow_range):  # type: ignore[no-untyped-def]
    _check_range("fake_quant_range (gradient)", x, lo, hi, axis)
    return ShapedArray(g.shape, g.dtype)


def _minmax_abstract(x: ShapedArray, *, axis: int | None) -> tuple[ShapedArray, ShapedArray]:
    if axis is not None and not 0 <= axis < x.ndim:
        raise ValueError(f"minmax: argument 'axis' expected in [0, {x.ndim}), got {axis!r}")
    if x.size == 0:
        raise ValueError(f"minmax: argument 'x' expected a non-empty tensor, got shape {x.shape}")
    n = (_channels(x, axis),)
    return ShapedArray(n, x.dtype), ShapedArray(n, x.dtype)


def _fq_vjp(g: Tensor, x: Tensor, lo: Tensor, hi: Tensor, *, out: Any, **params: Any) -> Any:
    return (lambda: fake_quant_grad_p.bind(g, x, lo, hi, **params), None, None)


def _fq_grad_vjp(
    gg: Tensor, g: Tensor, x: Tensor, lo: Tensor, hi: Tensor, *, out: Any, **params: Any
) -> Any:
    return (lambda: fake_quant_grad_p.bind(gg, x, lo, hi, **params), None, None, None)


fake_quant_grad_p = Primitive(
    "goldenstick_fake_quant_grad",
    "opaque",
    _fq_grad_abstract,
    impl=_xp_fq_grad,
    cpu=_cpu_fq_grad,
    vjp=_fq_grad_vjp,
)
fake_quant_p = Primitive(
    "goldenstick_fake_quant",
    "opaque",
    _fq_abstract,
    impl=_xp_fq,
    cpu=_cpu_fq,
    vjp=_fq_vjp,
)
minmax_p = Primitive(
    "goldenstick_minmax",
    "opaque",
    _minmax_abstract,
    impl=_xp_minmax,  # NumPy's SIMD min/max: ~4x a scalar Numba loop
    multiple_results=True,
)


def minmax(x: Tensor, axis: int | None = None) -> tuple[Tensor, Tensor]:
    """``(min, max)`` of ``x`` per slice along ``axis`` (shape (C,)), or of the whole
    tensor (shape (1,)) for ``axis=None``. Not differentiated (ranges are observed)."""
    lo, hi = minmax_p.bind(x, axis=axis)
    return lo, hi


def fake_quant_range(
    x: Tensor,
    lo: Tensor,
    hi: Tensor,
    axis: int | None,
    num_bits: int = 8,
    symmetric: bool = False,
    narrow_range: bool = False,
) -> Tensor:
    """``x`` fake-quantized on the grid that :func:`.fake_quant.nudge` makes of the ranges
    ``[lo, hi]`` (per slice along ``axis``, or one range for ``axis=None``); gradient 1
    inside the nudged range, 0 outside (none to ``lo``/``hi``)."""
    return fake_quant_p.bind(
        x,
        lo,
        hi,
        axis=axis,
        num_bits=int(num_bits),
        symmetric=bool(symmetric),
        narrow_range=bool(narrow_range),
    )
