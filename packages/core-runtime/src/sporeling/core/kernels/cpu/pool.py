"""Numba kernels for 2-d max and average pooling, forward and backward.

Max pooling returns, with each maximum, its flat index in the input plane (``h * W + w``),
as MindSpore's ``argmax`` output does; the backward pass scatters gradients to those
indices. The first maximum in a window wins (ties), which the tests' reference shares.
Average pooling divides by the number of window taps inside given bounds: the input
(MindSpore's rule for ``pad_mode="same"``) or the input plus its explicit padding
(``count_include_pad``). The kernels are serial and cached. The general max kernel's chain
of data-dependent branches mispredicts on random data (1.8 ms for LeNet's first pool, as
long as its convolution); plain 2x2 windows take an unrolled tree of selects instead.
"""

from __future__ import annotations

import numba
import numpy as np

from ._config import JIT_SERIAL

__all__ = ["max_pool2d", "max_pool2d_backward", "avg_pool2d", "avg_pool2d_backward"]


@numba.jit(**JIT_SERIAL)
def _max_pool_kernel(x, out, idx, kh, kw, sh, sw, ph, pw, dh, dw):  # pragma: no cover
    n_img, n_ch, h, w = x.shape
    oh, ow = out.shape[2], out.shape[3]
    for n in range(n_img):
        for c in range(n_ch):
            for y in range(oh):
                for xo in range(ow):
                    best = -np.inf
                    arg = -1
                    for i in range(kh):
                        iy = y * sh - ph + i * dh
                        if iy < 0 or iy >= h:
                            continue
                        for j in range(kw):
                            ix = xo * sw - pw + j * dw
                            if ix < 0 or ix >= w:
                                continue
                            v = x[n, c, iy, ix]
                            if v > best or arg < 0 or (v != v and best == best):
                                best = v
                                arg = iy * w + ix
                    out[n, c, y, xo] = best
                    idx[n, c, y, xo] = arg


@numba.jit(**JIT_SERIAL, inline="always")  # (not a compile of its own, linked in again)
def _wins(v, best):  # pragma: no cover - compiled
    """Whether a later tap ``v`` replaces ``best``: larger, or a NaN when ``best`` is not."""
    return (v > best) | ((v != v) & (best == best))


@numba.jit(**JIT_SERIAL)
def _max_pool_2x2_kernel(x, out, idx, sh, sw):  # pragma: no cover - compiled
    """2x2 windows with no padding or dilation, all inside the input (the usual CNN pool):
    each window reduced as a tree of selects, left before right and top before bottom, so
    the first maximum and the first NaN in row-major order win as in the general kernel
    (LeNet's pool over 64x6x28x28: 1.8 -> 0.2 ms; the general kernel's chain of branches
    mispredicts on random data)."""
    n_img, n_ch, w = x.shape[0], x.shape[1], x.shape[3]
    oh, ow = out.shape[2], out.shape[3]
    for n in range(n_img):
        for c in range(n_ch):
            plane = x[n, c]
            best_row = out[n, c]
            arg_row = idx[n, c]
            for y in range(oh):
                top = plane[y * sh]
                bottom = plane[y * sh + 1]
                for xo in range(ow):
                    x0 = xo * sw
                    a, b = top[x0], top[x0 + 1]
                    c_, d = bottom[x0], bottom[x0 + 1]
                    if (a + b) + (c_ + d) == (a + b) + (c_ + d):  # no NaN (nor inf - inf)
                        right = b > a
                        m1 = b if right else a
                        i1 = 1 if right else 0
                        right = d > c_
                        m2 = d if right else c_
                        i2 = 3 if right else 2
                        lower = m2 > m1
                    else:  # rare: the same tree, a NaN beating any number
                        right = _wins(b, a)
                        m1 = b if right else a
                        i1 = 1 if right else 0
                        right = _wins(d, c_)
                        m2 = d if right else c_
                        i2 = 3 if right else 2
                        lower = _wins(m2, m1)
                    best_row[y, xo] = m2 if lower else m1
                    tap = i2 if lower else i1
                    arg_row[y, xo] = (y * sh + (tap >> 1)) * w + x0 + (tap & 1)


@numba.jit(**JIT_SERIAL)
def _scatter_kernel(g, idx, out):  # pragma: no cover - compiled
    n_img, n_ch, m = g.shape
    for n in range(n_img):
        for c in range(n_ch):
            for k in range(m):
                a = idx[n, c, k]
                if a >= 0:
                    out[n, c, a] += g[n, c, k]


