"""Gradient per-image convolution kernels (one thread's images ``lo:hi``): the input's
gradient (a GEMM per group, then col2im) and the weight's (im2col, or without it on a
zero-padded or channels-last copy of each image, into this thread's sum). Called and
inlined as the forward kernels are (:mod:`.conv_forward`); col2im, im2col and the
channels-last copy are :mod:`.conv_columns`' C functions, called by address.
"""

from __future__ import annotations

import numba
import numpy as np

from . import microgemm
from .conv_columns import JIT_INLINE, at, native

_ROW, _N, _T = 101, 111, 112  # CBLAS: row-major, no transpose, transpose


@numba.jit(**JIT_INLINE)
def _data_grad_kernel(
    gemm, col2im, gy, w2, dx, dcols, geo, groups, one, zero, lo, hi
):  # pragma: no cover
    """dx[n] = col2im(w2.T @ gy[n]) per group, for images ``lo:hi``."""
    kh, kw, oh, ow = geo[6], geo[7], gy.shape[2], gy.shape[3]
    cout = gy.shape[1]
    cog, kg, length = cout // groups, w2.shape[1], oh * ow
    _, cin, h, w = dx.shape
    from_cols, image = native(col2im), cin * h * w
    sh, sw, ph, pw, dh, dw = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5]
    for n in range(lo, hi):
        for g in range(groups):
            a, b = at(w2, g * cog * kg), at(gy, (n * cout + g * cog) * length)
            c = at(dcols, g * kg * length)
            gemm(_ROW, _T, _N, kg, length, cog, one, a, kg, b, length, zero, c, length)
        from_cols(
            at(dcols, 0), at(dx, n * image), cin, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow
        )


@numba.jit(**JIT_INLINE)
def _weight_grad_kernel(
    gemm, im2col, x, gy, dwt, cols, geo, groups, one, lo, hi
):  # pragma: no cover
    """dwt[g] += cols_g(x[n]) @ gy_g[n].T for images ``lo:hi``; ``dwt`` (G, C_in/G*KH*KW,
    C_out/G) is this thread's sum, transposed: on one core that product ran 1.2-1.6x faster
    than ``gy[n] @ cols.T`` for ResNet-20's shapes (CPU time, single-threaded OpenBLAS)."""
    kh, kw, oh, ow = geo[6], geo[7], gy.shape[2], gy.shape[3]
    cout = gy.shape[1]
    cog, kg, length = cout // groups, dwt.shape[1], oh * ow
    _, cin, h, w = x.shape
    to_cols, image = native(im2col), cin * h * w
    sh, sw, ph, pw, dh, dw = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5]
    for n in range(lo, hi):
        to_cols(at(x, n * image), at(cols, 0), cin, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
        for g in range(groups):
            a, b = at(cols, g * kg * length), at(gy, (n * cout + g * cog) * length)
            c = at(dwt, g * kg * cog)
            gemm(_ROW, _N, _T, kg, cog, length, one, a, length, b, length, one, c, cog)


@numba.jit(**JIT_INLINE)
def _data_grad_kernel_mk(
    gemm, col2im, gy, wpt, w2, dx, dcols, geo, groups, one, zero, lo, hi
):  # pragma: no cover
    """:func:`_data_grad_kernel` with float32 products by the micro-kernel (``wpt`` the
    transposed weights packed per group)."""
    kh, kw, oh, ow = geo[6], geo[7], gy.shape[2], gy.shape[3]
    cout = gy.shape[1]
    cog, kg, length = cout // groups, w2.shape[1], oh * ow
    _, cin, h, w = dx.shape
    from_cols, image = native(col2im), cin * h * w
    sh, sw, ph, pw, dh, dw = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5]
    for n in range(lo, hi):
        for g in range(groups):
            b = at(gy, (n * cout + g * cog) * length)
            c = at(dcols, g * kg * length)
            done = microgemm.gemm_blocks(wpt[g], cog, b, length, c, length, length, False)
            if done < length:
                off, rest = np.uint64(done * 4), length - done
                a = at(w2, g * cog * kg)
                gemm(
                    _ROW, _T, _N, kg, rest, cog, one, a, kg, b + off, length, zero, c + off, length
                )
        from_cols(
            at(dcols, 0), at(dx, n * image), cin, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow
        )


