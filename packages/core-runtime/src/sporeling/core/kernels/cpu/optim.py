"""Fused Numba update kernels for the optimizers in :mod:`sporeling.core.nn.optim`.

Each kernel updates every parameter of one flat buffer (one dtype, one device) in a single
call. The buffer holds the parameters back to back; ``off`` (uint64, ``n + 1`` entries) marks
where parameter ``s`` starts and ends (unsigned, so that ``range(off[s], off[s + 1])`` yields
indices Numba need not check for negatives: with int64 offsets each access carried a
wrap-around select and every loop became gathers and scatters, AdamW 8.7 ms -> 1.6 ms for
3.7M float32 parameters), and ``lr[s]``/``wd[s]`` are that parameter's learning
rate and (already filtered) weight decay, so parameter groups with different rates share the
call. ``g`` is the flat gradient buffer; ``inv_scale`` is ``1 / loss_scale``.

Callers pass ``lr``/``wd`` and every scalar in the buffer's dtype, and complements such as
``1 - beta1`` precomputed (``omb1``): a float64 literal or scalar would promote the whole loop
to float64 and stop it vectorizing (float32 momentum: 1.6 ms -> 0.47 ms for 0.6M elements).
Loop-invariant flags select one of two loops so each inner loop is branch-free.

The element-wise rules (all but LAMB's per-parameter trust ratio and the row kernels) run on
blocks of the flat buffer across threads through :func:`on_blocks`: clipping ``off`` to a
block's element range leaves every segment outside it empty, so the kernels need no change.

The xp-generic reference of every rule is in :mod:`sporeling.core.nn.optim._updates`;
``tests/nn/test_optim.py::test_fused_matches_generic`` holds the two together.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np

from . import _rows
from ._config import JIT_SERIAL
from ._rows import n_blocks, run_blocks
from .vecmath import wide_vectors

__all__ = [
    "on_blocks",
    "sgd_kernel",
    "momentum_kernel",
    "adam_kernel",
    "adam_weight_decay_kernel",
    "adamw_kernel",
    "lamb_kernel",
    "adagrad_kernel",
    "rmsprop_kernel",
    "ftrl_kernel",
    "lazy_adam_rows_kernel",
    "ftrl_rows_kernel",
]

_JIT = {**JIT_SERIAL, "nogil": True}  # blocks of a buffer run on several threads


#: an update is split over threads from this many times :data:`._rows.PARALLEL_MIN`
#: elements: its loop is a few flops per element, so a hand-off (~100 us on a VM) pays later
#: than for a row kernel. Momentum over 401k float32 parameters (the MLP's first layer) took
#: 173-191 us on one thread and 303-354 us as two blocks, even right after a 2-thread GEMM;
#: 1M: 479-542 vs 616-757 us; 2M: 1.27-1.46 vs 1.20-1.31 ms (min of 300, load 9-13)
UPDATE_SPLIT_FACTOR = 4


def on_blocks(off: np.ndarray, run: Callable[[np.ndarray], object]) -> None:
    """Call an element-wise update ``run(off_block)`` once per block of the flat buffer that
    ``off`` segments, the blocks on Sporeling's threads (small buffers: one call)."""
    total = int(off[-1])
    blocks = n_blocks(total, total) if total >= UPDATE_SPLIT_FACTOR * _rows.PARALLEL_MIN else 1
    if blocks <= 1:
        run(off)
        return
    run_blocks(lambda _k, lo, hi: run(np.clip(off, lo, hi)), total, blocks)


@numba.njit(**_JIT)
def sgd_kernel(
    p, g, accum, stat, off, lr, wd, inv_scale, momentum, omd, nesterov
):  # pragma: no cover
    wide_vectors()
    for s in range(off.shape[0] - 1):
        lr_s = lr[s]
        wd_s = wd[s]
        for i in range(off[s], off[s + 1]):
            gi = g[i] * inv_scale
            gi += p[i] * wd_s
            if momentum > 0.0:
                if stat[i] > 0:  # first step: the accumulator starts at the gradient
                    a = gi
                    stat[i] = 0
                else:
                    a = accum[i] * momentum + omd * gi
                accum[i] = a
                if nesterov:
                    gi += a * momentum
                else:
                    gi = a
            p[i] -= lr_s * gi


