"""Numba kernels for softmax, log-softmax and the fused softmax cross-entropy (last axis).

Each row is reduced in two passes: its maximum, then ``sum(exp(x - max))`` accumulated in
float64, so large-magnitude rows neither overflow nor lose the small terms
(``test_activation.py::test_softmax_kernel_large_inputs``). Large inputs run in row blocks
on several threads (:mod:`._rows`, the same cached, GIL-releasing kernel per block).

Inputs are float32 or float64 (callers compute float16 in float32). Callers pass
C-contiguous arrays and move the reduced axis last.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from ._config import JIT_SERIAL
from ._rows import PARALLEL_MIN, n_blocks, run_blocks
from .vecmath import exp_as, vmax_nonan, wide_vectors

__all__ = ["softmax_lastaxis", "softmax_xent_lastaxis", "sparse_xent_mean", "sparse_xent_grad"]


@numba.jit(**JIT_SERIAL)
def _softmax_row(x, out, log):  # pragma: no cover - compiled
    n = x.shape[0]
    m = -np.inf
    for j in range(n):
        if x[j] > m:
            m = x[j]
    # all -inf rows (or rows holding +inf) give NaN, as the xp impl does
    s = 0.0
    for j in range(n):
        d = x[j] - m
        e = exp_as(d, x[j])  # float32 rows: the vectorising float32 exp
        # log: keep x - m in out, then subtract log(s) in a second pass; x - (m + log(s))
        # (which fastmath's reassociation may produce from one expression) drops log(s)
        # when |m| is huge (test_softmax_kernel_large_inputs)
        out[j] = d if log else e
        s += e
    if log:
        ls = math.log(s)
        for j in range(n):
            out[j] = out[j] - ls
    else:
        inv = 1.0 / s
        for j in range(n):
            out[j] = out[j] * inv


@numba.jit(**JIT_SERIAL, nogil=True)
def _softmax_kernel(lo, hi, x2, out2, log):  # pragma: no cover - compiled
    wide_vectors()
    for i in range(lo, hi):
        _softmax_row(x2[i], out2[i], log)


def softmax_lastaxis(x: np.ndarray, log: bool = False) -> np.ndarray:
    """Softmax (or log-softmax) of a float32/float64 array over its last axis."""
    x = np.ascontiguousarray(x)
    n = x.shape[-1] if x.ndim else 1
    x2 = x.reshape(-1, n)
    out = np.empty_like(x2)
    blocks = n_blocks(x2.shape[0], x2.size)
    if blocks == 1:  # on this thread, without run_blocks' closure (tiny inputs: ~0.3 us)
        _softmax_kernel(0, x2.shape[0], x2, out, log)
    else:
        run_blocks(lambda _, lo, hi: _softmax_kernel(lo, hi, x2, out, log), x2.shape[0], blocks)
    return out.reshape(x.shape)


def softmax_lastaxis_small(shape: tuple[int, ...], log: bool = False) -> Any:
    """:func:`softmax_lastaxis` for inputs of ``shape`` too small for threads, as a
    one-argument kernel with the row layout worked out once (the eager plan of a tiny
    softmax calls it: ~1 us less than the general function); None for other shapes."""
    size = math.prod(shape)
    if not shape or size == 0 or size >= PARALLEL_MIN:
        return None
    n = shape[-1]
    rows = size // n
    kernel = _softmax_kernel

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty((rows, n), x.dtype)
        kernel(0, rows, x.reshape(rows, n), out, log)  # (a non-contiguous x: a C copy)
        return out.reshape(shape)

    return run


@numba.jit(**JIT_SERIAL)
def _xent_kernel(x2, lab2, loss, backprop):  # pragma: no cover - compiled
    wide_vectors()
    # loss_i = sum_j lab_ij * (lse_i - x_ij); backprop = softmax - labels (MindSpore's output)
    for i in range(x2.shape[0]):
        x = x2[i]
        n = x.shape[0]
        m = -np.inf
        for j in range(n):
            if x[j] > m:
                m = x[j]
        s = 0.0
        for j in range(n):
            d = x[j] - m
            backprop[i, j] = d  # shifted logits, kept in memory as in _softmax_row
            s += exp_as(d, x[j])
        ls = math.log(s)
        acc = 0.0
        for j in range(n):
            lab = lab2[i, j]
            lsm = backprop[i, j] - ls
            if lab != 0.0:
                acc -= lab * lsm
            backprop[i, j] = math.exp(lsm) - lab
        loss[i] = acc


def softmax_xent_lastaxis(x: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(loss, softmax(x) - labels)`` over the last axis of same-shape float arrays."""
    x = np.ascontiguousarray(x)
    labels = np.ascontiguousarray(labels, dtype=x.dtype)
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    loss = np.empty(x2.shape[0], x.dtype)
    backprop = np.empty_like(x2)
    _xent_kernel(x2, labels.reshape(-1, n), loss, backprop)
    return loss.reshape(x.shape[:-1]), backprop.reshape(x.shape)


