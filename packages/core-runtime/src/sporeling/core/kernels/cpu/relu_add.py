"""ReLU's forward and the addition of two same-shape arrays on row blocks of several threads,
bit for bit NumPy's ``maximum(x, 0)`` and ``x + y``.

NumPy's ufuncs run on one thread: in a 2-thread ResNet-20 step the ReLU forwards (~8 ms a
step at one thread) and the residual adds (~12 ms) kept the second core idle while every
kernel around them used both. Large contiguous float32/float64 adds (from
:data:`._rows.PARALLEL_MIN` elements) run here when more than one thread is set; anything
else (one thread, small, strided, broadcast, other dtypes) returns None and the caller uses
NumPy. ReLU forwards run here from :data:`RELU_MIN` elements on any thread count: NumPy's
``maximum`` (which tests for NaN on the way) took 2.3-2.8x this loop's time on one core
(LeNet-5's 64x6x28x28 activation 107 -> 39 us, 64x16x10x10 37 -> 22 us, 1M elements 378
-> 169 us; under 32k elements the call costs what it saves); they split over threads only
from :data:`SPLIT_MIN` elements (2 threads, load ~4: 301k 0.042 ms on one thread against
0.051 split, 1M 0.19 against 0.18: waking the other worker costs what half of a
memory-bound pass saves). NumPy's ``add`` is as fast as the loop on one core (301k: 43 us
against 57), so adds keep the old rule.

Exactness: no fast-math flags (``nsz`` would let LLVM fold the select into a ``max`` that
returns ``-0.0`` where NumPy gives ``+0.0``). ``maximum(x, 0)`` is ``x`` where ``x > 0``
or ``x`` is NaN (NaN propagates, payload and sign kept) and ``+0.0`` elsewhere, including
``-0.0``; ``not (v <= 0)`` is that test in one comparison. One IEEE addition per element is
NumPy's ``add``.

``SPORELING_ROW_ELEMENTWISE=0`` turns this off (NumPy everywhere), for A/B runs.
"""

from __future__ import annotations

import os

import numba
import numpy as np

from . import _jobs
from ._alloc import empty_apart
from ._jobs import block as _block
from ._jobs import view1
from ._rows import PARALLEL_MIN, n_blocks, run_blocks
from .vecmath import wide_vectors

__all__ = ["ENABLED", "PARALLEL_MIN", "RELU_MIN", "SPLIT_MIN", "add", "relu", "applies"]

#: whether large ReLU forwards and adds may run here (``SPORELING_ROW_ELEMENTWISE``)
ENABLED = os.environ.get("SPORELING_ROW_ELEMENTWISE", "1").strip() not in ("0", "off", "false")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}  # no fastmath (see above)
#: kernels with a job (:mod:`._jobs`): inlined into its cfunc, compiled with their flags
_JIT_INLINE = {**_JIT, "inline": "always"}
#: ReLU forwards from this many elements run here, on one thread or several
RELU_MIN = 1 << 16
#: ReLU forwards from this many elements split over threads (memory-bound: below it one
#: thread finishes before a second one would help)
SPLIT_MIN = 1 << 20


@numba.jit(**_JIT_INLINE)
def _relu_kernel(x, out, zero, lo, hi):  # pragma: no cover - compiled
    wide_vectors()
    for i in range(numba.uint64(lo), numba.uint64(hi)):
        v = x[i]
        out[i] = v if not v <= zero else zero


@numba.jit(**_JIT_INLINE)
def _add_kernel(x, y, out, lo, hi):  # pragma: no cover - compiled
    wide_vectors()
    for i in range(numba.uint64(lo), numba.uint64(hi)):
        out[i] = x[i] + y[i]


@_jobs.inlining(_JIT_INLINE)
def _relu_job(args, k, lo, hi):  # pragma: no cover - compiled
    """(x, out) float32 for :mod:`._jobs`."""
    p = _block(args)
    _relu_kernel(view1(p, 0, np.float32), view1(p, 1, np.float32), np.float32(0), lo, hi)


@_jobs.inlining(_JIT_INLINE)
def _add_job(args, k, lo, hi):  # pragma: no cover - compiled
    """(x, y, out) float32 for :mod:`._jobs`."""
    p = _block(args)
    f = np.float32
    _add_kernel(view1(p, 0, f), view1(p, 1, f), view1(p, 2, f), lo, hi)


def applies(shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """Whether an input of this shape and dtype may run here (contiguity is checked per
    call): enabled, float32/float64, at least ``PARALLEL_MIN`` elements, several threads."""
    if not ENABLED or dtype not in _FLOATS:
        return False
    size = 1
    for n in shape:
        size *= n
    return size >= PARALLEL_MIN and n_blocks(size, size) > 1


def applies_relu(shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """Whether a ReLU input of this shape and dtype may run here (contiguity is checked per
    call): enabled, float32/float64, at least :data:`RELU_MIN` elements."""
    if not ENABLED or dtype not in _FLOATS:
        return False
    size = 1
    for n in shape:
        size *= n
    return size >= RELU_MIN


def relu(x: np.ndarray) -> np.ndarray | None:
    """``maximum(x, 0)`` bit for bit, on one thread or (from :data:`SPLIT_MIN` elements) on
    row blocks, or None where this does not apply."""
    if type(x) is not np.ndarray or not x.flags.c_contiguous or not applies_relu(x.shape, x.dtype):
        return None
    out = empty_apart(x.shape, x.dtype, x)
    xf, of = x.reshape(-1), out.reshape(-1)
    zero = x.dtype.type(0)

    size = xf.shape[0]
    blocks = n_blocks(size, size) if size >= SPLIT_MIN else 1
    if blocks == 1:
        _relu_kernel(xf, of, zero, 0, size)
        return out
    if x.dtype == np.float32 and _jobs.available():  # workers without the GIL
        _jobs.run(_jobs.job(_relu_job), _jobs.pack(xf, of), size, blocks)
        return out

    def block(_k: int, lo: int, hi: int) -> None:
        _relu_kernel(xf, of, zero, lo, hi)

    run_blocks(block, size, blocks)
    return out


def add(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """``x + y`` bit for bit for two C-contiguous arrays of one shape and float dtype, on row
    blocks, or None where this does not apply (broadcasting included)."""
    if (
        type(x) is not np.ndarray
        or type(y) is not np.ndarray
        or x.shape != y.shape
        or x.dtype != y.dtype
        or not (x.flags.c_contiguous and y.flags.c_contiguous)
        or not applies(x.shape, x.dtype)
    ):
        return None
    out = empty_apart(x.shape, x.dtype, x, y)
    xf, yf, of = x.reshape(-1), y.reshape(-1), out.reshape(-1)

    size = xf.shape[0]
    if x.dtype == np.float32 and _jobs.available():  # workers without the GIL
        _jobs.run(_jobs.job(_add_job), _jobs.pack(xf, yf, of), size, n_blocks(size, size))
        return out

    def block(_k: int, lo: int, hi: int) -> None:
        _add_kernel(xf, yf, of, lo, hi)

    run_blocks(block, size, n_blocks(size, size))
    return out