@numba.njit(**_JIT)
def momentum_kernel(p, g, moments, off, lr, wd, inv_scale, momentum, nesterov):  # pragma: no cover
    wide_vectors()
    for s in range(off.shape[0] - 1):
        lr_s = lr[s]
        wd_s = wd[s]
        if nesterov:
            for i in range(off[s], off[s + 1]):
                gi = g[i] * inv_scale + wd_s * p[i]
                a = moments[i] * momentum + gi
                moments[i] = a
                p[i] -= lr_s * (gi + a * momentum)
        else:
            for i in range(off[s], off[s + 1]):
                gi = g[i] * inv_scale + wd_s * p[i]
                a = moments[i] * momentum + gi
                moments[i] = a
                p[i] -= lr_s * a


@numba.njit(**_JIT)
def adam_kernel(
    p, g, m, v, off, segs, lr, wd, inv_scale, beta1, omb1, omb2, eps, nesterov
):  # pragma: no cover
    wide_vectors()
    # lr[s] already carries the bias correction sqrt(1 - beta2^t) / (1 - beta1^t); only the
    # parameters listed in segs are updated (LazyAdam leaves row-sparse ones to the rows kernel).
    for s in segs:
        lr_s = lr[s]
        wd_s = wd[s]
        if nesterov:
            for i in range(off[s], off[s + 1]):
                gi = g[i] * inv_scale + wd_s * p[i]
                mi = m[i] + omb1 * (gi - m[i])
                vi = v[i] + omb2 * (gi * gi - v[i])
                m[i] = mi
                v[i] = vi
                p[i] -= lr_s * (mi * beta1 + omb1 * gi) / (math.sqrt(vi) + eps)
        else:
            for i in range(off[s], off[s + 1]):
                gi = g[i] * inv_scale + wd_s * p[i]
                mi = m[i] + omb1 * (gi - m[i])
                vi = v[i] + omb2 * (gi * gi - v[i])
                m[i] = mi
                v[i] = vi
                p[i] -= lr_s * mi / (math.sqrt(vi) + eps)


@numba.njit(**_JIT)
def adam_weight_decay_kernel(
    p, g, m, v, off, lr, wd, beta1, omb1, beta2, omb2, eps
):  # pragma: no cover
    wide_vectors()
    for s in range(off.shape[0] - 1):
        lr_s = lr[s]
        wd_s = wd[s]
        for i in range(off[s], off[s + 1]):
            gi = g[i]
            mi = beta1 * m[i] + omb1 * gi
            vi = beta2 * v[i] + omb2 * gi * gi
            m[i] = mi
            v[i] = vi
            p[i] -= lr_s * (mi / (math.sqrt(vi) + eps) + wd_s * p[i])


@numba.njit(**_JIT)
def adamw_kernel(
    p, g, m, v, off, shrink, step, beta1, omb1, beta2, omb2, eps, sbc2
):  # pragma: no cover
    wide_vectors()
    # Decoupled decay first, then the bias-corrected Adam step (PyTorch/MindSpore 2.x AdamW).
    # shrink[s] = 1 - lr * wd, step[s] = lr / (1 - beta1^t), sbc2 = sqrt(1 - beta2^t).
    for s in range(off.shape[0] - 1):
        sh = shrink[s]
        st = step[s]
        for i in range(off[s], off[s + 1]):
            gi = g[i]
            mi = beta1 * m[i] + omb1 * gi
            vi = beta2 * v[i] + omb2 * gi * gi
            m[i] = mi
            v[i] = vi
            p[i] = p[i] * sh - st * mi / (math.sqrt(vi) / sbc2 + eps)


@numba.njit(**_JIT)
def lamb_kernel(p, g, m, v, off, lr, wd, beta1, beta2, eps, bc1, bc2):  # pragma: no cover
    wide_vectors()
    # Two passes per parameter: moments + update direction (kept in g) and the two norms,
    # then the step scaled by the layer-wise trust ratio ||w|| / ||update||.
    for s in range(off.shape[0] - 1):
        wd_s = wd[s]
        w_sq = 0.0
        u_sq = 0.0
        for i in range(off[s], off[s + 1]):
            gi = g[i]
            mi = beta1 * m[i] + (1.0 - beta1) * gi
            vi = beta2 * v[i] + (1.0 - beta2) * gi * gi
            m[i] = mi
            v[i] = vi
            pi = p[i]
            u = (mi / bc1) / (math.sqrt(vi / bc2) + eps) + wd_s * pi
            g[i] = u
            w_sq += pi * pi
            u_sq += u * u
        ratio = 1.0
        if w_sq > 0.0 and u_sq > 0.0:
            ratio = math.sqrt(w_sq) / math.sqrt(u_sq)
        step = lr[s] * ratio
        for i in range(off[s], off[s + 1]):
            p[i] -= step * g[i]