# ---- the batch-mean cross entropy of logits (N, C) and class indices (N,) ----------------
# One read of each row from memory (its maximum, then sum(exp(x - max)) in float64 with the
# row in L1), row blocks on several threads: the NumPy version made five passes over the (N, C)
# logits on one thread (max, x - max, exp, sum, the pick), 5.6 ms forward and 6.2 ms for
# the gradient of the GPT benchmark's 2048x1024 logits.


@numba.jit(**JIT_SERIAL, nogil=True)
def _sxent_rows(lo, hi, x2, idx, loss):  # pragma: no cover - compiled
    wide_vectors()
    for i in range(lo, hi):
        x = x2[i]
        n = x.shape[0]
        m = x[0]  # of x's dtype (a float64 -inf would turn the row's arithmetic float64)
        for j in range(n):
            m = vmax_nonan(m, x[j])  # a NaN anywhere makes x - m NaN there: the sum is NaN
        s = 0.0
        for j in range(n):
            s += exp_as(x[j] - m, x[j])
        # an all -inf row, or one holding +inf or NaN, gives NaN (x - m is NaN somewhere)
        loss[i] = (math.log(s) + np.float64(m)) - np.float64(x[idx[i]])


@numba.jit(**JIT_SERIAL, nogil=True)
def _sxent_grad_rows(lo, hi, x2, idx, out, inv_n):  # pragma: no cover - compiled
    wide_vectors()
    for i in range(lo, hi):
        x = x2[i]
        o = out[i]
        n = x.shape[0]
        m = x[0]
        for j in range(n):
            m = vmax_nonan(m, x[j])
        s = 0.0
        for j in range(n):
            e = exp_as(x[j] - m, x[j])
            o[j] = e
            s += e
        c = inv_n / s
        for j in range(n):
            o[j] = o[j] * c
        o[idx[i]] -= inv_n


def _rows_of(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    x = np.ascontiguousarray(x)
    idx = np.ascontiguousarray(idx)
    if idx.dtype.kind not in "iu":
        raise TypeError(
            f"sparse cross entropy: argument 'labels' expected integers, got {idx.dtype}"
        )
    if x.ndim != 2 or idx.shape != x.shape[:1]:
        raise ValueError(
            f"sparse cross entropy: expected logits (N, C) and labels (N,), got {x.shape} "
            f"and {idx.shape}"
        )
    if idx.size and (idx.min() < 0 or idx.max() >= x.shape[1]):
        bad = idx[(idx < 0) | (idx >= x.shape[1])][0]
        raise ValueError(
            f"sparse cross entropy: argument 'labels' expected class indices in "
            f"[0, {x.shape[1]}), got {int(bad)}"
        )
    return x, idx, n_blocks(x.shape[0], x.size)


def sparse_xent_mean(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``mean_i(logsumexp(x[i]) - x[i, idx[i]])`` of float32/float64 logits ``x`` (N, C) and
    class indices ``idx`` (N,), as a 0-d array of ``x``'s dtype (NaN for N = 0)."""
    x, idx, blocks = _rows_of(x, idx)
    rows = x.shape[0]
    if rows == 0:
        return np.asarray(np.nan, x.dtype)
    loss = np.empty(rows)
    if blocks == 1:
        _sxent_rows(0, rows, x, idx, loss)
    else:
        run_blocks(lambda _, lo, hi: _sxent_rows(lo, hi, x, idx, loss), rows, blocks)
    return np.asarray(loss.sum() / rows, x.dtype)


def sparse_xent_grad(x: np.ndarray, idx: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``(softmax(x) - one_hot(idx)) / N``, the gradient of :func:`sparse_xent_mean` for its
    logits; ``out`` (optional): a C-contiguous array of ``x``'s shape and dtype to write."""
    x, idx, blocks = _rows_of(x, idx)
    rows = x.shape[0]
    if out is None:
        out = np.empty_like(x)
    inv_n = 1.0 / max(rows, 1)
    if blocks == 1:
        _sxent_grad_rows(0, rows, x, idx, out, inv_n)
    else:
        run_blocks(lambda _, lo, hi: _sxent_grad_rows(lo, hi, x, idx, out, inv_n), rows, blocks)
    return out
