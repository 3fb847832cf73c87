"""Gradients of small-channel 2-d convolutions without im2col (LeNet-5's 6->16 5x5 layer).

:mod:`.conv_images` runs a weight gradient without im2col when its input channels come in
blocks of 16 (a kernel row's taps read as one run of ``KW * C_in`` floats of a
channels-last copy, :func:`.microgemm.weight_cols`); a 6-channel 5x5 layer's run is 30
floats, so it took im2col and an OpenBLAS product per image instead (0.53 ms for 64 images
of 6x14x14, one core). Here the run is read 32 wide (the copy gets a tail of zeros so the
last window stays in bounds) and the two extra columns of the result are dropped: 7% more
multiply-adds than the useful ones, all on the 8x32 micro-kernel.

The input gradient of a stride-1 layer with few input channels is, per image, one product
``D = W^T @ G`` (rows (channel, tap), padded to a block of 8; ``G`` the output gradient
with its rows widened to the padded input's width by zeros) and one pass that adds each
row of ``D`` into the padded input gradient as a single contiguous run (the tap's offset
in the padded plane): the widened rows line the positions up, so col2im's short row
copies become one long vectorised add per (channel, tap).

Every path here is chosen by shape only (:func:`weight_grad_plan`, :func:`data_grad_plan`);
anything else (strides, dilation, groups, other dtypes, no AVX-512) stays on
:mod:`.conv_images`.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from . import _jobs, microgemm
from . import conv_images as ci
from ._config import JIT_SERIAL
from .conv_columns import JIT_INLINE, at

__all__ = ["data_grad", "data_grad_plan", "weight_grad", "weight_grad_plan"]

_JIT = {**JIT_SERIAL, "nogil": True}
_F, _I = np.float32, np.int64
_TAIL = microgemm.NR  # floats of zeros after the last channels-last copy (wide reads)


def weight_grad_plan(
    dtype: Any, geo: ci.Geometry, groups: int, cin: int, cout: int, kernel: tuple[int, int]
) -> int:
    """The row width (a multiple of 16) that :func:`weight_grad` reads a kernel row's taps
    in, or 0 where :mod:`.conv_images` keeps the weight gradient: float32 on the
    micro-kernel, one group, no dilation along the width, output channels in blocks of 8,
    input channels not in blocks of 16 nor on :mod:`.conv_images`' implicit path (those
    have their own), and at most 1.25x the useful width (6 channels x 5 taps: 30 -> 32).
    One core, 64 images: 6->16 5x5 14x14 0.72 -> 0.35 ms, 6->8 alike 0.57 -> 0.24, 6->16
    5x5 28x28 3.0 -> 1.9."""
    if groups != 1 or geo[5] != 1 or cin % 16 == 0 or cout % microgemm.MR:
        return 0
    if ci._implicit_weight_grad(dtype, cin, cout):  # 8->16 5x5 16x16: 0.95 -> 0.91 ms here
        return 0
    run = kernel[1] * cin
    width = -(-run // 16) * 16
    if 4 * width > 5 * run or not ci._micro(dtype, cout, width):
        return 0
    return width


def weight_grad(
    x: np.ndarray, gy: np.ndarray, geo: ci.Geometry, kernel: tuple[int, int], width: int
) -> np.ndarray:
    """Weight gradient (C_out, C_in, KH, KW) of a one-group convolution, ``width`` from
    :func:`weight_grad_plan`; ``x`` and ``gy`` C-contiguous float32."""
    n, c = x.shape[:2]
    cout, length = gy.shape[1], gy.shape[2] * gy.shape[3]
    kh, kw = kernel
    threads = ci._threads(n, c * kh * kw * length)
    (hp, wpr), taps, pix = ci._pixel_plan(x.shape, geo, kernel, gy.shape[2:])
    toffs = (taps[::kw, None] + pix[None, :]) * c
    size = hp * wpr * c
    flat = np.zeros(threads * size + _TAIL, x.dtype)  # the tail: the last wide reads
    xq = flat[: threads * size].reshape(threads, hp, wpr, c)
    gp = np.empty((threads, cout // microgemm.MR, length, microgemm.MR), x.dtype)
    dwq = np.zeros((threads, 1, kh, cout, width), x.dtype)
    g2 = ci._geometry(geo, kernel)
    chunk = ci._PIXEL_CHUNK

    nhwc = ci.address("nhwc", x.dtype)  # the channels-last copy, a C function

    def block(k: int, lo: int, hi: int) -> None:
        d, q, p = dwq[k], xq[k], gp[k]
        ci._weight_grad_kernel_nhwc(nhwc, x, gy, d, q, p, toffs, g2, 1, chunk, lo, hi)

    args = (nhwc, x, gy, dwq, xq, gp, toffs, g2, 1, chunk)
    ci._run(block, n, threads, ci.conv_jobs.weight_grad_nhwc, args)
    dq = dwq[0]
    for k in range(1, threads):
        dq += dwq[k]
    # (1, KH, C_out, width) -> (C_out, C_in, KH, KW): the first KW * C_in of each row
    dw = dq[0, :, :, : kw * c].reshape(kh, cout, kw, c).transpose(1, 3, 0, 2)
    return np.ascontiguousarray(dw)


def data_grad_plan(
    dtype: Any, w: np.ndarray, geo: ci.Geometry, groups: int, in_shape: tuple[int, ...]
) -> bool:
    """Whether :func:`data_grad` takes a stride-1, one-group input gradient: float32 on the
    micro-kernel, output channels (the product's depth) at least 8, kernels of at least 25
    taps, input channels times taps at most 256 rows of ``D`` per image, and not a shape
    that :mod:`.conv_images` runs as a forward without col2im. One core, 64 images, against
    OpenBLAS + col2im: 6->16 5x5 14x14 0.73 -> 0.56 ms, 3->16 5x5 32x32 pad 2 4.2 -> 2.0,
    6->16 5x5 28x28 2.8 -> 2.3; 3x3 kernels 0.89-1.05x (the widened rows cost more than
    col2im saves), 8->16 3x3 and 5x5 16x16 0.76 / 0.57x against the forward path."""
    cout, cin, kh, kw = w.shape
    return (
        groups == 1
        and geo[0] == 1
        and geo[1] == 1
        and cout >= microgemm.MR
        and kh * kw >= 25
        and cin * kh * kw <= 256
        and ci._micro(dtype, microgemm.MR, microgemm.NR)
        and ci._as_forward(w, geo, groups, in_shape) is None
    )


@numba.jit(**JIT_INLINE)
def _data_grad_kernel(gy, wt, dx, g, d, dxp, geo, lo, hi):  # pragma: no cover - compiled
    """Input gradient of images ``lo:hi``: ``gy[n]`` into ``g`` (C_out, OH rows of WP, the
    columns past OW left zero), then for each block of 8 rows (channel, tap) of ``wt``
    (W^T, zero rows up to a block of 8) ``d = wt[block] @ g`` on the micro-kernel, and each
    row of ``d`` added into the zeroed padded plane ``dxp`` as one run at its tap's offset
    (flat unsigned offsets: with signed ones the add did not vectorise, 0.94 -> 0.42 ms for
    64 images); the interior of ``dxp`` is the image's gradient."""
    ph, pw, dh, dw, kh, kw = geo[2], geo[3], geo[4], geo[5], geo[6], geo[7]
    cout, oh, ow = gy.shape[1], gy.shape[2], gy.shape[3]
    cin, h, w = dx.shape[1], dx.shape[2], dx.shape[3]
    hp, wpr = dxp.shape[1], dxp.shape[2]
    lb, rows, taps = g.shape[1], wt.shape[0], kh * kw
    real = cin * taps
    pf, df, gf = dxp.reshape(-1), d.reshape(-1), g.reshape(-1)
    # past the run only the last row's zero columns (and the plane's end)
    u_run, u_lb, u_ow = np.uint64((oh - 1) * wpr + ow), np.uint64(lb), np.uint64(ow)
    for n in range(lo, hi):
        for co in range(cout):
            for y in range(oh):
                dst, src = np.uint64(co * lb + y * wpr), gy[n, co, y]
                for xx in range(u_ow):
                    gf[dst + xx] = src[xx]
        for p in range(pf.shape[0]):
            pf[p] = 0
        for r0 in range(0, rows, microgemm.MR):
            microgemm.gemm_rows(
                at(wt, r0 * cout), cout, microgemm.MR, cout, at(g, 0), lb,
                at(d, 0), lb, lb, False,
            )  # fmt: skip
            for r in range(r0, min(r0 + microgemm.MR, real)):
                c, t = r // taps, r % taps
                base = np.uint64(c * hp * wpr + (t // kw) * dh * wpr + (t % kw) * dw)
                src = np.uint64(r - r0) * u_lb
                for q in range(u_run):
                    pf[base + q] += df[src + q]
        for c in range(cin):
            for yy in range(h):
                dst, row = dx[n, c, yy], dxp[c, ph + yy]
                for xx in range(w):
                    dst[xx] = row[pw + xx]


@_jobs.inlining(JIT_INLINE)
def _data_grad_job(args, k, lo, hi):  # pragma: no cover - compiled
    """(gy, wt, dx, g, d, dxp, geo): :func:`_data_grad_kernel` on :mod:`._jobs`' workers."""
    p = _jobs.block(args)
    _data_grad_kernel(
        _jobs.view4(p, 0, _F), _jobs.view2(p, 1, _F), _jobs.view4(p, 2, _F),
        _jobs.view3(p, 3, _F)[k], _jobs.view3(p, 4, _F)[k], _jobs.view4(p, 5, _F)[k],
        _jobs.view1(p, 6, _I), lo, hi,
    )  # fmt: skip


def data_grad(
    gy: np.ndarray, w: np.ndarray, geo: ci.Geometry, in_shape: tuple[int, int, int, int]
) -> np.ndarray:
    """Input gradient (``in_shape``, NCHW) of a stride-1, one-group convolution that
    :func:`data_grad_plan` accepts; ``gy`` and ``w`` C-contiguous float32, ``w`` finite
    (the widened columns' zeros meet every weight in the product: an infinite weight would
    put NaN where its taps do not reach; :func:`data_grad_images` checks)."""
    n, cin = in_shape[:2]
    cout, kernel = w.shape[0], (w.shape[2], w.shape[3])
    oh, ow = gy.shape[2], gy.shape[3]
    (hp, wpr), _ = ci._padded_plan(in_shape, geo, kernel, 1, (oh, ow))
    rows = cin * kernel[0] * kernel[1]
    r8 = -(-rows // microgemm.MR) * microgemm.MR
    lb = -(-oh * wpr // 16) * 16
    threads = ci._threads(n, rows * oh * ow)
    wt = np.zeros((r8, cout), gy.dtype)
    wt[:rows] = w.reshape(cout, rows).T
    dx = np.empty(in_shape, gy.dtype)
    g = np.zeros((threads, cout, lb), gy.dtype)
    d = np.empty((threads, microgemm.MR, lb), gy.dtype)
    dxp = np.empty((threads, cin, hp, wpr), gy.dtype)
    g2 = ci._geometry(geo, kernel)

    def block(k: int, lo: int, hi: int) -> None:
        _data_grad_kernel(gy, wt, dx, g[k], d[k], dxp[k], g2, lo, hi)

    args = (gy, wt, dx, g, d, dxp, g2)
    ci._run(block, n, threads, _data_grad_job, args)
    return dx


def weight_grad_images(
    x: np.ndarray, gy: np.ndarray, geo: ci.Geometry, groups: int, kernel: tuple[int, int]
) -> np.ndarray:
    """:func:`.conv_images.conv2d_weight_grad_images`, through :func:`weight_grad` where
    :func:`weight_grad_plan` takes the shape."""
    width = weight_grad_plan(x.dtype, geo, groups, x.shape[1], gy.shape[1], kernel)
    if width:
        return weight_grad(x, gy, geo, kernel, width)
    if runs_plan(x.dtype, geo, groups, x.shape[1], gy.shape[1], kernel) and _finite(x):
        return weight_grad_runs(x, gy, geo, kernel)
    return ci.conv2d_weight_grad_images(x, gy, geo, groups, kernel)


def _finite(a: np.ndarray) -> bool:
    """Whether every value of ``a`` is finite (12 us for LeNet-5's 64x1x32x32 input; a
    float64 sum, 48 us, and a float32 one, 25 us, were slower)."""
    return bool(np.isfinite(a).all())


def data_grad_images(
    gy: np.ndarray, w: np.ndarray, geo: ci.Geometry, groups: int, in_shape: tuple[int, ...]
) -> np.ndarray:
    """:func:`.conv_images.conv2d_data_grad_images`, through :func:`data_grad` where
    :func:`data_grad_plan` takes the shape."""
    if data_grad_plan(gy.dtype, w, geo, groups, in_shape) and _finite(w):
        return data_grad(gy, w, geo, in_shape)
    return ci.conv2d_data_grad_images(gy, w, geo, groups, in_shape)


def runs_plan(
    dtype: Any, geo: ci.Geometry, groups: int, cin: int, cout: int, kernel: tuple[int, int]
) -> bool:
    """Whether :func:`weight_grad_runs` takes a weight gradient: float32, stride 1, one
    group, at most 16 (input, output) channel pairs, 25 to 64 taps, and no micro-kernel
    path of :mod:`.conv_images` or :func:`weight_grad_plan` for it. One core, 64 images,
    against im2col + OpenBLAS (load ~4): LeNet-5's 1->6 5x5 32x32 1.05 -> 0.46 ms; 3x3
    kernels 0.95-1.2x (1->16 28x28, 2->8 16x16), left to OpenBLAS."""
    return (
        dtype == np.float32
        and groups == 1
        and geo[0] == 1
        and geo[1] == 1
        and cin * cout <= 16
        and 25 <= kernel[0] * kernel[1] <= 64
        and not weight_grad_plan(dtype, geo, groups, cin, cout, kernel)
        and not ci._implicit_weight_grad(dtype, cin, cout)
        and not ci._weight_cols_width(dtype, geo, groups, cin, cout, kernel[1])[0]
    )


@numba.jit(**JIT_INLINE)
def _weight_grad_runs_kernel(x, gy, dw, xp, gw, geo, lo, hi):  # pragma: no cover - compiled
    """Weight gradient of images ``lo:hi`` added into ``dw`` (C_out, C_in, KH, KW; this
    thread's sum): ``x[n]`` into the interior of ``xp`` (zero-padded planes, rows of WP),
    ``gy[n]`` into ``gw`` (OH rows of WP, the columns past OW zero), then per (channel,
    tap, output channel) one dot product over the run of OH*WP positions: the tap's input
    run starts at its offset in the padded plane (no im2col, no short rows)."""
    ph, pw, dh, dwl, kh, kw = geo[2], geo[3], geo[4], geo[5], geo[6], geo[7]
    cin, h, w = x.shape[1], x.shape[2], x.shape[3]
    cout, oh, ow = gy.shape[1], gy.shape[2], gy.shape[3]
    hp, wpr, lg = xp.shape[1], xp.shape[2], gw.shape[1]
    xf, gf = xp.reshape(-1), gw.reshape(-1)
    u_run, u_w, u_ow = np.uint64((oh - 1) * wpr + ow), np.uint64(w), np.uint64(ow)
    for n in range(lo, hi):
        for c in range(cin):
            for yy in range(h):
                dst, src = np.uint64((c * hp + ph + yy) * wpr + pw), x[n, c, yy]
                for xx in range(u_w):
                    xf[dst + xx] = src[xx]
        for co in range(cout):
            for y in range(oh):
                dst, src = np.uint64(co * lg + y * wpr), gy[n, co, y]
                for xx in range(u_ow):
                    gf[dst + xx] = src[xx]
        for c in range(cin):
            for i in range(kh):
                for j in range(kw):
                    base = np.uint64((c * hp + i * dh) * wpr + j * dwl)
                    for co in range(0, cout - 1, 2):  # two output channels per input run
                        g0, g1 = np.uint64(co * lg), np.uint64((co + 1) * lg)
                        s0, s1 = np.float32(0), np.float32(0)
                        for q in range(u_run):
                            v = xf[base + q]
                            s0 += gf[g0 + q] * v
                            s1 += gf[g1 + q] * v
                        dw[co, c, i, j] += s0
                        dw[co + 1, c, i, j] += s1
                    if cout % 2:
                        g0 = np.uint64((cout - 1) * lg)
                        s0 = np.float32(0)
                        for q in range(u_run):
                            s0 += gf[g0 + q] * xf[base + q]
                        dw[cout - 1, c, i, j] += s0


@_jobs.inlining(JIT_INLINE)
def _weight_grad_runs_job(args, k, lo, hi):  # pragma: no cover - compiled
    """(x, gy, dw, xp, gw, geo): :func:`_weight_grad_runs_kernel` on :mod:`._jobs`."""
    p = _jobs.block(args)
    _weight_grad_runs_kernel(
        _jobs.view4(p, 0, _F), _jobs.view4(p, 1, _F), _jobs.view5(p, 2, _F)[k],
        _jobs.view4(p, 3, _F)[k], _jobs.view3(p, 4, _F)[k], _jobs.view1(p, 5, _I), lo, hi,
    )  # fmt: skip


def weight_grad_runs(
    x: np.ndarray, gy: np.ndarray, geo: ci.Geometry, kernel: tuple[int, int]
) -> np.ndarray:
    """Weight gradient (C_out, C_in, KH, KW) of a stride-1, one-group convolution that
    :func:`runs_plan` accepts; ``x`` and ``gy`` C-contiguous float32, ``x`` finite (the
    runs also multiply the zero columns of ``gw`` by input values outside the windows:
    :func:`weight_grad_images` checks)."""
    n, c = x.shape[:2]
    cout, oh, ow = gy.shape[1], gy.shape[2], gy.shape[3]
    (hp, wpr), _ = ci._padded_plan(x.shape, geo, kernel, 1, (oh, ow))
    threads = ci._threads(n, c * kernel[0] * kernel[1] * oh * ow)
    xp = np.zeros((threads, c, hp, wpr), x.dtype)
    gw = np.zeros((threads, cout, oh * wpr), x.dtype)
    dw = np.zeros((threads, cout, c, *kernel), x.dtype)
    g2 = ci._geometry(geo, kernel)

    def block(k: int, lo: int, hi: int) -> None:
        _weight_grad_runs_kernel(x, gy, dw[k], xp[k], gw[k], g2, lo, hi)

    ci._run(block, n, threads, _weight_grad_runs_job, (x, gy, dw, xp, gw, g2))
    out = dw[0]
    for k in range(1, threads):
        out += dw[k]
    return out
