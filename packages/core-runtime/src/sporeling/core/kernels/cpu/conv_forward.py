"""Forward per-image convolution kernels (one thread's images ``lo:hi``), called from
:mod:`.conv_images` for one block and inlined into :mod:`.conv_jobs`' C functions for
several: im2col then a GEMM per group (OpenBLAS, ``gemm``, or the micro-kernel), or, without
im2col, :mod:`.microgemm`'s convolution kernels on a zero-padded or channels-last copy of
each image. im2col and the channels-last copy are C functions called by address
(:mod:`.conv_columns`: ``im2col``/``nhwc`` are those addresses), compiled once.
"""

from __future__ import annotations

import numba
import numpy as np

from . import microgemm
from .conv_columns import JIT_INLINE, at, native

_ROW, _N, _T = 101, 111, 112  # CBLAS: row-major, no transpose, transpose


@numba.jit(**JIT_INLINE)
def _forward_kernel(
    gemm, im2col, x, w2, out, cols, geo, groups, one, zero, lo, hi
):  # pragma: no cover
    """out[n] = w2 @ cols(x[n]) per group, for images ``lo:hi``; ``w2`` (C_out, C_in/G*KH*KW),
    ``out`` (N, C_out, OH, OW), ``cols`` this thread's buffer."""
    kh, kw, oh, ow = geo[6], geo[7], out.shape[2], out.shape[3]
    cout = out.shape[1]
    cog, kg, length = cout // groups, w2.shape[1], oh * ow
    _, cin, h, w = x.shape
    to_cols, image = native(im2col), cin * h * w
    sh, sw, ph, pw, dh, dw = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5]
    for n in range(lo, hi):
        to_cols(at(x, n * image), at(cols, 0), cin, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
        for g in range(groups):
            a, b = at(w2, g * cog * kg), at(cols, g * kg * length)
            c = at(out, (n * cout + g * cog) * length)
            gemm(_ROW, _N, _N, cog, length, kg, one, a, kg, b, length, zero, c, length)


@numba.jit(**JIT_INLINE)
def _forward_kernel_mk(
    gemm, im2col, x, wp, w2, out, cols, geo, groups, one, zero, lo, hi
):  # pragma: no cover
    """:func:`_forward_kernel` with float32 products by the micro-kernel (:mod:`.microgemm`,
    ``wp`` the weights packed per group); columns past the last block of 32 by ``gemm``."""
    kh, kw, oh, ow = geo[6], geo[7], out.shape[2], out.shape[3]
    cout = out.shape[1]
    cog, kg, length = cout // groups, w2.shape[1], oh * ow
    _, cin, h, w = x.shape
    to_cols, image = native(im2col), cin * h * w
    sh, sw, ph, pw, dh, dw = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5]
    for n in range(lo, hi):
        to_cols(at(x, n * image), at(cols, 0), cin, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
        for g in range(groups):
            b, c = at(cols, g * kg * length), at(out, (n * cout + g * cog) * length)
            done = microgemm.gemm_blocks(wp[g], kg, b, length, c, length, length, False)
            if done < length:
                off, rest = np.uint64(done * 4), length - done
                a = at(w2, g * cog * kg)
                gemm(
                    _ROW, _N, _N, cog, rest, kg, one, a, kg, b + off, length, zero, c + off, length
                )


@numba.jit(**JIT_INLINE)
def _forward_kernel_implicit(x, wp, out, xp, rest, offs, geo, groups, lo, hi):  # pragma: no cover
    """Stride-1 forward without im2col: each image copied into the interior of ``xp`` (this
    thread's zero-padded buffer, (C, HP, WP); the border stays zero), then per group
    :func:`.microgemm.conv_rows` reads each block's K input runs from it (``offs``). With
    output channels per group not in blocks of 8 (``wp`` padded with zero rows,
    :func:`_packed`), the last block goes to ``rest`` (8, OH*OW) and its real rows to ``out``."""
    ph, pw = geo[2], geo[3]
    _, cin, h, w = x.shape
    cout, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    hp, wpr = xp.shape[1], xp.shape[2]
    cig, cog = cin // groups, cout // groups
    full, length = cog // microgemm.MR, oh * ow
    for n in range(lo, hi):
        for c in range(cin):
            for yy in range(h):
                row, src = xp[c, ph + yy], x[n, c, yy]
                for xx in range(w):
                    row[pw + xx] = src[xx]
        for g in range(groups):
            b = at(xp, g * cig * hp * wpr)
            c_addr = at(out, (n * cout + g * cog) * length)
            if full == wp.shape[1]:
                microgemm.conv_rows(wp[g], offs, b, wpr, c_addr, length, oh, ow)
                continue
            if full > 0:
                microgemm.conv_rows(wp[g, :full], offs, b, wpr, c_addr, length, oh, ow)
            microgemm.conv_rows(wp[g, full:], offs, b, wpr, at(rest, 0), length, oh, ow)
            o2 = out[n].reshape(cout, length)
            for r in range(cog - full * microgemm.MR):
                # element by element: a row assignment (``o2[i] = rest[r]``) makes Numba
                # compile its shape-mismatch message, ~30 string kernels on a cold cache
                dst, src = o2[g * cog + full * microgemm.MR + r], rest[r]
                for p in range(length):
                    dst[p] = src[p]


@numba.jit(**JIT_INLINE)
def _forward_kernel_flat(x, wp, out, xp, wide, offs, geo, groups, hp, lo, hi):  # pragma: no cover
    """Stride-1 forward of any output width without im2col: each image copied into the
    interior of ``xp`` (this thread's zero-padded planes, (C*HP + tail rows, WP)), then per
    group :func:`.microgemm.conv_rows` takes the OH*WP positions of the padded rows as one
    run (B's row k starts at ``offs[k]`` and is contiguous across rows), into ``wide``
    (C_out/G up to a block of 8, the run up to a block of 32); outputs at the WP - OW
    positions past each row's end are computed and dropped, the rest copied to ``out``."""
    ph, pw = geo[2], geo[3]
    _, cin, h, w = x.shape
    cout, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    wpr, npix = xp.shape[1], wide.shape[1]
    cig, cog = cin // groups, cout // groups
    for n in range(lo, hi):
        for c in range(cin):
            for yy in range(h):
                row, src = xp[c * hp + ph + yy], x[n, c, yy]
                for xx in range(w):
                    row[pw + xx] = src[xx]
        for g in range(groups):
            b = at(xp, g * cig * hp * wpr)
            microgemm.conv_rows(wp[g], offs, b, npix, at(wide, 0), npix, 1, npix)
            for r in range(cog):
                dst, src = out[n, g * cog + r], wide[r]
                for y in range(oh):
                    for xx in range(ow):
                        dst[y, xx] = src[y * wpr + xx]


@numba.jit(**JIT_INLINE)
def _forward_kernel_pixels(nhwc, x, wk, out, xq, ct, koffs, geo, kc, lo, hi):  # pragma: no cover
    """Forward without im2col, image channels-last (one group, any stride): each image
    copied into the interior of ``xq`` (HP, WP, C_in; border zero), then
    :func:`.microgemm.conv_pixels` writes its output pixels by channels into ``ct``
    (OH*OW, C_out), copied transposed into ``out[n]``; ``wk`` the weights as (K, C_out)."""
    sh, sw, ph, pw = geo[0], geo[1], geo[2], geo[3]
    _, cin, h, w = x.shape
    to_nhwc, image = native(nhwc), cin * h * w
    hq, wq = xq.shape[0], xq.shape[1]
    cout, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    length = oh * ow
    for n in range(lo, hi):
        to_nhwc(at(x, n * image), at(xq, 0), cin, h, w, hq, wq, ph, pw, 0, 0, 0, 0, 0, 0)
        microgemm.conv_pixels(
            at(xq, 0), koffs, at(wk, 0), at(ct, 0), cout, oh, ow, sh, sw, xq.shape[1], cin, kc
        )
        o2 = out[n].reshape(cout, length)
        for co in range(cout):
            dst2 = o2[co]
            for p in range(length):
                dst2[p] = ct[p, co]
