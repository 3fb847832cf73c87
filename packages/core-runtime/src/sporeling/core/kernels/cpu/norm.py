"""Numba kernels for layer normalization and batch normalization, forward and backward.

Layer norm works on rows: ``x`` viewed as ``(M, N)`` with the normalized axes flattened
last, ``gamma``/``beta`` as ``(1, N)`` rows. Batch norm works on ``(B, C, L)`` views and
normalizes each channel over ``B * L`` values. Statistics are accumulated in float64 with
two passes (mean, then squared deviations), so inputs with a large common offset keep
their variance (``test_activation.py::test_norm_kernels_large_offset``). The backward
kernels also take the cotangents of the mean and variance outputs, so a single kernel
serves every use of the forward outputs.

Inputs are float32 or float64 and C-contiguous (callers convert float16 to float32).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from . import _jobs
from ._alloc import empty_apart
from ._config import JIT_SERIAL
from ._jobs import block as _block
from ._jobs import real, view1, view3
from ._rows import n_blocks, run_blocks
from .vecmath import wide_vectors

_JIT = {**JIT_SERIAL, "nogil": True}  # row blocks run on several threads (see _rows)
#: kernels with a job (:mod:`._jobs`): inlined into its cfunc, compiled with their flags
_JIT_INLINE = {**_JIT, "inline": "always"}

__all__ = [
    "layer_norm_forward",
    "layer_norm_backward",
    "batch_norm_forward",
    "batch_norm_backward",
    "batch_norm_infer",
]


# ---- layer norm ---------------------------------------------------------------------


@numba.jit(**JIT_SERIAL)
def _ln_row_stats(x):  # pragma: no cover - compiled
    n = x.shape[0]
    s = 0.0
    for j in range(n):
        s += x[j]
    mean = s / n
    v = 0.0
    for j in range(n):
        d = x[j] - mean
        v += d * d
    return mean, v / n


@numba.jit(**_JIT)
def _layer_norm_fwd_kernel(lo, hi, x2, gamma, beta, eps, y2, mean, var):  # pragma: no cover
    wide_vectors()
    for i in range(lo, hi):
        x = x2[i]
        mu, v = _ln_row_stats(x)
        rstd = 1.0 / math.sqrt(v + eps)
        for j in range(x.shape[0]):
            y2[i, j] = (x[j] - mu) * rstd * gamma[j] + beta[j]
        mean[i] = mu
        var[i] = v


@numba.jit(**_JIT)
def _layer_norm_bwd_kernel(
    lo, hi, gy2, gmean, gvar, x2, gamma, mean, var, eps, dx2, dgamma, dbeta
):  # pragma: no cover - compiled
    wide_vectors()
    n = x2.shape[1]
    for i in range(lo, hi):
        mu = mean[i]
        rstd = 1.0 / math.sqrt(var[i] + eps)
        a = 0.0  # sum(dxhat)
        b = 0.0  # sum(dxhat * xhat)
        for j in range(n):
            xhat = (x2[i, j] - mu) * rstd
            g = gy2[i, j]
            dxh = g * gamma[j]
            a += dxh
            b += dxh * xhat
            dgamma[j] += g * xhat
            dbeta[j] += g
        a /= n
        b /= n
        gm = gmean[i] / n
        gv = 2.0 * gvar[i] / n
        for j in range(n):
            d = x2[i, j] - mu
            xhat = d * rstd
            dxh = gy2[i, j] * gamma[j]
            dx2[i, j] = rstd * (dxh - a - xhat * b) + gm + gv * d


def layer_norm_forward(
    x2: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normalize each row of ``x2`` (M, N); returns ``(y, mean, var)`` (biased variance)."""
    y = np.empty_like(x2)
    mean = np.empty(x2.shape[0], x2.dtype)
    var = np.empty(x2.shape[0], x2.dtype)
    run_blocks(
        lambda _, lo, hi: _layer_norm_fwd_kernel(lo, hi, x2, gamma, beta, eps, y, mean, var),
        x2.shape[0],
        n_blocks(x2.shape[0], x2.size),
    )
    return y, mean, var


