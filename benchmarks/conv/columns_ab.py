"""Steady-state check of im2col/col2im called by address (session 9, ``conv_columns``),
in one process on one thread: each per-image kernel that calls them (forward, weight and
input gradients, the OpenBLAS variants) against a copy built here the way it was before,
calling an ``njit`` im2col/col2im compiled on its own and linked in; same data, the two
alternating, thread CPU seconds per call (min and median of R calls).

    python benchmarks/conv/columns_ab.py [R]
"""

import sys
import time
from functools import partial

import numba
import numpy as np

from sporeling.core.kernels.cpu import conv_backward as cb
from sporeling.core.kernels.cpu import conv_columns as cc
from sporeling.core.kernels.cpu import conv_forward as cf
from sporeling.core.kernels.cpu import conv_images as ci
from sporeling.core.kernels.cpu.gemm_bias import _cblas

flags = {k: v for k, v in cc.JIT.items() if k != "cache"}
im2col = numba.jit(**flags)(cc._im2col_image.py_func)
col2im = numba.jit(**flags)(cc._col2im_image.py_func)
at = cc.at
_ROW, _N, _T = 101, 111, 112


@numba.jit(**flags)
def old_forward(gemm, x, w2, out, cols, geo, groups, one, zero, lo, hi):  # pragma: no cover
    kh, kw, oh, ow = geo[6], geo[7], out.shape[2], out.shape[3]
    cout = out.shape[1]
    cog, kg, length = cout // groups, w2.shape[1], oh * ow
    for n in range(lo, hi):
        im2col(x, n, cols, kh, kw, geo[0], geo[1], geo[2], geo[3], geo[4], geo[5], oh, ow)
        for g in range(groups):
            a, b = at(w2, g * cog * kg), at(cols, g * kg * length)
            c = at(out, (n * cout + g * cog) * length)
            gemm(_ROW, _N, _N, cog, length, kg, one, a, kg, b, length, zero, c, length)


@numba.jit(**flags)
def old_weight_grad(gemm, x, gy, dwt, cols, geo, groups, one, lo, hi):  # pragma: no cover
    kh, kw, oh, ow = geo[6], geo[7], gy.shape[2], gy.shape[3]
    cout = gy.shape[1]
    cog, kg, length = cout // groups, dwt.shape[1], oh * ow
    for n in range(lo, hi):
        im2col(x, n, cols, kh, kw, geo[0], geo[1], geo[2], geo[3], geo[4], geo[5], oh, ow)
        for g in range(groups):
            a, b = at(cols, g * kg * length), at(gy, (n * cout + g * cog) * length)
            c = at(dwt, g * kg * cog)
            gemm(_ROW, _N, _T, kg, cog, length, one, a, length, b, length, one, c, cog)


@numba.jit(**flags)
def old_data_grad(gemm, gy, w2, dx, dcols, geo, groups, one, zero, lo, hi):  # pragma: no cover
    kh, kw, oh, ow = geo[6], geo[7], gy.shape[2], gy.shape[3]
    cout = gy.shape[1]
    cog, kg, length = cout // groups, w2.shape[1], oh * ow
    for n in range(lo, hi):
        for g in range(groups):
            a, b = at(w2, g * cog * kg), at(gy, (n * cout + g * cog) * length)
            c = at(dcols, g * kg * length)
            gemm(_ROW, _T, _N, kg, length, cog, one, a, kg, b, length, zero, c, length)
        col2im(dcols, dx, n, kh, kw, geo[0], geo[1], geo[2], geo[3], geo[4], geo[5], oh, ow)


R = int(sys.argv[1]) if len(sys.argv) > 1 else 200
numba.set_num_threads(1)
rng = np.random.default_rng(0)
gemm = _cblas("s")
i2c, c2i = cc.address("im2col", np.float32), cc.address("col2im", np.float32)
one, zero = np.float32(1), np.float32(0)
# LeNet-5's two layers, ResNet-20's 16->16 32x32 and 32->32 16x16 (pad 1), batch 64
for n, c, h, co, k, p in ((64, 1, 32, 6, 5, 0), (64, 6, 14, 16, 5, 0), (64, 16, 32, 16, 3, 1),
                          (64, 32, 16, 32, 3, 1)):  # fmt: skip
    x = rng.standard_normal((n, c, h, h), dtype=np.float32)
    w2 = rng.standard_normal((co, c * k * k), dtype=np.float32)
    oh = h + 2 * p - k + 1
    out = np.empty((n, co, oh, oh), np.float32)
    gy = rng.standard_normal(out.shape, dtype=np.float32)
    cols = np.empty((c * k * k, oh * oh), np.float32)
    dwt = np.zeros((1, c * k * k, co), np.float32)
    dx = np.empty_like(x)
    g2 = ci._geometry((1, 1, p, p, 1, 1), (k, k))
    pairs = {
        "forward": (
            partial(old_forward, gemm, x, w2, out, cols, g2, 1, one, zero, 0, n),
            partial(cf._forward_kernel, gemm, i2c, x, w2, out, cols, g2, 1, one, zero, 0, n),
        ),
        "weight_grad": (
            partial(old_weight_grad, gemm, x, gy, dwt, cols, g2, 1, one, 0, n),
            partial(cb._weight_grad_kernel, gemm, i2c, x, gy, dwt, cols, g2, 1, one, 0, n),
        ),
        "data_grad": (
            partial(old_data_grad, gemm, gy, w2, dx, cols, g2, 1, one, zero, 0, n),
            partial(cb._data_grad_kernel, gemm, c2i, gy, w2, dx, cols, g2, 1, one, zero, 0, n),
        ),
    }
    for name, (old, new) in pairs.items():
        old(), new()  # compile
        res = {"old": [], "new": []}
        for _ in range(R):
            for side, fn in (("old", old), ("new", new)):
                t0 = time.thread_time()
                fn()
                res[side].append(time.thread_time() - t0)
        o, nw = sorted(res["old"]), sorted(res["new"])
        print(
            f"{c}->{co} {h}x{h} k{k} {name:12s} old min {o[0] * 1e3:.3f} med {o[R // 2] * 1e3:.3f}"
            f" | new min {nw[0] * 1e3:.3f} med {nw[R // 2] * 1e3:.3f} | new/old min"
            f" {nw[0] / o[0]:.3f} med {nw[R // 2] / o[R // 2]:.3f}",
            flush=True,
        )
