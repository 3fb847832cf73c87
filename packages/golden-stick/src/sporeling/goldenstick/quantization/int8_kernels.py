"""Numba kernels of the int8 inference path: integer products with int32 accumulation."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["qgemm", "quantize_input", "im2col"]


@njit(cache=True, parallel=True)
def qgemm(a: np.ndarray, w: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """``a (M, K) int16 @ w (N, K) int8 .T`` accumulated in int32."""
    m, k = a.shape
    n = w.shape[0]
    out = np.empty((m, n), np.int32)
    for i in prange(m):
        for j in range(n):
            acc = np.int32(0)
            for t in range(k):
                acc += np.int32(a[i, t]) * np.int32(w[j, t])
            out[i, j] = acc
    return out


@njit(cache=True, parallel=True)
def quantize_input(
    x: np.ndarray, scale: float, zero_point: float, qmin: float, qmax: float
):  # pragma: no cover
    """``clip(round(x / scale) + zp, qmin, qmax) - zp`` as int16 (the zero-centred level),
    which equals the fake quantizer's level for ``x`` (same nudged grid)."""
    flat = x.ravel()
    out = np.empty(flat.size, np.int16)
    lo = qmin - zero_point
    hi = qmax - zero_point
    for i in prange(flat.size):
        v = np.round(flat[i] / scale)
        if v < lo:
            v = lo
        elif v > hi:
            v = hi
        out[i] = np.int16(v)
    return out.reshape(x.shape)


@njit(cache=True, parallel=True)
def im2col(
    x: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, oh: int, ow: int
):  # pragma: no cover
    """Patches of a padded (N, C, H, W) int16 tensor as rows (N*OH*OW, C*KH*KW)."""
    n, c = x.shape[0], x.shape[1]
    cols = np.empty((n * oh * ow, c * kh * kw), np.int16)
    for r in prange(n * oh * ow):
        b = r // (oh * ow)
        rem = r % (oh * ow)
        oy = rem // ow
        ox = rem % ow
        col = 0
        for ci in range(c):
            for ky in range(kh):
                for kx in range(kw):
                    cols[r, col] = x[b, ci, oy * sh + ky * dh, ox * sw + kx * dw]
                    col += 1
    return cols