def layer_norm_backward(
    gy2: np.ndarray,
    gmean: np.ndarray,
    gvar: np.ndarray,
    x2: np.ndarray,
    gamma: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    eps: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients ``(dx, dgamma, dbeta)`` of a row layer norm (rows of length N)."""
    dx = np.empty_like(x2)
    acc = np.float64 if x2.dtype == np.float32 else x2.dtype
    blocks = n_blocks(x2.shape[0], x2.size)
    dgamma = np.zeros((blocks, x2.shape[1]), acc)  # one partial sum per row block
    dbeta = np.zeros((blocks, x2.shape[1]), acc)

    def block(k: int, lo: int, hi: int) -> None:
        _layer_norm_bwd_kernel(
            lo, hi, gy2, gmean, gvar, x2, gamma, mean, var, eps, dx, dgamma[k], dbeta[k]
        )

    run_blocks(block, x2.shape[0], blocks)
    return dx, dgamma.sum(axis=0), dbeta.sum(axis=0)


# ---- batch norm ---------------------------------------------------------------------


@numba.jit(**_JIT_INLINE)
def _batch_norm_fwd_kernel(lo, hi, x3, w, b, eps, y3, mean, var, relu, zero):  # pragma: no cover
    """Channels ``lo:hi`` (each channel's statistics and output are its own); ``relu``:
    the output is ``maximum(y, 0)`` (``zero``, the dtype's 0), written in the same pass."""
    wide_vectors()
    nb, _, nl = x3.shape
    cnt = nb * nl
    for c in range(lo, hi):
        s = 0.0
        for i in range(nb):
            for k in range(nl):
                s += x3[i, c, k]
        mu = s / cnt
        v = 0.0
        for i in range(nb):
            for k in range(nl):
                d = x3[i, c, k] - mu
                v += d * d
        v /= cnt
        scale = w[c] / math.sqrt(v + eps)
        shift = b[c] - mu * scale
        if relu:  # NumPy's maximum(y, 0): y where y > 0 or NaN, else +0.0
            for i in range(nb):
                for k in range(nl):
                    y = x3[i, c, k] * scale + shift
                    y3[i, c, k] = y if not y <= 0 else zero
        else:
            for i in range(nb):
                for k in range(nl):
                    y3[i, c, k] = x3[i, c, k] * scale + shift
        mean[c] = mu
        var[c] = v


@numba.jit(**_JIT_INLINE)
def _batch_norm_bwd_kernel(
    lo, hi, gy3, gmean, gvar, x3, w, mean, var, eps, dx3, dw, db, z3, zero
):  # pragma: no cover - compiled
    """Channels ``lo:hi``. With ``z3`` (not None: the output of a batch norm + ReLU),
    ``gy3`` is the ReLU's cotangent and counts only where ``z3 > 0`` (ReLU's gradient
    read in both passes instead of written and read again)."""
    wide_vectors()
    nb, _, nl = x3.shape
    cnt = nb * nl
    for c in range(lo, hi):
        mu = mean[c]
        rstd = 1.0 / math.sqrt(var[c] + eps)
        sg = 0.0  # sum(gy)
        sgx = 0.0  # sum(gy * xhat)
        for i in range(nb):
            for k in range(nl):
                g = gy3[i, c, k]
                if z3 is not None and not z3[i, c, k] > 0:
                    g = zero
                sg += g
                sgx += g * (x3[i, c, k] - mu) * rstd
        dw[c] = sgx
        db[c] = sg
        a = sg / cnt
        bq = sgx / cnt
        wr = w[c] * rstd
        gm = gmean[c] / cnt
        gv = 2.0 * gvar[c] / cnt
        for i in range(nb):
            for k in range(nl):
                d = x3[i, c, k] - mu
                g = gy3[i, c, k]
                if z3 is not None and not z3[i, c, k] > 0:
                    g = zero
                dx3[i, c, k] = wr * (g - a - d * rstd * bq) + gm + gv * d


@_jobs.inlining(_JIT_INLINE)
def _bn_fwd_job(args, k, lo, hi):  # pragma: no cover - compiled
    """(x3, w, b, eps, y3, mean, var, relu as 0.0 / 1.0), float32, for :mod:`._jobs`."""
    p = _block(args)
    f = np.float32
    _batch_norm_fwd_kernel(
        lo, hi, view3(p, 0, f), view1(p, 1, f), view1(p, 2, f), real(p, 3),
        view3(p, 4, f), view1(p, 5, f), view1(p, 6, f), real(p, 7) != 0.0, f(0.0),
    )  # fmt: skip


@_jobs.inlining(_JIT_INLINE)
def _bn_bwd_job(args, k, lo, hi):  # pragma: no cover - compiled
    """(gy3, gmean, gvar, x3, w, mean, var, eps, dx3, dw, db), float32, for :mod:`._jobs`."""
    p = _block(args)
    f = np.float32
    _batch_norm_bwd_kernel(
        lo, hi, view3(p, 0, f), view1(p, 1, f), view1(p, 2, f), view3(p, 3, f),
        view1(p, 4, f), view1(p, 5, f), view1(p, 6, f), real(p, 7), view3(p, 8, f),
        view1(p, 9, f), view1(p, 10, f), None, f(0.0),
    )  # fmt: skip


@_jobs.inlining(_JIT_INLINE)
def _bn_relu_bwd_job(args, k, lo, hi):  # pragma: no cover - compiled
    """:func:`_bn_bwd_job`'s arguments, then z3 (the batch norm + ReLU's output)."""
    p = _block(args)
    f = np.float32
    _batch_norm_bwd_kernel(
        lo, hi, view3(p, 0, f), view1(p, 1, f), view1(p, 2, f), view3(p, 3, f),
        view1(p, 4, f), view1(p, 5, f), view1(p, 6, f), real(p, 7), view3(p, 8, f),
        view1(p, 9, f), view1(p, 10, f), view3(p, 11, f), f(0.0),
    )  # fmt: skip


def _native(arrays: tuple[np.ndarray, ...], blocks: int) -> bool:
    """Whether a batch-norm kernel runs on :mod:`._jobs` (several blocks, every array
    float32 and C-contiguous, as its wrapper reads them)."""
    return (
        blocks > 1
        and _jobs.available()
        and all(a.dtype == np.float32 and a.flags.c_contiguous for a in arrays)
    )


def batch_norm_forward(
    x3: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float, relu: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normalize each channel of ``x3`` (B, C, L); returns ``(y, mean, var)`` (biased),
    ``y`` through a ReLU if ``relu`` (bit-equal to NumPy's ``maximum(y, 0)`` after it).
    Large inputs run blocks of channels on several threads (:mod:`._rows`): serial, batch
    norm was the one ResNet-20 step kernel left on one core."""
    y = np.empty_like(x3)
    mean = np.empty(x3.shape[1], x3.dtype)
    var = np.empty(x3.shape[1], x3.dtype)

    blocks = n_blocks(x3.shape[1], x3.size)
    if _native((x3, w, b, y, mean, var), blocks):
        args = _jobs.pack(x3, w, b, float(eps), y, mean, var, float(relu))
        _jobs.run(_jobs.job(_bn_fwd_job), args, x3.shape[1], blocks)
        return y, mean, var

    def block(_k: int, lo: int, hi: int) -> None:
        _batch_norm_fwd_kernel(lo, hi, x3, w, b, eps, y, mean, var, relu, x3.dtype.type(0))

    run_blocks(block, x3.shape[1], blocks)
    return y, mean, var


def batch_norm_backward(
    gy3: np.ndarray,
    gmean: np.ndarray,
    gvar: np.ndarray,
    x3: np.ndarray,
    w: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    eps: float,
    z3: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients ``(dx, dweight, dbias)`` of training-mode batch norm over (B, C, L); with
    ``z3`` (the batch norm + ReLU's output), of the two together, ``gy3`` then being the
    ReLU's cotangent (bit-equal to ``where(z3 > 0, gy3, 0)`` handed to the batch norm's)."""
    dx = np.empty_like(x3)
    dw = np.empty(x3.shape[1], x3.dtype)
    db = np.empty(x3.shape[1], x3.dtype)

    blocks = n_blocks(x3.shape[1], x3.size)
    arrays = (gy3, gmean, gvar, x3, w, mean, var)
    masks = () if z3 is None else (z3,)
    if _native((*arrays, dx, dw, db, *masks), blocks):
        args = _jobs.pack(*arrays, float(eps), dx, dw, db, *masks)
        fn = _bn_bwd_job if z3 is None else _bn_relu_bwd_job
        _jobs.run(_jobs.job(fn), args, x3.shape[1], blocks)
        return dx, dw, db

    def block(_k: int, lo: int, hi: int) -> None:
        _batch_norm_bwd_kernel(
            lo, hi, gy3, gmean, gvar, x3, w, mean, var, eps, dx, dw, db, z3, x3.dtype.type(0)
        )

    run_blocks(block, x3.shape[1], blocks)
    return dx, dw, db


# ---- batch norm with given statistics (inference) -------------------------------------


@numba.jit(**_JIT)
def _batch_norm_infer_kernel(x2, mean, scale, bias, y2, lo, hi):  # pragma: no cover
    """Rows ``lo:hi`` of the (B*C, L) view: ``y = (x - mean[c]) * scale[c] + bias[c]``."""
    wide_vectors()
    n_ch = mean.shape[0]
    n = numba.uint64(x2.shape[1])
    for r in range(lo, hi):
        c = r % n_ch
        m, s, b = mean[c], scale[c], bias[c]
        x, y = x2[r], y2[r]
        for k in range(n):
            y[k] = (x[k] - m) * s + b


def batch_norm_infer(
    x3: np.ndarray, mean: np.ndarray, scale: np.ndarray, bias: np.ndarray
) -> np.ndarray:
    """``(x - mean) * scale + bias`` per channel of ``x3`` (B, C, L), in one pass and in
    ``x3``'s dtype (C-contiguous float32/float64; the per-channel vectors of that dtype).
    Eval-mode batch norm as three NumPy ops (subtract, multiply, add, a fresh array each)
    took 1.9 ms on a 64x16x32x32 float32 batch (one core)."""
    nb, nc, nl = x3.shape
    x2 = x3.reshape(nb * nc, nl)
    y = empty_apart(x3.shape, x3.dtype, x3)
    if y.size == 0:
        return y
    y2 = y.reshape(nb * nc, nl)

    def block(_k: int, lo: int, hi: int) -> None:
        _batch_norm_infer_kernel(x2, mean, scale, bias, y2, lo, hi)

    run_blocks(block, nb * nc, n_blocks(nb * nc, x3.size))
    return y
