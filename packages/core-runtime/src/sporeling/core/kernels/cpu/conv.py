"""Numba im2col/col2im for 2-d convolutions (1-d convolutions use them with height 1).

The column layout is ``(C, KH, KW, N, OH, OW)``: one row per (channel, kernel tap) and
one column per (image, output pixel), so a whole convolution is a single large GEMM per
group (``weight @ cols``) instead of one small GEMM per image; BLAS then does the heavy
lifting on every core. Both kernels are cached and run on blocks of rows (im2col: one per
channel, tap and image) or of output planes (col2im: one per image and channel) across
Sporeling's threads (:mod:`._rows`; Numba's own ``parallel=True`` threads, spinning next to
OpenBLAS's, had made a conv2d forward+backward twice as slow on 2 cores). They address the
arrays through flat unsigned offsets: with 6-d signed indexing every access kept Numba's
negative-index select and the copies ran 4-5x slower (LeNet's first im2col: 1.19 -> 0.26 ms).
Out-of-range taps (padding) read as zero in ``im2col`` and are dropped by ``col2im``.
"""

from __future__ import annotations

import numba
import numpy as np

from ._config import JIT_SERIAL
from ._rows import n_blocks, run_blocks

_JIT = {**JIT_SERIAL, "nogil": True}  # blocks of rows or planes run on several threads

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


@numba.jit(**_JIT)
def _im2col_kernel(x, cols, sh, sw, ph, pw, dh, dw, lo, hi):  # pragma: no cover - compiled
    """Column rows ``lo:hi`` (one per (channel, tap, image), in ``cols``' order) of ``x``.

    Flat, unsigned offsets: Numba wraps negative signed indices, and that select on every
    access (six of them per element through 6-d indexing) kept the copies scalar and slow.
    """
    n_img, n_ch, h, w = x.shape
    _, kh, kw, _, oh, ow = cols.shape
    xf = x.reshape(-1)
    cf = cols.reshape(-1)
    u_ow = np.uint64(ow)
    u_sw = np.uint64(sw)
    for t in range(lo, hi):
        n = t % n_img
        r = t // n_img
        j = r % kw
        i = (r // kw) % kh
        c = r // (kw * kh)
        y0, y1 = _valid_range(oh, sh, i * dh - ph, h)
        x0, x1 = _valid_range(ow, sw, j * dw - pw, w)
        u_x0, u_x1 = np.uint64(x0), np.uint64(x1)
        plane = (n * n_ch + c) * h * w
        for y in range(oh):
            o = np.uint64((t * oh + y) * ow)
            if y < y0 or y >= y1:
                for k in range(u_ow):
                    cf[o + k] = 0
                continue
            # input offset of output column x0 (in range: the taps before it are padding)
            s = np.uint64(plane + (y * sh - ph + i * dh) * w + x0 * sw + j * dw - pw)
            for k in range(u_x0):
                cf[o + k] = 0
            for k in range(u_x1 - u_x0):
                cf[o + u_x0 + k] = xf[s + k * u_sw]
            for k in range(u_x1, u_ow):
                cf[o + k] = 0


@numba.jit(**_JIT)
def _col2im_kernel(cols, out, sh, sw, ph, pw, dh, dw, lo, hi):  # pragma: no cover - compiled
    """Sums the columns into output planes ``lo:hi`` (one per (image, channel)): each plane
    is written by one call only, so blocks of planes can run on several threads."""
    n_img, n_ch, h, w = out.shape
    _, kh, kw, _, oh, ow = cols.shape
    cf = cols.reshape(-1)
    of = out.reshape(-1)
    u_sw = np.uint64(sw)
    for t in range(lo, hi):
        n = t // n_ch
        c = t % n_ch
        plane = (n * n_ch + c) * h * w
        for i in range(kh):
            y0, y1 = _valid_range(oh, sh, i * dh - ph, h)
            for j in range(kw):
                x0, x1 = _valid_range(ow, sw, j * dw - pw, w)
                u_x0, u_x1 = np.uint64(x0), np.uint64(x1)
                row0 = (((c * kh + i) * kw + j) * n_img + n) * oh
                for y in range(y0, y1):
                    src = np.uint64((row0 + y) * ow) + u_x0
                    dst = np.uint64(plane + (y * sh - ph + i * dh) * w + x0 * sw + j * dw - pw)
                    for k in range(u_x1 - u_x0):
                        of[dst + k * u_sw] += cf[src + k]


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
        rows = c * kernel[0] * kernel[1] * n
        args = (xc, cols, stride[0], stride[1], pad_lo[0], pad_lo[1], dilation[0], dilation[1])
        run_blocks(
            lambda _k, lo, hi: _im2col_kernel(*args, lo, hi), rows, n_blocks(rows, cols.size)
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
        planes = shape[0] * shape[1]
        args = (cc, out, stride[0], stride[1], pad_lo[0], pad_lo[1], dilation[0], dilation[1])
        run_blocks(
            lambda _k, lo, hi: _col2im_kernel(*args, lo, hi), planes, n_blocks(planes, cc.size)
        )
    return out if out.dtype == dt else out.astype(dt)
