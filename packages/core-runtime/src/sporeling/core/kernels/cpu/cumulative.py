"""Numba kernels for cumulative ops along one axis: cumsum, cumprod, cummax/cummin and the
zero-safe cumprod gradient.

Every public function takes an array of any shape and an axis; it moves the axis last,
makes a C-contiguous ``(rows, n)`` view, and runs a serial ``_<op>_kernel`` over the rows
(each row is the plain loop). Inputs here are small to medium sized in practice, so the
kernels are serial and cached (``JIT_SERIAL``); one specialization per dtype at most.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ._config import JIT_SERIAL

__all__ = ["cumsum", "cumprod", "cumextreme", "cumprod_grad"]


def _work_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a kernel runs in: float32/float64, or int64 for integers and bools (Numba
    has no float16 arithmetic, and one integer specialization keeps compile time low)."""
    if dtype.kind == "f":
        return np.dtype(np.float32) if dtype.itemsize <= 4 else np.dtype(np.float64)
    if dtype.kind == "c":  # complex64/complex128 run as they are (cumsum, cumprod)
        return dtype
    return np.dtype(np.int64)


def _rows(x: np.ndarray, axis: int) -> tuple[np.ndarray, tuple[int, ...]]:
    x = x.astype(_work_dtype(x.dtype), copy=False)
    moved = np.moveaxis(x, axis, -1)
    shape = moved.shape
    n = shape[-1] if shape else 1
    lead = int(np.prod(shape[:-1], dtype=np.int64)) if shape else 1  # not -1: n may be 0
    return np.ascontiguousarray(moved).reshape(lead, n), shape


def _back(out: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray:
    return np.moveaxis(out.reshape(shape), -1, axis)


# ---- kernels (serial row loops) --------------------------------------------------------


@numba.jit(**JIT_SERIAL)
def _cumsum_kernel(x: Any, out: Any, reverse: bool) -> None:  # pragma: no cover - jitted
    rows, n = x.shape
    for r in range(rows):
        acc = x[r, 0] * 0
        for k in range(n):
            j = n - 1 - k if reverse else k
            acc += x[r, j]
            out[r, j] = acc


@numba.jit(**JIT_SERIAL)
def _cumprod_kernel(x: Any, out: Any) -> None:  # pragma: no cover - jitted
    rows, n = x.shape
    for r in range(rows):
        acc = x[r, 0] * 0 + 1
        for j in range(n):
            acc *= x[r, j]
            out[r, j] = acc


@numba.jit(**JIT_SERIAL)
def _cumextreme_kernel(x: Any, out: Any, idx: Any, want_max: bool) -> None:  # pragma: no cover
    # Ties move the index to the latest position (like PyTorch's cummax); a NaN wins and
    # stays (NaN propagates), so the index points at the first NaN.
    rows, n = x.shape
    for r in range(rows):
        best = x[r, 0]
        bi = 0
        for j in range(n):
            v = x[r, j]
            if best != best:  # NaN already seen
                pass
            elif v != v or (v >= best if want_max else v <= best):
                best = v
                bi = j
            out[r, j] = best
            idx[r, j] = bi


@numba.jit(**JIT_SERIAL)
def _cumprod_grad_kernel(g: Any, x: Any, out: Any) -> None:  # pragma: no cover - jitted
    # d/dx_i sum_k g_k prod_{j<=k} x_j = L_i * R_i with L_i = prod_{j<i} x_j and
    # R_i = g_i + x_{i+1} R_{i+1}: no division, so zeros in x are handled exactly
    # (test_cumprod_grad_with_zeros).
    rows, n = x.shape
    for r in range(rows):
        acc = g[r, n - 1]
        out[r, n - 1] = acc
        for j in range(n - 2, -1, -1):
            acc = g[r, j] + x[r, j + 1] * acc
            out[r, j] = acc
        left = x[r, 0] * 0 + 1
        for j in range(n):
            out[r, j] *= left
            left *= x[r, j]


def _out_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind in "fc" else np.dtype(np.int64)


# ---- public wrappers (validate, allocate, reshape) ----------------------------------------


def cumsum(x: np.ndarray, axis: int, reverse: bool = False) -> np.ndarray:
    """Inclusive cumulative sum along ``axis`` (integers and bools accumulate as int64)."""
    rows, shape = _rows(x, axis)
    out = np.empty_like(rows)
    if rows.size:
        _cumsum_kernel(rows, out, reverse)
    return _back(out, shape, axis).astype(_out_dtype(x.dtype), copy=False)


def cumprod(x: np.ndarray, axis: int) -> np.ndarray:
    """Inclusive cumulative product along ``axis``."""
    rows, shape = _rows(x, axis)
    out = np.empty_like(rows)
    if rows.size:
        _cumprod_kernel(rows, out)
    return _back(out, shape, axis).astype(_out_dtype(x.dtype), copy=False)


def cumextreme(x: np.ndarray, axis: int, want_max: bool) -> tuple[np.ndarray, np.ndarray]:
    """Running maximum (or minimum) along ``axis`` and the int64 index where it was taken."""
    rows, shape = _rows(x, axis)
    out = np.empty_like(rows)
    idx = np.empty(rows.shape, np.int64)
    if rows.size:
        _cumextreme_kernel(rows, out, idx, want_max)
    return _back(out, shape, axis).astype(x.dtype, copy=False), _back(idx, shape, axis)


def cumprod_grad(g: np.ndarray, x: np.ndarray, axis: int) -> np.ndarray:
    """The vjp of cumprod along ``axis`` for cotangent ``g`` (exact with zeros in ``x``)."""
    grows, shape = _rows(g, axis)
    xrows, _ = _rows(x, axis)
    out = np.empty_like(xrows)
    if xrows.size:
        _cumprod_grad_kernel(grows, xrows, out)
    return _back(out, shape, axis).astype(x.dtype, copy=False)