@numba.jit(**JIT_INLINE)
def _weight_grad_kernel_mk(
    gemm, im2col, x, gy, dwt, cols, gyt, geo, groups, one, lo, hi
):  # pragma: no cover
    """:func:`_weight_grad_kernel` with float32 products by the micro-kernel: ``cols`` (the
    image's columns, read in place, K = OH*OW) times ``gy[n]`` transposed into ``gyt`` (OH*OW,
    C_out; 16-64 KB for ResNet-20's layers) so that its rows are the kernel's B rows."""
    kh, kw, oh, ow = geo[6], geo[7], gy.shape[2], gy.shape[3]
    cout = gy.shape[1]
    cog, kg, length = cout // groups, dwt.shape[1], oh * ow
    gf, tf = gy.reshape(-1), gyt.reshape(-1)
    u_len, u_cout = np.uint64(length), np.uint64(cout)
    _, cin, h, w = x.shape
    to_cols, image = native(im2col), cin * h * w
    sh, sw, ph, pw, dh, dw = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5]
    for n in range(lo, hi):
        to_cols(at(x, n * image), at(cols, 0), cin, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
        for co in range(u_cout):
            src = (np.uint64(n) * u_cout + co) * u_len
            for p in range(u_len):
                tf[p * u_cout + co] = gf[src + p]
        for g in range(groups):
            a, b = at(cols, g * kg * length), at(gyt, g * cog)
            c = at(dwt, g * kg * cog)
            done = microgemm.gemm_rows(a, length, kg, length, b, cout, c, cog, cog, True)
            if done < cog:
                off, rest = np.uint64(done * 4), cog - done
                gemm(
                    _ROW, _N, _N, kg, rest, length, one, a, length, b + off, cout, one, c + off, cog
                )


@numba.jit(**JIT_INLINE)
def _weight_grad_kernel_implicit(
    x, gy, dwt, xp, gyt, taps, pix, geo, groups, chunk, lo, hi
):  # pragma: no cover
    """Weight gradient without im2col: each image copied into the interior of ``xp`` (as in
    :func:`_forward_kernel_implicit`), ``gy[n]`` transposed into ``gyt`` (OH*OW, C_out), then
    per group :func:`.microgemm.weight_rows` adds into ``dwt`` (G, KH*KW*C_in/G, C_out/G:
    rows tap-major, this thread's sum)."""
    ph, pw = geo[2], geo[3]
    _, cin, h, w = x.shape
    cout, length = gy.shape[1], gy.shape[2] * gy.shape[3]
    hp, wpr = xp.shape[1], xp.shape[2]
    cig, cog = cin // groups, cout // groups
    gf, tf = gy.reshape(-1), gyt.reshape(-1)
    u_len, u_cout = np.uint64(length), np.uint64(cout)
    for n in range(lo, hi):
        for c in range(cin):
            for yy in range(h):
                row, src = xp[c, ph + yy], x[n, c, yy]
                for xx in range(w):
                    row[pw + xx] = src[xx]
        for co in range(u_cout):
            src = (np.uint64(n) * u_cout + co) * u_len
            for p in range(u_len):
                tf[p * u_cout + co] = gf[src + p]
        for g in range(groups):
            a, b = at(xp, g * cig * hp * wpr), at(gyt, g * cog)
            c_addr = at(dwt, g * dwt.shape[1] * cog)
            microgemm.weight_rows(a, hp * wpr, taps, pix, cig, b, cout, c_addr, cog, chunk)


@numba.jit(**JIT_INLINE)
def _weight_grad_kernel_nhwc(
    nhwc, x, gy, dwq, xq, gp, toffs, geo, groups, chunk, lo, hi
):  # pragma: no cover
    """Weight gradient without im2col, image channels-last: each image copied into the
    interior of ``xq`` (HP, WP, C_in; border zero), ``gy[n]`` packed per group into ``gp``,
    then :func:`.microgemm.weight_cols` adds into ``dwq`` (G, KH*KW, C_out/G, C_in/G), or
    with a kernel row's taps as one run (:func:`_weight_cols_width`) (1, KH, C_out, KW*C_in)."""
    ph, pw = geo[2], geo[3]
    _, cin, h, w = x.shape
    to_nhwc, image = native(nhwc), cin * h * w
    hq, wq = xq.shape[0], xq.shape[1]
    cout, length = gy.shape[1], gy.shape[2] * gy.shape[3]
    cig, cog = cin // groups, cout // groups
    width = dwq.shape[3]
    for n in range(lo, hi):
        to_nhwc(at(x, n * image), at(xq, 0), cin, h, w, hq, wq, ph, pw, 0, 0, 0, 0, 0, 0)
        g2 = gy[n].reshape(cout, length)
        for g in range(groups):
            microgemm.pack_rows(g2[g * cog : (g + 1) * cog], gp)
            c_addr = at(dwq, g * dwq.shape[1] * cog * width)
            microgemm.weight_cols(gp, toffs, at(xq, g * cig), c_addr, width, width, chunk)