@numba.njit(**_JIT)
def adagrad_kernel(p, g, accum, off, lr, wd, inv_scale, update_slots):  # pragma: no cover
    wide_vectors()
    for s in range(off.shape[0] - 1):
        lr_s = lr[s]
        wd_s = wd[s]
        for i in range(off[s], off[s + 1]):
            gi = g[i] * inv_scale + wd_s * p[i]
            a = accum[i]
            if update_slots:
                a += gi * gi
                accum[i] = a
            p[i] -= lr_s * gi / math.sqrt(a)


@numba.njit(**_JIT)
def rmsprop_kernel(
    p, g, ms, mom, mg, off, lr, wd, inv_scale, omd, momentum, eps, centered
):  # pragma: no cover
    wide_vectors()
    for s in range(off.shape[0] - 1):
        lr_s = lr[s]
        wd_s = wd[s]
        for i in range(off[s], off[s + 1]):
            gi = g[i] * inv_scale + wd_s * p[i]
            msi = ms[i] + omd * (gi * gi - ms[i])
            ms[i] = msi
            if centered:
                mgi = mg[i] + omd * (gi - mg[i])
                mg[i] = mgi
                denom = msi - mgi * mgi + eps
            else:
                denom = msi + eps
            mo = momentum * mom[i] + lr_s * gi / math.sqrt(denom)
            mom[i] = mo
            p[i] -= mo


@numba.njit(**_JIT)
def _ftrl_one(var, gi, accum, linear, lr, l1, l2, lr_power):  # pragma: no cover
    a_new = accum + gi * gi
    if lr_power == -0.5:
        pow_new = math.sqrt(a_new)
        pow_old = math.sqrt(accum)
    else:
        pow_new = a_new ** (-lr_power)
        pow_old = accum ** (-lr_power)
    lin = linear + gi - (pow_new - pow_old) / lr * var
    if abs(lin) > l1:
        sign = 1.0 if lin > 0 else -1.0
        var = (sign * l1 - lin) / (pow_new / lr + 2.0 * l2)
    else:
        var = 0.0
    return var, a_new, lin


@numba.njit(**_JIT)
def ftrl_kernel(
    p, g, accum, linear, off, segs, lr, wd, inv_scale, l1, l2, lr_power
):  # pragma: no cover
    for s in segs:
        lr_s = lr[s]
        wd_s = wd[s]
        for i in range(off[s], off[s + 1]):
            gi = g[i] * inv_scale + wd_s * p[i]
            var, a, lin = _ftrl_one(p[i], gi, accum[i], linear[i], lr_s, l1, l2, lr_power)
            p[i] = var
            accum[i] = a
            linear[i] = lin


@numba.njit(**_JIT)
def lazy_adam_rows_kernel(
    p, m, v, rows, vals, lr, wd, inv_scale, beta1, omb1, omb2, eps, nesterov
):  # pragma: no cover
    # p, m, v: (n_rows, row_size) views; rows: unique row indices; vals: (len(rows), row_size).
    for r in range(rows.shape[0]):
        row = rows[r]
        for j in range(p.shape[1]):
            gi = vals[r, j] * inv_scale + wd * p[row, j]
            mi = m[row, j] + omb1 * (gi - m[row, j])
            vi = v[row, j] + omb2 * (gi * gi - v[row, j])
            m[row, j] = mi
            v[row, j] = vi
            if nesterov:
                p[row, j] -= lr * (mi * beta1 + omb1 * gi) / (math.sqrt(vi) + eps)
            else:
                p[row, j] -= lr * mi / (math.sqrt(vi) + eps)


@numba.njit(**_JIT)
def ftrl_rows_kernel(
    p, accum, linear, rows, vals, lr, wd, inv_scale, l1, l2, lr_power
):  # pragma: no cover
    for r in range(rows.shape[0]):
        row = rows[r]
        for j in range(p.shape[1]):
            gi = vals[r, j] * inv_scale + wd * p[row, j]
            var, a, lin = _ftrl_one(
                p[row, j], gi, accum[row, j], linear[row, j], lr, l1, l2, lr_power
            )
            p[row, j] = var
            accum[row, j] = a
            linear[row, j] = lin
