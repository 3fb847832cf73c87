"""ReLU's gradient in one pass: ``g`` where ``x > 0``, else exactly 0.

NumPy has no one-pass form: ``g * (x > 0).astype(dtype)`` makes three passes and two
temporaries (0.77 ms on a ResNet-20 activation of 64x16x32x32 float32, one core), and
``np.where(x > 0, g, 0)`` with a scalar took 5.2 ms; this loop takes 0.47 ms. Large inputs
run blocks of elements on several threads (:mod:`._rows`).

The loop index is unsigned: with a signed ``range(lo, hi)`` Numba wraps negative indices
at every access and LLVM vectorised the loop poorly (float32 1M elements 0.60 ms, 262k
0.144 ms, 1.5x ``np.add`` of the same arrays); unsigned, it runs as fast as ``np.add``
(0.41 and 0.092 ms, one core).

Small arrays (up to :data:`NUMPY_UP_TO` elements: an MLP's 64x256 activations) take a
NumPy path instead, exact too: the mask ``x > 0`` as integers 0 / -1 ANDed with ``g``'s
bits (three branch-free passes; ``np.where`` branches on the random mask and ran 20x
slower). At these sizes it is as fast as the kernel's call (5-7 vs 11 us for 64x256,
one core, loaded machine), and a program whose only Numba kernel would be this one (an
MLP trained eagerly) does not pay Numba's first-call set-up: LLVM's code generator,
23 MiB of memory and ~1 s, once per process.

The pass splits over threads only from :data:`SPLIT_MIN` elements: 2 threads, load ~4,
LeNet-5's 64x6x28x28 gradient took 0.049-0.057 ms on one thread against 0.057-0.065
split (1M elements: 0.32 against 0.24 min): waking the other worker costs what half of a
memory-bound pass saves.
"""

from __future__ import annotations

import numba
import numpy as np

from . import _jobs
from ._alloc import empty_apart
from ._config import JIT_SERIAL
from ._jobs import block as _block
from ._jobs import view1
from ._rows import n_blocks, run_blocks
from .vecmath import wide_vectors

__all__ = ["relu_grad", "NUMPY_UP_TO", "SPLIT_MIN"]

_JIT = {**JIT_SERIAL, "nogil": True}
#: kernels with a job (:mod:`._jobs`): inlined into its cfunc, compiled with their flags
_JIT_INLINE = {**_JIT, "inline": "always"}
#: arrays of at most this many elements take the NumPy path (see the module docstring)
NUMPY_UP_TO = 1 << 16
#: inputs of at least this many elements split over threads (see the module docstring)
SPLIT_MIN = 1 << 20
_INT_OF = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}


@numba.jit(**_JIT_INLINE)
def _relu_grad_kernel(g, x, out, lo, hi):  # pragma: no cover - compiled
    wide_vectors()
    for i in range(numba.uint64(lo), numba.uint64(hi)):
        out[i] = g[i] if x[i] > 0 else 0


@_jobs.inlining(_JIT_INLINE)
def _relu_grad_job(args, k, lo, hi):  # pragma: no cover - compiled
    """(g, x, out) float32 for :mod:`._jobs`."""
    p = _block(args)
    f = np.float32
    _relu_grad_kernel(view1(p, 0, f), view1(p, 1, f), view1(p, 2, f), lo, hi)


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
    if g.size <= NUMPY_UP_TO:
        return _relu_grad_numpy(g, x)
    out = empty_apart(g.shape, g.dtype, g, x)
    gf, xf, of = g.reshape(-1), x.reshape(-1), out.reshape(-1)
    size = gf.shape[0]
    blocks = n_blocks(size, size) if size >= SPLIT_MIN else 1
    if blocks == 1:
        _relu_grad_kernel(gf, xf, of, 0, size)
        return out
    if blocks > 1 and g.dtype == np.float32 and _jobs.available():  # workers without the GIL
        _jobs.run(_jobs.job(_relu_grad_job), _jobs.pack(gf, xf, of), size, blocks)
        return out

    def block(_k: int, lo: int, hi: int) -> None:
        _relu_grad_kernel(gf, xf, of, lo, hi)

    run_blocks(block, size, blocks)
    return out


def _relu_grad_numpy(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``where(x > 0, g, 0)`` bit for bit (+0.0 where masked, whatever g holds there)."""
    ints = _INT_OF[g.dtype]
    out = np.empty(g.shape, ints)
    np.negative((x > 0).view(np.int8), out=out, casting="unsafe")  # 0 or -1 (all bits set)
    np.bitwise_and(out, g.view(ints), out=out)
    return out.view(g.dtype)
