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
from .vecmath import exp_as, wide_vectors

__all__ = ["softmax_lastaxis", "softmax_xent_lastaxis"]


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
