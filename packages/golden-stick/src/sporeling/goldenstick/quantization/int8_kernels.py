"""Numba kernels of the int8 inference path: integer products with int32 accumulation."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["qgemm", "qgemm_t", "quantize_input", "im2col"]


@njit(cache=True, parallel=True)
def qgemm_t(a: np.ndarray, wt: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """``a (M, K) int16 @ wt (K, N) int16`` accumulated in int32: each row adds weight rows
    scaled by its non-zero input levels (vectorised over N; ReLU zeros are skipped)."""
    m, k = a.shape
    n = wt.shape[1]
    out = np.zeros((m, n), np.int32)
    for i in prange(m):
        acc = out[i]
        for t in range(k):
            v = np.int32(a[i, t])
            if v != 0:
                for j in range(n):
                    acc[j] += v * np.int32(wt[t, j])
    return out


def qgemm(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``a (M, K) int16 @ w (N, K) int8 .T`` accumulated in int32."""
    return qgemm_t(np.ascontiguousarray(a, np.int16), np.ascontiguousarray(w.T, np.int16))


def quantize_input(x: np.ndarray, scale: float, zero_point: float, qmin: float, qmax: float):
    """``clip(round(x / scale), qmin - zp, qmax - zp)`` as int16: the zero-centred level of
    ``x`` on the fake quantizer's grid (same nudged grid, so the same level)."""
    levels = np.round(x.astype(np.float64) / scale)
    return np.clip(levels, qmin - zero_point, qmax - zero_point).astype(np.int16)


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
