"""Numba im2col/col2im for 2-d convolutions (1-d convolutions use them with height 1).

The column layout is ``(C, KH, KW, N, OH, OW)``: one row per (channel, kernel tap) and
one column per (image, output pixel), so a whole convolution is a single large GEMM per
group (``weight @ cols``) instead of one small GEMM per image; BLAS then does the heavy
lifting on every core. Both kernels are serial and cached: they are memory-bound copies,
and parallel Numba threads spinning next to OpenBLAS's threads made a conv2d
forward+backward twice as slow on 2 cores (benchmarks/bench_conv2d.py), not faster.
Out-of-range taps (padding) read as zero in ``im2col`` and are dropped by ``col2im``.
"""

from __future__ import annotations

import numba
import numpy as np

from ._config import JIT_SERIAL

__all__ = ["im2col2d", "col2im2d"]


@numba.jit(**JIT_SERIAL)
def _valid_range(n_out, stride, offset, size):  # pragma: no cover - compiled
    """Output positions o in [lo, hi) whose input o * stride + offset lies in [0, size)."""
    lo = 0
    if offset < 0:
        lo = (-offset + stride - 1) // stride
    hi = 0
    if size - offset > 0:
        hi = (size - offset + stride - 1) // stride
    return min(lo, n_out), max(min(hi, n_out), min(lo, n_out))


@numba.jit(**JIT_SERIAL)
def _im2col_kernel(x, cols, sh, sw, ph, pw, dh, dw):  # pragma: no cover - compiled
    n_img, n_ch, h, w = x.shape
    _, kh, kw, _, oh, ow = cols.shape
    for t in range(n_ch * kh * kw * n_img):
        n = t % n_img
        r = t // n_img
        j = r % kw
        i = (r // kw) % kh
        c = r // (kw * kh)
        src = x[n, c]
        dst = cols[c, i, j, n]
        y0, y1 = _valid_range(oh, sh, i * dh - ph, h)
        x0, x1 = _valid_range(ow, sw, j * dw - pw, w)
        for y in range(oh):
            row = dst[y]
            if y < y0 or y >= y1:
                row[:] = 0
                continue
            srow = src[y * sh - ph + i * dh]
            row[:x0] = 0
            off = j * dw - pw
            for xo in range(x0, x1):
                row[xo] = srow[xo * sw + off]
            row[x1:] = 0


@numba.jit(**JIT_SERIAL)
def _col2im_kernel(cols, out, sh, sw, ph, pw, dh, dw):  # pragma: no cover - compiled
    n_img, n_ch, h, w = out.shape
    _, kh, kw, _, oh, ow = cols.shape
    for t in range(n_img * n_ch):
        n = t // n_ch
        c = t % n_ch
        dst = out[n, c]
        for i in range(kh):
            y0, y1 = _valid_range(oh, sh, i * dh - ph, h)
            for j in range(kw):
                x0, x1 = _valid_range(ow, sw, j * dw - pw, w)
                src = cols[c, i, j, n]
                off = j * dw - pw
                for y in range(y0, y1):
                    drow = dst[y * sh - ph + i * dh]
                    srow = src[y]
                    for xo in range(x0, x1):
                        drow[xo * sw + off] += srow[xo]


def _native(a: np.ndarray) -> tuple[np.ndarray, np.dtype]:
    """float32/float64 C-contiguous input for the kernels (float16 computes in float32)."""
    dt = a.dtype
    work = np.float64 if dt == np.float64 else np.float32
    return np.ascontiguousarray(a, dtype=work), dt


def im2col2d(
    x: np.ndarray,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    pad_lo: tuple[int, int],
    dilation: tuple[int, int],
    out_hw: tuple[int, int],
) -> np.ndarray:
    """Columns ``(C, KH, KW, N, OH, OW)`` of a ``(N, C, H, W)`` input (zero padding)."""
    xc, dt = _native(x)
    n, c = x.shape[:2]
    cols = np.empty((c, kernel[0], kernel[1], n, out_hw[0], out_hw[1]), xc.dtype)
    if cols.size:
        _im2col_kernel(
            xc, cols, stride[0], stride[1], pad_lo[0], pad_lo[1], dilation[0], dilation[1]
        )
    return cols if cols.dtype == dt else cols.astype(dt)


def col2im2d(
    cols: np.ndarray,
    shape: tuple[int, int, int, int],
    stride: tuple[int, int],
    pad_lo: tuple[int, int],
    dilation: tuple[int, int],
) -> np.ndarray:
    """Sum columns ``(C, KH, KW, N, OH, OW)`` back into an image of ``shape`` (N, C, H, W)."""
    cc, dt = _native(cols)
    out = np.zeros(shape, cc.dtype)
    if cols.size and out.size:
        _col2im_kernel(
            cc, out, stride[0], stride[1], pad_lo[0], pad_lo[1], dilation[0], dilation[1]
        )
    return out if out.dtype == dt else out.astype(dt)
