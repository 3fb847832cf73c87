"""ReLU's gradient in one pass: ``g`` where ``x > 0``, else exactly 0.

NumPy has no one-pass form: ``g * (x > 0).astype(dtype)`` makes three passes and two
temporaries (0.77 ms on a ResNet-20 activation of 64x16x32x32 float32, one core), and
``np.where(x > 0, g, 0)`` with a scalar took 5.2 ms; this loop takes 0.47 ms. Large inputs
run blocks of elements on several threads (:mod:`._rows`).

The loop index is unsigned: with a signed ``range(lo, hi)`` Numba wraps negative indices
at every access and LLVM vectorised the loop poorly (float32 1M elements 0.60 ms, 262k
0.144 ms, 1.5x ``np.add`` of the same arrays); unsigned, it runs as fast as ``np.add``
(0.41 and 0.092 ms, one core).
"""

from __future__ import annotations

import numba
import numpy as np

from ._alloc import empty_apart
from ._config import JIT_SERIAL
from ._rows import n_blocks, run_blocks
from .vecmath import wide_vectors

__all__ = ["relu_grad"]

_JIT = {**JIT_SERIAL, "nogil": True}


@numba.jit(**_JIT)
def _relu_grad_kernel(g, x, out, lo, hi):  # pragma: no cover - compiled
    wide_vectors()
    for i in range(numba.uint64(lo), numba.uint64(hi)):
        out[i] = g[i] if x[i] > 0 else 0


def relu_grad(g: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """``where(x > 0, g, 0)`` for C-contiguous float32/float64 ``g`` and ``x`` of one shape
    and dtype, or None when this kernel does not apply (the caller uses NumPy then)."""
    if (
        g.shape != x.shape
        or g.dtype != x.dtype
        or g.dtype not in (np.float32, np.float64)
        or not (g.flags.c_contiguous and x.flags.c_contiguous)
    ):
        return None
    out = empty_apart(g.shape, g.dtype, g, x)
    gf, xf, of = g.reshape(-1), x.reshape(-1), out.reshape(-1)
    size = gf.shape[0]

    def block(_k: int, lo: int, hi: int) -> None:
        _relu_grad_kernel(gf, xf, of, lo, hi)

    run_blocks(block, size, n_blocks(size, size))
    return out
