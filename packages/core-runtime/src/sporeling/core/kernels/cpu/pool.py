"""Numba kernels for 2-d max and average pooling, forward and backward.

Max pooling returns, with each maximum, its flat index in the input plane (``h * W + w``),
as MindSpore's ``argmax`` output does; the backward pass scatters gradients to those
indices. The first maximum in a window wins (ties), which the tests' reference shares.
Average pooling divides by the number of window taps inside given bounds: the input
(MindSpore's rule for ``pad_mode="same"``) or the input plus its explicit padding
(``count_include_pad``). The kernels are serial and cached. The general max kernel's chain
of data-dependent branches mispredicts on random data (1.8 ms for LeNet's first pool, as
long as its convolution); plain 2x2 windows take an unrolled tree of masks instead.
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


@numba.jit(**JIT_SERIAL)
def _max_pool_2x2_kernel(x, out, idx, xb, ob, sh, sw):  # pragma: no cover - compiled
    """2x2 windows with no padding or dilation, all inside the input (the usual CNN pool):
    each window reduced as a tree, left before right and top before bottom, so the first
    maximum and the first NaN in row-major order win as in the general kernel. ``xb`` and
    ``ob`` are ``x`` and ``out`` viewed as integers of their width: every choice is a mask
    (0 or 1 times a difference of bits, XORed in) rather than a select, which LLVM had
    compiled into branches that mispredict on real data (a new batch each step). LeNet-5's
    pool over 64x6x28x28, a fresh batch each call, one core: 0.55 -> 0.26 ms CPU (the
    select tree had read 0.2 ms on one batch timed again and again: the branch predictor
    had learnt it)."""
    w = x.shape[3]
    n_img, n_ch, oh, ow = out.shape
    for n in range(n_img):
        for c in range(n_ch):
            for y in range(oh):
                top, bottom = x[n, c, y * sh], x[n, c, y * sh + 1]
                tbits, bbits = xb[n, c, y * sh], xb[n, c, y * sh + 1]
                best_row, arg_row = ob[n, c, y], idx[n, c, y]
                base = y * sh * w
                for xo in range(ow):
                    x0 = xo * sw
                    a, b, c_, d = top[x0], top[x0 + 1], bottom[x0], bottom[x0 + 1]
                    ai, bi, ci, di = tbits[x0], tbits[x0 + 1], bbits[x0], bbits[x0 + 1]
                    # right beats left: larger, or a NaN where the left is a number
                    r1 = np.int64((b > a) | ((b != b) & (a == a)))
                    r2 = np.int64((d > c_) | ((d != d) & (c_ == c_)))
                    m1, m2 = ai ^ ((ai ^ bi) * r1), ci ^ ((ci ^ di) * r2)
                    # bottom beats top: a NaN in the bottom pair only, or a larger maximum
                    n1, n2 = (a != a) | (b != b), (c_ != c_) | (d != d)
                    f1 = b if r1 else a  # the pairs' maxima, compared when neither has a NaN
                    f2 = d if r2 else c_
                    low = np.int64(~n1 & (n2 | (f2 > f1)))
                    best_row[xo] = m1 ^ ((m1 ^ m2) * low)
                    i2 = w + r2
                    arg_row[xo] = base + x0 + (r1 ^ ((r1 ^ i2) * low))


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
        bits = np.int64 if xc.dtype == np.float64 else np.int32
        _max_pool_2x2_kernel(xc, out, idx, xc.view(bits), out.view(bits), stride[0], stride[1])
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