@numba.jit(**JIT_SERIAL)
def _avg_pool_kernel(x, out, kh, kw, sh, sw, ph, pw, bounds):  # pragma: no cover
    n_img, n_ch, h, w = x.shape
    oh, ow = out.shape[2], out.shape[3]
    for n in range(n_img):
        for c in range(n_ch):
            for y in range(oh):
                y0 = max(y * sh - ph, 0)
                y1 = min(y * sh - ph + kh, h)
                cy = min(y * sh - ph + kh, bounds[1]) - max(y * sh - ph, bounds[0])
                for xo in range(ow):
                    x0 = max(xo * sw - pw, 0)
                    x1 = min(xo * sw - pw + kw, w)
                    cx = min(xo * sw - pw + kw, bounds[3]) - max(xo * sw - pw, bounds[2])
                    acc = 0.0
                    for iy in range(y0, y1):
                        for ix in range(x0, x1):
                            acc += x[n, c, iy, ix]
                    cnt = cy * cx
                    out[n, c, y, xo] = acc / cnt if cnt > 0 else 0.0


@numba.jit(**JIT_SERIAL)
def _avg_pool_backward_kernel(g, out, kh, kw, sh, sw, ph, pw, bounds):  # pragma: no cover
    n_img, n_ch, h, w = out.shape
    oh, ow = g.shape[2], g.shape[3]
    for n in range(n_img):
        for c in range(n_ch):
            for y in range(oh):
                y0 = max(y * sh - ph, 0)
                y1 = min(y * sh - ph + kh, h)
                cy = min(y * sh - ph + kh, bounds[1]) - max(y * sh - ph, bounds[0])
                for xo in range(ow):
                    x0 = max(xo * sw - pw, 0)
                    x1 = min(xo * sw - pw + kw, w)
                    cnt = cy * (min(xo * sw - pw + kw, bounds[3]) - max(xo * sw - pw, bounds[2]))
                    if cnt <= 0:
                        continue
                    v = g[n, c, y, xo] / cnt
                    for iy in range(y0, y1):
                        for ix in range(x0, x1):
                            out[n, c, iy, ix] += v


def _work(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.float64 if a.dtype == np.float64 else np.float32)


def max_pool2d(x, kernel, stride, pad_lo, dilation, out_hw):
    """``(out, argmax)`` for a ``(N, C, H, W)`` float input (argmax: int64 flat index)."""
    xc = _work(x)
    n, c = x.shape[:2]
    out = np.empty((n, c) + tuple(out_hw), xc.dtype)
    idx = np.empty((n, c) + tuple(out_hw), np.int64)
    plain_2x2 = (
        tuple(kernel) == (2, 2)
        and not any(pad_lo)
        and tuple(dilation) == (1, 1)
        and (out_hw[0] - 1) * stride[0] + 2 <= x.shape[2]
        and (out_hw[1] - 1) * stride[1] + 2 <= x.shape[3]
    )
    if out.size and plain_2x2:
        _max_pool_2x2_kernel(xc, out, idx, stride[0], stride[1])
    elif out.size:
        _max_pool_kernel(
            xc,
            out,
            idx,
            kernel[0],
            kernel[1],
            stride[0],
            stride[1],
            pad_lo[0],
            pad_lo[1],
            dilation[0],
            dilation[1],
        )
    return out.astype(x.dtype, copy=False), idx


def max_pool2d_backward(g, idx, shape):
    """Scatter-add ``g`` (N, C, OH, OW) to the ``idx`` positions of a ``shape`` input."""
    gc = _work(g)
    n, c = shape[:2]
    plane = int(np.prod(shape[2:]))
    out = np.zeros((n, c, plane), gc.dtype)
    if g.size:
        _scatter_kernel(gc.reshape(n, c, -1), np.ascontiguousarray(idx).reshape(n, c, -1), out)
    return out.reshape(shape).astype(g.dtype, copy=False)


def avg_pool2d(x, kernel, stride, pad_lo, out_hw, bounds):
    """Window sums over the input divided by the taps inside ``bounds``
    (``(y_lo, y_hi, x_lo, x_hi)`` in input coordinates: the input itself, or the input
    plus its explicit padding when padding counts)."""
    xc = _work(x)
    out = np.empty(x.shape[:2] + tuple(out_hw), xc.dtype)
    if out.size:
        _avg_pool_kernel(
            xc,
            out,
            kernel[0],
            kernel[1],
            stride[0],
            stride[1],
            pad_lo[0],
            pad_lo[1],
            np.asarray(bounds, np.int64),
        )
    return out.astype(x.dtype, copy=False)


def avg_pool2d_backward(g, shape, kernel, stride, pad_lo, bounds):
    """The transpose of :func:`avg_pool2d`: spread each gradient over its window."""
    gc = _work(g)
    out = np.zeros(shape, gc.dtype)
    if g.size:
        _avg_pool_backward_kernel(
            gc,
            out,
            kernel[0],
            kernel[1],
            stride[0],
            stride[1],
            pad_lo[0],
            pad_lo[1],
            np.asarray(bounds, np.int64),
        )
    return out.astype(g.dtype, copy=False)
